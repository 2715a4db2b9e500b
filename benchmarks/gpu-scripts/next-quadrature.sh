#!/bin/bash
# Prepared for the next lease (not yet run): a second call after next.sh, about 7
# minutes, if that much device time is left. The quadrature at the issue's 10^5 fits.
# On a GPU the driver runs two passes, the adaptive Gauss-Hermite rule and then the
# nested rule on what it rejects (22 % of the benchmark's lanes, at 0.008 ms a lane
# against Gauss-Hermite's 0.006 in 0.17.0). The middle rules, which on CPU leave the
# nested rule 0.2 % of the lanes, were last timed on a GPU in 0.10.0's session, when
# the only one was the nested rule with a Gauss-Hermite t axis: it cost more than it
# saved there, so 0.11.0 left it out on accelerators. The (alpha, t) and t-outer rules
# came later (0.13.0, 0.14.0). The first step times the driver with all three beside
# the GPU's default plan (the variant "without any middle rule"), the driver without
# each, and the nested rule alone, in one process; the second adds Gauss-Hermite
# chunks of 16,384 (its cost a lane looks like per-call overhead: the mode search's
# and the quantiles' loop trips). A fresh H100 compiled the default plan's programs
# in 76-89 s; the middle rules add theirs. Carry .whl/ and this script with lease.sh
# in .gpu/; run it with the device tool's timeout_s at 600.
. "$(dirname "$0")/lease.sh"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --out $R"
step "quadrature 10^5: the middle rules against the default plan (0.17.0: 144,548/s), side by side"
timeout $(left 420) python3 $Q --quadrature-variants all --middle-rules on 2>&1 | grep -v "^ "
step "quadrature 10^5: the middle rules, Gauss-Hermite in chunks of 16,384"
timeout $(left 590) python3 $Q --quadrature-variants driver --middle-rules on --rule-chunks gauss_hermite=16384 2>&1 | grep -v "^ "
finish
