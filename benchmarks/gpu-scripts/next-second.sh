#!/bin/bash
# Prepared for the next lease (0.30.0; not yet run): a second call on the warm machine
# within 30 s of next.sh (whose compiled programs it finds in /tmp/xc), as long as the
# lease allows, parts in order of worth. Carry .whl/ and this script with lease.sh in
# .gpu/; run it with the device tool's timeout_s at what is left.
# 1. The legacy grid end to end (scripts/bench_sweep.py: 158,400 configurations in 39
#    shards of 4096, NUTS for the 140,800 with N_M > 0, two Parquet files a shard), one
#    shard at a time and with one begun ahead (0.29.0's default on an accelerator, not
#    yet timed there; if it does not pay, set sweep.runners.ACCELERATOR_SHARDS_AHEAD to
#    0). A shard's NUTS calls are one of ~440 fits and one of ~3,200, so two workers
#    overlap little within a shard. Triton compiles the kernel for the calls of 512 and
#    256 fits there (~80 s each; 4096's are in the cache from next.sh).
# 2. NUTS at 10^5 fits in calls of 16,384 with two workers (4,913 fits/s with one; a
#    Triton compile of ~84 s): if it beats the default, lift nuts_chunk_size's cap of
#    4096 for the chain kernel.
set -o pipefail
. "$(dirname "$0")/lease.sh"
SIZE=${SIZE:-100000}
step "the legacy grid end to end: one shard at a time, then one begun ahead"
timeout $(left 300) python3 scripts/bench_sweep.py configs/legacy-grid.yaml --ahead 0 1 --repeats 1 --out $R 2>&1 | grep -v "^ "
step "NUTS 10^5 fits in calls of 16,384, two workers"
timeout $(left 595) python3 scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --sizes $SIZE --nuts-chunks 16384 --out $R 2>&1 | grep -v "^ "
finish
