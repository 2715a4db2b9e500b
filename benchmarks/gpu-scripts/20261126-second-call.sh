#!/bin/bash
# Second lease: NUTS calls of 16,384 fits, all chains at once or as queues on slots.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
nvidia-smi -L
date +%T
timeout 430 python3 scripts/bench_kernels.py --sizes 16384 --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --nuts-chunks 16384 --nuts-slots 16384 32768 --out $OUT 2>&1 | grep -v "^ "
date +%T
