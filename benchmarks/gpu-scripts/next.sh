#!/bin/bash
# Prepared for the next lease (not yet run); about 10 minutes, parts in order of worth.
# Carry .whl/ (pydantic's wheels and flatbuffers', so exported programs are kept in
# $JAX_COMPILATION_CACHE_DIR between the steps) and this script in .gpu/; run it with
# the device tool's timeout_s at 600. Since 0.21.0 NUTS can run whole chains in one
# Pallas kernel per block of 32 lanes (loop "kernel", kernels/chain_kernel.py). It has
# never been compiled by Triton: how long that takes is the first unknown, so the
# first step's limit is generous. A fresh machine compiles ~17 s a leapfrog-loop NUTS
# program (two a benchmark: ridge and logit lanes), 76-89 s for the quadrature
# driver's. bench_kernels.py prints each stage's time as it ends ("[ 22.0 s] ...") and
# rewrites its JSON after each, so a step cut short still says where it was; the
# records are tarred into $OUT/results.tgz at the end.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
R=/tmp/r; mkdir -p $R; T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
nvidia-smi -L
python3 -c "import jax, numpyro, pydantic, flatbuffers; print(jax.__version__, numpyro.__version__, jax.devices())"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --out $R"
step "NUTS 4096 fits: the chain kernel (Triton) against the leapfrog loop (0.20.0: ~1,000-1,160 fits/s inferred, 705 measured in 0.17.0)"
timeout $(left 280) python3 $N --sizes 4096 --loops kernel leapfrog 2>&1 | grep -v "^ "
step "the chain kernel at the issue's 10^5 fits (calls of 4096 fits: the programs above)"
timeout $(left 400) python3 $N --sizes 100000 --loops kernel 2>&1 | grep -v "^ "
step "the chain kernel against quadrature on the test's 212 lanes and 112 published cells (the issue's bounds)"
timeout $(left 590) python3 scripts/nuts_agreement.py --loop kernel --out $R 2>&1 | tail -25
step done
cd $R && tar czf $OUT/results.tgz . && ls -la $R
