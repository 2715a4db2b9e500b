#!/bin/bash
# As run on the 2026-11-27 afternoon lease (0.28.0; 596 s on a fresh H100; its log is
# ../results/gpu-20261127-pm-first-call-log.txt). The NUTS steps ran; the quadrature
# driver at 10^5 had not compiled within its 136 s, nor with command buffers in 60 s, and
# the middle rules at 16,384 lanes printed t outermost (29 s) and hermite_t (11 s) only.
# As it was prepared:
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
# H100.
# Then the quadrature at 10^5 fits, where the nested rule takes the 21.75 % of lanes
# that Gauss-Hermite rejects, 0.20 s of the driver's 0.26 s, in 23 calls of 1024 lanes
# at 8.7 ms each (kernels-gpu-20261127-031144.json). Every other rule's H100 call cost
# about 2-4 us for each kernel it launches, whatever its lanes (1055-2930 kernels a call
# by XLA's CPU fusions: scripts/quadrature_programs.py,
# quadrature-programs-cpu-20261127-105858.json): XLA runs a loop of known trips by
# launching its body from the host, trip after trip, without waiting. So first the
# driver as it is, then with XLA's command buffers (CUDA graphs) for loops and
# conditionals, which would take those launches off the host (the NUTS leapfrog loop
# gained nothing from them on 2026-11-26, when whether XLA built them was not checked).
# Then whether the middle rules' programs compile at 16,384 lanes (in 0.24.0's lease
# they had not after 150 s; on CPU they compile in 3-11 s at 1024 or 16,384 lanes): a
# call each would take their 21.5 % of the lanes off the nested rule. Last the nested
# rule in chunks of 4096: ~4 times 8.7 ms a call if its arithmetic sets the cost
# (~10 us a kernel), about the same if its launches do.
# bench_kernels.py prints each stage's time as it ends and rewrites its JSON
# after each, so a step cut short still says where it was; the records are tarred into
# $OUT/results.tgz at the end.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R"
step "NUTS 10^5 fits, the chain kernel: calls of 4096 fits (the default) and of 16,384, then two workers"
timeout $(left 270) python3 $N --sizes 100000 --nuts-chunks 16384 --workers 2 2>&1 | grep -v "^ "
step "the kernel's draws in calls of 16,384 and 4096 fits (the programs above; the sharding must not change a number)"
timeout $(left 380) python3 scripts/nuts_call_determinism.py --fits 16384 --chunks 16384 4096 --out $R 2>&1 | grep -E '"(fits_differing|max_abs_diff|loop)"' | sort | uniq -c
step "quadrature 10^5: 0.24.0's plan, then with XLA's command buffers, then the middle rules' programs at 16,384 lanes, then the nested rule in chunks of 4096"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --quadrature-variants driver --out $R"
timeout $(left 440) python3 $Q 2>&1 | grep -v "^ "
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1"
XLA_FLAGS="$CB" JAX_COMPILATION_CACHE_DIR=/tmp/xc-cb timeout $(left 500) python3 $Q 2>&1 | grep -v "^ "
timeout $(left 560) python3 scripts/quadrature_programs.py --lanes 16384 --rules t_outer hermite_t hermite_alpha_t --out $R 2>&1 | grep -v "^ "
timeout $(left 595) python3 $Q --rule-chunks gauss_hermite=16384 nested=4096 2>&1 | grep -v "^ "
finish
