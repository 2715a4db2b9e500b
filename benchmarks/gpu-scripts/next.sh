#!/bin/bash
# Prepared for the next lease (not yet run). About 9 minutes; parts in order of worth.
# Carry .whl/ (pydantic's wheels and flatbuffers', so exported programs are kept in
# $JAX_COMPILATION_CACHE_DIR between the steps) and this script in .gpu/.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
nvidia-smi -L
python3 -c "import jax, numpyro, pydantic, flatbuffers; print(jax.__version__, numpyro.__version__, jax.devices())"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $OUT"
step "quadrature: the default plan (1024 lanes a chunk; 0.17.0 measured 144,548/s)"
timeout $(left 170) python3 $Q --workers 1 2 4 2>&1 | grep -v "^ "
step "quadrature: Gauss-Hermite in chunks of 16,384"
timeout $(left 290) python3 $Q --rule-chunks gauss_hermite=16384 --workers 1 2 2>&1 | grep -v "^ "
step "NUTS 4096 fits: exported programs give 0.18.0's numbers? (nuts_post_mean_sum 2063.4945731304815 in -061052)"
timeout $(left 380) python3 scripts/bench_kernels.py --sizes 4096 --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --warm-up --workers 1 2 --out $OUT 2>&1 | grep -v "^ "
step "quadrature: Gauss-Hermite in chunks of 16,384, middle rules on"
timeout $(left 470) python3 $Q --rule-chunks gauss_hermite=16384 --middle-rules on 2>&1 | grep -v "^ "
step "profile: which rule the quadrature's device time is; the host's share of a NUTS call (host_summaries_s, and on every core host_summaries_in_blocks_s)"
timeout $(left 560) python3 scripts/profile_kernels.py --fits 16384 --hlo --out $OUT 2>&1 | tail -40
step "if time is left: ESS and all else the same in calls of 4096 and 1024 fits (0.20.0's vectorised ESS)"
timeout $(left 595) python3 scripts/nuts_call_determinism.py --fits 4096 --chunks 4096 1024 --out $OUT 2>&1 | tail -15
step "if time is left: the host's summaries, NumPyro fit by fit against vectorised and on every core"
timeout $(left 598) python3 scripts/bench_summaries.py --repeats 1 --out $OUT 2>&1 | tail -3
step done
ls -la $OUT
