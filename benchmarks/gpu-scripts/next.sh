#!/bin/bash
# Prepared for the next lease (not yet run); about 10 minutes, parts in order of worth.
# Carry .whl/ (pydantic's wheels and flatbuffers') and this script with lease.sh in
# .gpu/; run it with the device tool's timeout_s at 600. Since 0.24.0 NUTS runs the
# chain kernel on a GPU (loop "auto"), which on 2026-11-27 ran 10^5 fits at 4,005
# fits/s (kernels-gpu-20261127-030352.json) in calls of at most 4096 fits, one worker:
# about 0.96 s a call. A call of 3850 fits is ~480 blocks of 32 chains, one warp each,
# on 132 SMs, so larger calls may cost little more than small ones; the cap of 4096
# (sweep.fits.nuts_chunk_size) was set for the leapfrog loop's determinism, and a
# kernel chain's arithmetic is its own lane's. With one worker the host's summaries of
# a call (0.39 s for 3075 fits in 0.20.0's profile) do not overlap the next call.
# Triton compiled the kernel's two programs (logit and ridge lanes) in 79 s on a fresh
# H100. Then the quadrature at 10^5 fits, where the nested rule takes the 21.75 % of lanes
# that Gauss-Hermite rejects, 0.20 s of the driver's 0.26 s, in 23 calls of 1024 lanes at
# 8.7 ms each (kernels-gpu-20261127-031144.json). On an accelerator a chunk is computed
# whole, padding and all, so a call of ~46 lanes (12 ms) computed 1024 too: whether a
# call costs its lanes (arithmetic, bytes: ~36 MB a lane accessed by XLA's count on CPU)
# or its loops' trips (64 a call, each a host round trip on a GPU) is open. Chunks of
# 4096 say which: ~4 times 8.7 ms a call, or about the same. Then every rule with XLA's
# command buffers for loops and conditionals, which would take the loops' round trips
# off the host (scripts/quadrature_programs.py: Gauss-Hermite 49 trips and a Newton loop
# a call, the (alpha, t) rule 145, t outermost 48, the middle rule 128; the NUTS leapfrog
# loop gained nothing from them on 2026-11-26, when whether XLA built them was not checked).
# bench_kernels.py prints each stage's time as it ends and rewrites its JSON
# after each, so a step cut short still says where it was; the records are tarred into
# $OUT/results.tgz at the end.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R"
step "NUTS 10^5 fits, the chain kernel: calls of 4096 fits (the default) and of 16,384, then two workers"
timeout $(left 270) python3 $N --sizes 100000 --nuts-chunks 16384 --workers 2 2>&1 | grep -v "^ "
step "the kernel's draws in calls of 16,384 and 4096 fits (the programs above; the sharding must not change a number)"
timeout $(left 380) python3 scripts/nuts_call_determinism.py --fits 16384 --chunks 16384 4096 --out $R 2>&1 | grep -E '"(fits_differing|max_abs_diff|loop)"' | sort | uniq -c
step "quadrature 10^5: the nested rule in chunks of 4096, then 0.24.0's 1024 beside it, then with XLA's command buffers for loops"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $R"
timeout $(left 500) python3 $Q --rule-chunks gauss_hermite=16384 nested=4096 2>&1 | grep -v "^ "
timeout $(left 560) python3 $Q 2>&1 | grep -v "^ "
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1"
XLA_FLAGS="$CB" JAX_COMPILATION_CACHE_DIR=/tmp/xc-cb timeout $(left 595) python3 $Q 2>&1 | grep -v "^ "
finish
