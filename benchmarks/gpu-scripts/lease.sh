# Sourced by the prepared calls (next.sh, next-second.sh): what each call on a lent
# GPU machine does first. The pydantic and flatbuffers wheels come in the carried .whl/
# (flatbuffers lets exported programs be kept in $JAX_COMPILATION_CACHE_DIR between the
# steps, and between two calls on the same warm machine). A step's limit is `left N`:
# N seconds from the call's start, less what is gone. Records go to $R, and `finish`
# tars them into $OUT/results.tgz.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/xc
R=/tmp/r-$(basename "$0" .sh); mkdir -p "$R"; T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
step() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s: $*"; }
finish() { step done; (cd "$R" && tar czf "$OUT/results.tgz" . && ls -la); }
nvidia-smi -L
python3 -c "import jax, numpyro, pydantic, flatbuffers; print(jax.__version__, numpyro.__version__, jax.devices())"
