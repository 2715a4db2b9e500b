#!/bin/bash
# Prepared for the next lease (0.32.0; not yet run): about 10 minutes on a fresh
# machine, parts in order of worth. Carry .whl/ (pydantic's wheels and flatbuffers')
# and this script with lease.sh in .gpu/; run it with the device tool's timeout_s at 600.
# 1. The quadrature at 10^5 fits, the target furthest off (389,010 of 10^6 posteriors/s,
#    kernels-gpu-20261127-031144.json, where the nested rule took 0.20 s of the driver's
#    0.26 s in 23 calls of 1024 lanes at 8.7 ms). In the 2026-11-27 evening lease
#    (0.29.0) its programs took 214 s to compile, 173 s of it one reduction fusion,
#    by the compile order in the nested rule's exact-s program; 0.30.0 puts back the
#    binary search that 0.24.0's code, compiled in 25 s, had (GPU-NOTES). So first
#    0.30.0's plan: its compile stage says whether that was the cause. If it does not
#    finish, each nested program is compiled alone, to say which one is slow, and
#    its HLO dumped. Else the middle rules on, in chunks sized to the lanes each
#    gets (the (alpha, t) rule's at 1024, then 8192), then larger chunks for the
#    nested rule and Gauss-Hermite. 0.31.0's nested, t and t-outermost rules search
#    both interval ends in one loop (a third fewer kernels a call on CPU, the same
#    bits there): quadrature_programs.py counts the nested rule's on the GPU (0.29.0's:
#    532 kernels, 64 trips), and the first step's rule_costs_one_worker times its calls
#    (8.7 ms a call of 1024 in the morning lease of 2026-11-27, 9.8 in the evening's).
#    Since 0.32.0 each rule on a GPU waits for all its lanes (fit_lanes' gather_rules):
#    fewer calls, the same programs; every record times the other schedule (passes)
#    beside it (quadrature_other_schedule, with same_numbers).
#    Each plan runs in its own process, so that one which does not
#    compile in time costs only its step; the programs they share come from the
#    persistent cache. Each record carries quadrature_digest: equal digests, the same
#    bits (a plan whose bits differ needs a NUMBERS_VERSION bump to become the default).
# 2. NUTS at 10^5 fits with 0.29.0's default (two workers, calls of 4096) and with one
#    worker, whose fits must be the default's (by_workers' nuts_fits_differing: 0).
#    Triton compiles the kernel's two programs in ~80 s on a fresh machine.
# next-second.sh has the legacy grid end to end and NUTS in calls of 16,384.
# SIZE (default 10^5) lets the script be dry-run on CPU.
set -o pipefail
. "$(dirname "$0")/lease.sh"
SIZE=${SIZE:-100000}
Q="scripts/bench_kernels.py --sizes $SIZE --quadrature-only --quadrature-variants driver --out $R"
step "quadrature: the default plan (Gauss-Hermite in chunks of 16,384, the rest 1024), then two workers"
if ! timeout $(left 150) python3 $Q --workers 2 2>&1 | grep -v "^ "; then
  # Each compiled afresh (their own cache) with its optimised HLO dumped into the
  # records, so that the slow kernel can be read here.
  step "the driver did not finish: the nested rule's two programs compiled one by one"
  XLA_FLAGS="--xla_dump_to=$R/xla --xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*nested.*" \
    JAX_COMPILATION_CACHE_DIR=/tmp/xc-dump timeout $(left 330) python3 scripts/quadrature_programs.py \
    --lanes 1024 --out $R --rules nested_exact_s nested 2>&1 | grep -v "^ "
  find $R/xla -type f ! -name "*nested*_after_optimizations.txt" -delete  # ~2.5 MB each
else
  step "the nested rule's programs at 1024 lanes, counted (compiled again unless the cache holds them)"
  timeout $(left 190) python3 scripts/quadrature_programs.py --lanes 1024 --out $R --rules nested nested_exact_s 2>&1 | grep -v "^ "
  # With the middle rules, 10^5 of the benchmark's lanes make (on CPU, the same
  # routing), gathered: Gauss-Hermite 6 calls of 16,384, (alpha, t) 7313 lanes,
  # t outermost 1 call of 14,435, Gauss-Hermite t 2 of 2337 and 161, the nested rule
  # 2 of 146 and 86 (in passes: (alpha, t) 5333 + 1980, t 3 calls, nested 5).
  # Every call is padded to its rule's chunk, so the nested rule's few lanes get small
  # chunks: in 1024 (0.23.0, every rule in 1024) its 5 calls took 60 ms for 232 lanes.
  # The (alpha, t) rule's program did not finish compiling at 16,384 lanes (2026-11-27
  # afternoon), nor the plan with it at 8192 in 150 s (morning, -031225.json); at 1024 it
  # did (the whole plan 62 s). So first with it at 1024, then at 8192 (the rest cached).
  step "the middle rules on: (alpha, t) in chunks of 1024, t outermost 16,384, t 4096, nested 256"
  timeout $(left 250) python3 $Q --middle-rules on --rule-chunks hermite_alpha_t=1024 t_outer=16384 hermite_t=4096 nested=256 2>&1 | grep -v "^ "
  step "the same with (alpha, t) in chunks of 8192"
  timeout $(left 310) python3 $Q --middle-rules on --rule-chunks hermite_alpha_t=8192 t_outer=16384 hermite_t=4096 nested=256 2>&1 | grep -v "^ "
  # Gauss-Hermite's 6 calls (5.3 ms each at 16,384 lanes in the morning lease) would be
  # the plan's largest part: in chunks of 32,768, 3 calls.
  step "the same with Gauss-Hermite in chunks of 32,768"
  timeout $(left 350) python3 $Q --middle-rules on --rule-chunks gauss_hermite=32768 hermite_alpha_t=8192 t_outer=16384 hermite_t=4096 nested=256 2>&1 | grep -v "^ "
  step "without the middle rules: the nested rule in chunks of 4096"
  timeout $(left 390) python3 $Q --rule-chunks nested=4096 2>&1 | grep -v "^ "
fi
step "NUTS 10^5 fits, the chain kernel: the default (two workers, calls of 4096), then one worker"
timeout $(left 595) python3 scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R --sizes $SIZE --workers 1 2>&1 | grep -v "^ "
finish
