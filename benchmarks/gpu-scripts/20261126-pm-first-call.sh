#!/bin/bash
# 2026-11-26, third lease: next.sh reordered, NUTS first (the 0.20.0 question), then
# NUTS at the 10^5 fits, then the quadrature plans, then whether XLA turns
# NUTS's while loop into a command buffer. Sizes from the environment for a CPU dry run.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
NF=${NF:-4096} NB=${NB:-100000} QF=${QF:-100000} PF=${PF:-16384} R=/tmp/r
mkdir -p $R
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
nvidia-smi -L
python3 -c "import jax, numpyro, pydantic, flatbuffers; print(jax.__version__, numpyro.__version__, jax.devices())"
N="scripts/bench_kernels.py --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --out $R"
Q="scripts/bench_kernels.py --sizes $QF --quadrature-only --quadrature-variants driver --out $R"
step "NUTS $NF fits, 1 and 2 workers (0.18.0: 705 fits/s; nuts_post_mean_sum 2063.4945731304815)"
timeout $(left 100) python3 $N --sizes $NF --warm-up --workers 1 2 2>&1 | grep -v "^ "
step "profile: host_summaries_s against host_summaries_in_blocks_s; quadrature rule kernels"
timeout $(left 140) python3 scripts/profile_kernels.py --fits $PF --hlo --out $R 2>&1 | grep -v "^ "
step "NUTS $NB fits, 2 workers (the issue's batch)"
timeout $(left 280) python3 $N --sizes $NB --workers 2 2>&1 | grep -v "^ "
step "quadrature $QF: the default plan, 1 2 4 workers (0.17.0: 144,548/s)"
timeout $(left 380) python3 $Q --workers 1 2 4 2>&1 | grep -v "^ "
step "quadrature: Gauss-Hermite in chunks of 16,384"
timeout $(left 460) python3 $Q --rule-chunks gauss_hermite=16384 --workers 1 2 2>&1 | grep -v "^ "
step "NUTS call determinism 4096 vs 1024 (vectorised ESS)"
timeout $(left 510) python3 scripts/nuts_call_determinism.py --fits $NF --chunks $NF 1024 --out $R 2>&1 | tail -6
step "host summaries: NumPyro fit by fit, vectorised, every core"
timeout $(left 530) python3 scripts/bench_summaries.py --repeats 1 --out $R 2>&1 | tail -3
step "command buffers: does the NUTS while loop become one?"
mkdir -p /tmp/cb
XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1" \
  timeout $(left 560) python3 scripts/profile_kernels.py --fits 1024 --hlo --skip-quadrature --out /tmp/cb 2>&1 | grep -E "iteration|device_s|wall" | head
for f in /tmp/cb/*nuts-hlo.txt.gz; do echo "$f: command_buffer $(zgrep -c command_buffer $f) while $(zgrep -c ' while(' $f)"; zgrep -m3 command_buffer $f | cut -c1-200; done
step done
cd $R && tar czf $OUT/results.tgz . && ls -la $R $OUT
