#!/bin/bash
# Prepared for the next lease (not yet run); about 10 minutes, parts in order of worth.
# Carry .whl/ (pydantic's wheels and flatbuffers', so exported programs are kept in
# $JAX_COMPILATION_CACHE_DIR between the steps) and this script in .gpu/; run it with
# the device tool's timeout_s at 600. Each step's limit counts a fresh machine's
# compiling: ~17 s a NUTS program (two a benchmark: ridge and logit lanes), 76-89 s
# for the quadrature driver's. bench_kernels.py prints each stage's time as it ends
# ("[ 22.0 s] ...") and rewrites its JSON after each, so a step cut short still says
# where it was; the records are tarred into $OUT/results.tgz at the end.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
R=/tmp/r; mkdir -p $R; T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
nvidia-smi -L
python3 -c "import jax, numpyro, pydantic, flatbuffers; print(jax.__version__, numpyro.__version__, jax.devices())"
N="scripts/bench_kernels.py --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --out $R"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $R"
step "NUTS 4096 fits, 1 worker (the default) and 2, warmed up (0.18.0: 705 fits/s; nuts_post_mean_sum 2063.4945731304815 means the same fits)"
timeout $(left 130) python3 $N --sizes 4096 --warm-up --workers 2 2>&1 | grep -v "^ "
step "NUTS at the issue's 10^5 fits, 2 workers (programs from the step above)"
timeout $(left 330) python3 $N --sizes 100000 --workers 2 2>&1 | grep -v "^ "
step "NUTS under XLA's command buffers: the third session's profiled call (2.64 s, 159 us an iteration) again; does the while loop become one?"
XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1" \
  timeout $(left 400) python3 scripts/profile_kernels.py --fits 4096 --skip-quadrature --hlo --top 8 --out $R 2>&1 | grep -E '^\[|"(wall_s|first_call|iterations|seconds_per)'
for f in $R/*-nuts-hlo.txt.gz; do echo "$f: $(zgrep -c command_buffer $f) lines name a command buffer"; done
step "quadrature 10^5: the default plan, and 2 chunks in flight (0.17.0: 144,548/s)"
timeout $(left 540) python3 $Q --workers 2 2>&1 | grep -v "^ "
step "if time is left, quadrature 10^5: Gauss-Hermite in chunks of 16,384"
timeout $(left 590) python3 $Q --rule-chunks gauss_hermite=16384 2>&1 | grep -v "^ "
step done
cd $R && tar czf $OUT/results.tgz . && ls -la $R
