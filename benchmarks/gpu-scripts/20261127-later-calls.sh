#!/bin/bash
# 2026-11-27, the lease's second, third and fourth calls, each a command of its own on
# the same warm H100 after next.sh (the first call, 511 s) had run. With ~6 minutes of
# device time left, next-quadrature.sh's steps as far as they fit: its first step (83 s),
# then Gauss-Hermite in chunks of 16,384 without the middle rules (33 s), then with them
# and their own larger chunks, which was still compiling at its 150 s limit.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --out $OUT"
# second call (timeout_s 265)
timeout 250 python3 $Q --quadrature-variants all --middle-rules on 2>&1 | grep -v "^ " | tee $OUT/qlog.txt
# third call (timeout_s 150)
timeout 140 python3 $Q --quadrature-variants driver --rule-chunks gauss_hermite=16384 2>&1 | grep -v "^ " | tee $OUT/qlog2.txt
# fourth call (timeout_s 165)
timeout 150 python3 $Q --quadrature-variants driver --middle-rules on \
  --rule-chunks gauss_hermite=16384 hermite_alpha_t=8192 t_outer=16384 hermite_t=4096 2>&1 | grep -v "^ " | tee $OUT/qlog3.txt
