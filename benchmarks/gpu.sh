#!/bin/bash
# The GPU benchmark, run on a lent accelerator machine with the device tool:
#   run(command="bash benchmarks/gpu.sh", carry=[".whl"], timeout_s=600)
# .whl/ holds the wheels the device image lacks (pydantic, pydantic_core,
# annotated_types, typing_inspection, flatbuffers; how to download them: the
# device tool's README). Records land in $OUT (bench_kernels.py's JSON); commit
# them under benchmarks/results/ and update docs/performance.md and the README's table.
#
# 1. Quadrature at SIZE lanes with the default plan (two workers), then one worker.
# 2. NUTS at SIZE lanes with the chain kernel: the default (two workers), then one worker.
# Either's one-worker fits must be the default's bit for bit.
# 3. sweep compare: 100 x 10,000, 1,000 x 50 and 1,000 x 1,000 ratings, both rate models,
#    cold and warm (bench_compare.py).
# 4. The legacy grid by quadrature end to end, cold then warm, with where its time goes
#    (bench_sweep.py; also the quick start and the first sweep compare, cold).
# SIZE (default 10^5) and SWEEP (default the legacy grid) let the script be dry-run on a CPU.
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
SITE=/tmp/binmetric-site
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl || exit 1
fi
# The package under its namespace without a build step (the image has no setuptools >= 77):
# binmetric_sweep/{sweep,kernels} as links to this checkout's folders.
mkdir -p "$SITE/binmetric_sweep"
ln -sfn "$PWD/sweep" "$SITE/binmetric_sweep/sweep"
ln -sfn "$PWD/kernels" "$SITE/binmetric_sweep/kernels"
export PYTHONPATH="$SITE" JAX_COMPILATION_CACHE_DIR=/tmp/binmetric-xla
R=${OUT:-/tmp/binmetric-gpu-results}; mkdir -p "$R"
SIZE=${SIZE:-100000}
SWEEP=${SWEEP:-configs/legacy-grid.yaml}
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== +$(( $(date +%s) - T0 ))s: $*"; }
nvidia-smi -L 2>/dev/null
python3 -c "import jax, numpyro, pydantic; from binmetric_sweep import sweep; print(sweep.__version__, jax.__version__, numpyro.__version__, jax.devices())" || exit 1
step "quadrature, $SIZE lanes: the default plan (two workers), then one worker"
timeout "$(left 300)" python3 scripts/bench_kernels.py --sizes "$SIZE" --quadrature-only \
  --quadrature-variants driver --workers 1 --out "$R" 2>&1 | grep -v "^ "
step "NUTS, $SIZE lanes, the chain kernel: the default (two workers), then one worker"
timeout "$(left 590)" python3 scripts/bench_kernels.py --nuts-only --lockstep 0 --baseline 0 \
  --loops kernel --sizes "$SIZE" --workers 1 --out "$R" 2>&1 | grep -v "^ "
step "sweep compare, 100 x 10,000, 1,000 x 50 and 1,000 x 1,000 ratings, both rate models"
timeout "$(left 590)" python3 scripts/bench_compare.py --sizes 100x10000 1000x50 1000x1000 --out "$R" 2>&1 | grep -v "^ "
step "the legacy grid ($SWEEP) by quadrature end to end: cold, then twice warm"
timeout "$(left 590)" python3 scripts/bench_sweep.py "$SWEEP" --method quadrature --repeats 2 \
  --out "$R" 2>&1 | grep -v "^ "
step done
ls -la "$R"
