#!/bin/bash
# The 2026-11-27 afternoon lease's two later calls on the warm machine, right after
# 20261127-pm-first-call.sh (each with the device tool's timeout_s at 190 and 130), run as
#   set -o pipefail; bash -c '. .gpu/lease.sh; ...; finish' 2>&1 | tee $OUT/log2.txt
# NUTS at 10^5 fits with the chain kernel in calls of 4096, one worker, then 2 and 3
# workers (72 s), then 4 and 2 (72 s); logs in ../results/gpu-20261127-pm-later-calls-log.txt.
. "$(dirname "$0")/lease.sh"
N="scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 --loops kernel --sizes 100000 --out $R"
timeout 170 python3 $N --workers 2 3 2>&1 | grep -v "^ "
timeout 110 python3 $N --workers 4 2 2>&1 | grep -v "^ "
finish
