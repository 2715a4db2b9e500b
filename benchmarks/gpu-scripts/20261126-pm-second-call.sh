#!/bin/bash
# 2026-11-26, fourth call (the lease's last ~240 s): the third call's steps all ran past
# their limits (compiling on a fresh machine); only the NUTS question, with room.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
R=/tmp/r; mkdir -p $R; T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
step "NUTS 4096 fits, default (1 worker) and 2 workers, each warmed up"
timeout $(left 165) python3 scripts/bench_kernels.py --sizes 4096 --nuts-only --loops leapfrog --lockstep 0 --baseline 0 --warm-up --workers 2 --out $R 2>&1 | grep -v "^ "
step "profile of one 4096-fit NUTS call: device against host summaries"
timeout $(left 228) python3 scripts/profile_kernels.py --fits 4096 --skip-quadrature --top 8 --out $R 2>&1 | grep -E '"(host_|wall_s|first_call|iterations|most_leap|mean_leap|seconds_per)' | head -20
step done
cd $R && tar czf $OUT/results.tgz .
