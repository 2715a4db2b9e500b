#!/bin/bash
# The 2026-11-27 evening lease's second call, on the warm machine within 30 s of the
# first, as long as the lease allows: NUTS at 10^5 fits with 0.29.0's default (two
# workers, calls of 4096) and with one worker, whose fits must be the default's
# (by_workers' nuts_fits_differing: 0). Triton compiles the kernel's two programs in
# ~80 s on a fresh machine. Then the legacy grid end to end (scripts/bench_sweep.py)
# one shard at a time and with one begun ahead, if time is left.
set -o pipefail
. "$(dirname "$0")/lease.sh"
SIZE=${SIZE:-100000}
step "NUTS: the default (two workers, calls of 4096), then one worker"
timeout $(left 150) python3 scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R --sizes $SIZE --workers 1 2>&1 | grep -v "^ "
step "the legacy grid end to end: one shard at a time, then one begun ahead"
timeout $(left 595) python3 scripts/bench_sweep.py configs/legacy-grid.yaml --ahead 0 1 --repeats 1 --out $R 2>&1 | grep -v "^ "
finish
