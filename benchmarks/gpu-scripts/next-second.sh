#!/bin/bash
# Prepared for the next lease (not yet run): a second call on the warm machine within
# 30 s of next.sh (whose compiled programs it finds in /tmp/xc), as long as the lease
# allows, parts in order of worth. Carry .whl/ and this script with lease.sh in .gpu/;
# run it with the device tool's timeout_s at what is left.
# 1. The quadrature at 10^5 fits, the target furthest off (389,010 of 10^6 posteriors/s
#    in the morning lease of 2026-11-27, kernels-gpu-20261127-031144.json; in the
#    afternoon lease it had not compiled in 136 s, when the benchmark also compiled the
#    nested rule at 16,384 lanes, fixed in 0.29.0): 0.24.0's plan, then with XLA's
#    command buffers (CUDA graphs) for loops and conditionals, then the nested rule in
#    chunks of 4096, then the middle rules in chunks of 16,384 (GPU-NOTES, "What a call
#    costs on the GPU").
# 2. NUTS at 10^5 fits in calls of 16,384 with two workers (4,913 fits/s with one; a
#    Triton compile of ~84 s): if it beats the default, lift nuts_chunk_size's cap of
#    4096 for the chain kernel.
. "$(dirname "$0")/lease.sh"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $R"
step "quadrature 10^5: 0.24.0's plan"
timeout $(left 100) python3 $Q 2>&1 | grep -v "^ "
step "the same with XLA's command buffers"
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1"
XLA_FLAGS="$CB" JAX_COMPILATION_CACHE_DIR=/tmp/xc-cb timeout $(left 190) python3 $Q 2>&1 | grep -v "^ "
step "the nested rule in chunks of 4096"
timeout $(left 250) python3 $Q --rule-chunks gauss_hermite=16384 nested=4096 2>&1 | grep -v "^ "
step "the middle rules in chunks of 16,384"
timeout $(left 330) python3 $Q --middle-rules on --rule-chunks t_outer=16384 hermite_t=16384 hermite_alpha_t=16384 2>&1 | grep -v "^ "
step "NUTS 10^5 fits in calls of 16,384, two workers"
timeout $(left 480) python3 scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --sizes 100000 --nuts-chunks 16384 --out $R 2>&1 | grep -v "^ "
finish
