#!/bin/bash
# Prepared for the next lease (not yet run); about 10 minutes, parts in order of worth.
# Carry .whl/ (pydantic's wheels and flatbuffers') and this script with lease.sh in
# .gpu/; run it with the device tool's timeout_s at 600.
# Since 0.29.0 NUTS on a GPU runs two calls at once (sweep.fits.ACCELERATOR_NUTS_WORKERS):
# on 2026-11-27 afternoon 10^5 fits ran at 5,991-6,177 fits/s with two workers against
# 3,617-3,737 with one, in calls of 4096 fits, and calls of 16,384 at 4,913 with one
# (kernels-gpu-20261127-145126.json). So first the default (two workers), then one
# worker, whose fits must be the default's (by_workers' nuts_fits_differing: 0). Triton
# compiles the kernel's two programs in ~80 s for each call size on a fresh machine.
# Last, calls of 16,384 with two workers (by_chunk runs with the default workers), if
# time is left (next-second.sh has them too).
# Then the legacy grid end to end (scripts/bench_sweep.py: 158,400 configurations in 39
# shards of 4096, NUTS for the 140,800 with N_M > 0, two Parquet files a shard), one shard
# at a time and with one begun ahead (0.29.0's default on an accelerator, not yet timed
# there): a shard's NUTS calls are one of ~440 fits and one of ~3,200, so two workers
# overlap little within a shard, and without a shard ahead the device waits for the
# last call's summaries and the shard's write. Triton compiles the kernel for the calls
# of 512 and 256 fits there (~80 s each; 4096's are in the cache from the first step).
# The quadrature steps are in next-second.sh.
# bench_kernels.py prints each stage's time as it ends and rewrites its JSON after
# each, so a step cut short still says where it was; the records are tarred into
# $OUT/results.tgz at the end.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --out $R"
step "NUTS 10^5 fits, the chain kernel: the default (two workers, calls of 4096), then one worker"
timeout $(left 180) python3 $N --sizes 100000 --workers 1 2>&1 | grep -v "^ "
step "the legacy grid end to end: one shard at a time, then one begun ahead"
timeout $(left 460) python3 scripts/bench_sweep.py configs/legacy-grid.yaml --ahead 0 1 --repeats 1 --out $R 2>&1 | grep -v "^ "
step "NUTS 10^5 fits in calls of 16,384, two workers"
timeout $(left 595) python3 $N --sizes 100000 --nuts-chunks 16384 2>&1 | grep -v "^ "
finish
