#!/bin/bash
# Prepared for the next lease (not yet run): a second call on the warm machine right
# after next.sh (whose compiled programs it finds in /tmp/xc), as long as the lease
# allows; parts in order of worth. Carry .whl/ and this script with lease.sh in .gpu/;
# run it with the device tool's timeout_s at what is left.
# 1. A candidate change beside main: benchmarks/candidates/logspace-derivatives.patch
#    (the densities' derivatives from the exponentials their values hold; see
#    candidates/README.md), applied to a copy of the tree; the chain kernel at 16,384
#    fits in main, in the candidate (two more Triton compiles, ~80 s) and in main again.
# 2. The middle quadrature rules beside 0.24.0's Gauss-Hermite chunks (without each,
#    without any, t outermost alone, the nested rule alone: --quadrature-variants all),
#    then in chunks of their own larger than 1024. In chunks of 1024, beside
#    Gauss-Hermite's old chunks, they cost more than they saved (-031014.json); in
#    chunks of 16,384 and 8192 their programs had not compiled after 150 s
#    (-031225.json).
# 3. What each quadrature rule's program is made of as the GPU compiles it: its loops'
#    trips, XLA's cost analysis a lane, its scratch (scripts/quadrature_programs.py).
# 4. The kernel's blocks: 64 chains with 2 warps, then 16 chains with 1.
. "$(dirname "$0")/lease.sh"
step "candidate: the densities' derivatives of benchmarks/candidates/logspace-derivatives.patch, the kernel at 16,384 fits, main before and after it"
P=$PWD/benchmarks/candidates/logspace-derivatives.patch V=/tmp/candidate
rm -rf $V; mkdir -p $V; cp -r kernels sweep scripts tests $V/
A="--nuts-only --lockstep 0 --baseline 0 --loops kernel --sizes 16384"
timeout $(left 40) python3 scripts/bench_kernels.py $A --out $R/ab-main-before 2>&1 | grep -v "^ "
if (cd $V && { patch -s -p1 < "$P" || git apply "$P"; }); then
  (cd $V && PYTHONPATH=/tmp/site:$V timeout $(left 170) python3 scripts/bench_kernels.py $A --out $R/ab-candidate 2>&1 | grep -v "^ ")
  timeout $(left 200) python3 scripts/bench_kernels.py $A --out $R/ab-main-after 2>&1 | grep -v "^ "
else echo "the candidate's patch did not apply (neither patch nor git apply)"; fi
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --middle-rules on --out $R"
step "quadrature 10^5: the middle rules and their variants, in 0.24.0's chunks"
timeout $(left 380) python3 $Q --quadrature-variants all 2>&1 | grep -v "^ "
step "quadrature 10^5: the middle rules, t outermost and (alpha, t) in chunks of 4096, the middle rule 2048"
timeout $(left 520) python3 $Q --quadrature-variants driver --rule-chunks t_outer=4096 hermite_alpha_t=4096 hermite_t=2048 2>&1 | grep -v "^ "
step "each quadrature rule's program on the GPU: loops, costs and scratch a lane"
timeout $(left 590) python3 scripts/quadrature_programs.py --lanes 1024 --out $R 2>&1 | grep -v "^ "
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R"
step "the kernel's blocks: 64 chains with 2 warps, then 16 chains with 1 (32 and 1 are the defaults)"
timeout $(left 595) python3 $N --sizes 4096 --kernel-blocks 64 --kernel-warps 2 2>&1 | grep -v "^ "
timeout $(left 595) python3 $N --sizes 4096 --kernel-blocks 16 --kernel-warps 1 2>&1 | grep -v "^ "
finish
