#!/bin/bash
# Prepared for the next lease (not yet run); about 10 minutes, parts in order of worth.
# Carry .whl/ (pydantic's wheels and flatbuffers') and this script with lease.sh in
# .gpu/; run it with the device tool's timeout_s at 600.
# Since 0.29.0 NUTS on a GPU runs two calls at once (sweep.fits.ACCELERATOR_NUTS_WORKERS):
# on 2026-11-27 afternoon 10^5 fits ran at 5,991-6,177 fits/s with two workers against
# 3,617-3,737 with one, in calls of 4096 fits, and calls of 16,384 at 4,913 with one
# (kernels-gpu-20261127-145126.json). So first the default (two workers), then calls of
# 16,384 with two workers (by_chunk runs with the default workers), then one worker,
# whose fits must be the default's (by_workers' nuts_fits_differing: 0). Triton
# compiles the kernel's two programs in ~80 s for each call size on a fresh machine.
# Then the quadrature at 10^5 fits, which on that lease had not compiled in 136 s: the
# benchmark compiled the nested rule at the Gauss-Hermite chunk's 16,384 lanes, a program
# that never runs (fixed in 0.29.0: each fallback at its own chunk size). In the morning
# lease (0.23.0) the same plan compiled in 25 s and ran at 389,010 posteriors/s
# (kernels-gpu-20261127-031144.json). Then the same with XLA's command buffers (CUDA
# graphs) for loops and conditionals, then the middle rules in chunks of 16,384 (their
# programs: t outermost compiled in 29 s at 16,384 lanes, the middle rule in 11 s; the
# (alpha, t) rule had not after ~30 s), then the nested rule in chunks of 4096.
# bench_kernels.py prints each stage's time as it ends and rewrites its JSON after
# each, so a step cut short still says where it was; the records are tarred into
# $OUT/results.tgz at the end.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R"
step "NUTS 10^5 fits, the chain kernel: the default (two workers, calls of 4096), calls of 16,384 with two workers, then one worker"
timeout $(left 260) python3 $N --sizes 100000 --nuts-chunks 16384 --workers 1 2>&1 | grep -v "^ "
step "quadrature 10^5: 0.24.0's plan, then with XLA's command buffers, then the middle rules in chunks of 16,384, then the nested rule in chunks of 4096"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $R"
timeout $(left 380) python3 $Q 2>&1 | grep -v "^ "
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1"
XLA_FLAGS="$CB" JAX_COMPILATION_CACHE_DIR=/tmp/xc-cb timeout $(left 460) python3 $Q 2>&1 | grep -v "^ "
timeout $(left 540) python3 $Q --middle-rules on --rule-chunks t_outer=16384 hermite_t=16384 hermite_alpha_t=16384 2>&1 | grep -v "^ "
timeout $(left 595) python3 $Q --rule-chunks gauss_hermite=16384 nested=4096 2>&1 | grep -v "^ "
finish
