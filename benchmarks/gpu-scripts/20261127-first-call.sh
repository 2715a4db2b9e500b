#!/bin/bash
# 2026-11-27, the first call of the lease (511 s on a fresh H100; as prepared, "next.sh"):
# Carry .whl/ (pydantic's wheels and flatbuffers') and this script with lease.sh in
# .gpu/; run it with the device tool's timeout_s at 600. Since 0.21.0 NUTS can run
# whole chains in one Pallas kernel per block of 32 lanes (loop "kernel",
# kernels/chain_kernel.py). It has never been compiled by Triton: how long that takes
# is the first unknown, so the first step's limit is generous. A fresh machine
# compiles ~17 s a leapfrog-loop NUTS program (two a benchmark: ridge and logit
# lanes). bench_kernels.py prints each stage's time as it ends ("[ 22.0 s] ...") and
# rewrites its JSON after each, so a step cut short still says where it was; the
# records are tarred into $OUT/results.tgz at the end.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --out $R"
step "NUTS 4096 fits: the chain kernel (Triton) against the leapfrog loop (0.20.0: ~1,000-1,160 fits/s inferred, 705 measured in 0.17.0)"
timeout $(left 280) python3 $N --sizes 4096 --loops kernel leapfrog 2>&1 | grep -v "^ "
step "the chain kernel at the issue's 10^5 fits (calls of 4096 fits: the programs above)"
timeout $(left 400) python3 $N --sizes 100000 --loops kernel 2>&1 | grep -v "^ "
step "the chain kernel against quadrature on the test's 212 lanes and 112 published cells (the issue's bounds)"
timeout $(left 590) python3 scripts/nuts_agreement.py --loop kernel --out $R 2>&1 | tail -25
# If a step above stopped early (the kernel failing to compile, say), the time left goes
# to next-quadrature.sh's first step; its JSON is rewritten after each variant.
if [ "$(left 590)" -gt 150 ]; then
  step "quadrature 10^5 with the time left: the middle rules against the default plan"
  timeout $(left 590) python3 scripts/bench_kernels.py --sizes 100000 --quadrature-only --out $R \
    --quadrature-variants all --middle-rules on 2>&1 | grep -v "^ "
fi
finish
