#!/bin/bash
# The 2026-11-27 evening lease's second call (0.29.0), as run on the warm machine with
# the 404 s the lease had left (the device tool's timeout_s at 370): the quadrature with
# XLA's command buffers and the nested rule in chunks of 4096 (its Gauss-Hermite programs
# in the command-buffer cache from the first call), then NUTS with two workers against
# one. The first step met the same three-minute kernel at its limit; the budget ran out
# in the second's Triton compile. Typed as one line into the device tool; here spread out.
set -o pipefail
. .gpu/lease.sh
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1"
step "CB, nested 4096"
XLA_FLAGS="$CB" JAX_COMPILATION_CACHE_DIR=/tmp/xc-cb timeout $(left 215) python3 scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $R --rule-chunks nested=4096 2>&1 | grep -v "^ " | tee $OUT/log.txt
step "NUTS default vs 1 worker"
timeout $(left 355) python3 scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R --sizes 100000 --workers 1 2>&1 | grep -v "^ " | tee -a $OUT/log.txt
finish
