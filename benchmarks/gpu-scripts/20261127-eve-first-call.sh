#!/bin/bash
# The 2026-11-27 evening lease's first call (0.29.0), about 10 minutes on a fresh
# machine, parts in order of worth. Carry .whl/ (pydantic's wheels and flatbuffers')
# and this script with lease.sh in .gpu/; the device tool's timeout_s at 600.
# The quadrature first: at 10^5 fits it is the target furthest off (389,010 of 10^6
# posteriors/s in the morning lease, kernels-gpu-20261127-031144.json, where the nested
# rule took 0.20 s of the driver's 0.26 s in 23 calls of 1024 lanes at 8.7 ms). Each
# plan runs in its own process, so that one which does not compile in time costs only
# its step; the programs they share come from the persistent cache ($JAX_COMPILATION_CACHE_DIR).
# Each record carries the driver's quadrature_digest: equal digests, the same bits.
# SIZE (default 10^5) lets the script be dry-run on CPU.
set -o pipefail
. "$(dirname "$0")/lease.sh"
SIZE=${SIZE:-100000}
Q="scripts/bench_kernels.py --sizes $SIZE --quadrature-only --quadrature-variants driver --out $R"
step "quadrature: 0.29.0's plan (Gauss-Hermite in chunks of 16,384, the rest 1024), then two workers"
if ! timeout $(left 170) python3 $Q --workers 2 2>&1 | grep -v "^ "; then
  # The afternoon lease's driver had not compiled in 136 s: how long each of its
  # programs takes to compile here, alone.
  step "the driver did not finish: its programs compiled one by one"
  timeout $(left 300) python3 scripts/quadrature_programs.py --lanes 1024 --out $R --rules nested gauss_hermite_logit 2>&1 | grep -v "^ "
  timeout $(left 360) python3 scripts/quadrature_programs.py --lanes 16384 --out $R --rules gauss_hermite_logit gauss_hermite_ridge 2>&1 | grep -v "^ "
else
  step "the nested rule in chunks of 4096"
  timeout $(left 240) python3 $Q --rule-chunks nested=4096 2>&1 | grep -v "^ "
  step "the nested rule in chunks of 8192"
  timeout $(left 300) python3 $Q --rule-chunks nested=8192 2>&1 | grep -v "^ "
  step "Gauss-Hermite in chunks of 32,768, the nested rule 8192"
  timeout $(left 360) python3 $Q --rule-chunks gauss_hermite=32768 nested=8192 2>&1 | grep -v "^ "
  step "the middle rules on, in chunks of 16,384, the nested rule 4096"
  timeout $(left 470) python3 $Q --middle-rules on --rule-chunks t_outer=16384 hermite_t=16384 hermite_alpha_t=16384 nested=4096 2>&1 | grep -v "^ "
fi
step "0.29.0's plan with XLA's command buffers (CUDA graphs) for loops and conditionals"
CB="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE --xla_gpu_graph_min_graph_size=1"
XLA_FLAGS="$CB" JAX_COMPILATION_CACHE_DIR=/tmp/xc-cb timeout $(left 595) python3 $Q 2>&1 | grep -v "^ "
finish
