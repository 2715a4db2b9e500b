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
# H100. bench_kernels.py prints each stage's time as it ends and rewrites its JSON
# after each, so a step cut short still says where it was; the records are tarred into
# $OUT/results.tgz at the end.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R"
step "NUTS 10^5 fits, the chain kernel: calls of 4096 fits (the default) and of 16,384, then two workers"
timeout $(left 270) python3 $N --sizes 100000 --nuts-chunks 16384 --workers 2 2>&1 | grep -v "^ "
step "the kernel's draws in calls of 16,384 and 4096 fits (the programs above; the sharding must not change a number)"
timeout $(left 380) python3 scripts/nuts_call_determinism.py --fits 16384 --chunks 16384 4096 --out $R 2>&1 | grep -E '"(fits_differing|max_abs_diff|loop)"' | sort | uniq -c
step "candidate: the densities' derivatives of benchmarks/candidates/logspace-derivatives.patch, the kernel at 16,384 fits, main before and after it"
P=$PWD/benchmarks/candidates/logspace-derivatives.patch V=/tmp/candidate
rm -rf $V; mkdir -p $V; cp -r kernels sweep scripts tests $V/
A="--nuts-only --lockstep 0 --baseline 0 --loops kernel --sizes 16384"
timeout $(left 420) python3 scripts/bench_kernels.py $A --out $R/ab-main-before 2>&1 | grep -v "^ "
if (cd $V && { patch -s -p1 < "$P" || git apply "$P"; }); then
  (cd $V && PYTHONPATH=/tmp/site:$V timeout $(left 540) python3 scripts/bench_kernels.py $A --out $R/ab-candidate 2>&1 | grep -v "^ ")
  timeout $(left 570) python3 scripts/bench_kernels.py $A --out $R/ab-main-after 2>&1 | grep -v "^ "
else echo "the candidate's patch did not apply (neither patch nor git apply)"; fi
step "the kernel's blocks: 64 chains with 2 warps, then 16 chains with 1 (32 and 1 are the defaults)"
timeout $(left 585) python3 $N --sizes 4096 --kernel-blocks 64 --kernel-warps 2 2>&1 | grep -v "^ "
timeout $(left 595) python3 $N --sizes 4096 --kernel-blocks 16 --kernel-warps 1 2>&1 | grep -v "^ "
finish
