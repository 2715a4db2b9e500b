#!/bin/bash
# One lease: NUTS unroll, quadrature driver, profile, command buffers.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
nvidia-smi -L
python3 -c "import jax, numpyro, pydantic; print(jax.__version__, numpyro.__version__, jax.devices())"
step nuts-unroll
timeout $(left 260) python3 scripts/bench_kernels.py --sizes 4096 --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --warm-up --nuts-unroll 4 --out $OUT 2>&1 | grep -v "^ " 
step quadrature
timeout $(left 380) python3 scripts/bench_kernels.py --sizes 10000 100000 --quadrature-only --quadrature-variants driver --out $OUT 2>&1 | grep -v "^ "
step profile
timeout $(left 480) python3 scripts/profile_kernels.py --fits 16384 --hlo --out $OUT 2>&1 | tail -40
step command-buffer
XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1" \
  timeout $(left 575) python3 scripts/bench_kernels.py --sizes 4096 --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --warm-up --out $OUT 2>&1 | grep -v "^ " | tail -20
step done
ls -la $OUT
