#!/bin/bash
# Prepared for the next lease (not yet run): a second call after next.sh, or the first
# of a lease too short for it; up to 10 minutes. The quadrature at 10^5 fits and the
# middle rules. Since 0.24.0 the Gauss-Hermite rule runs in chunks of 16,384 on a GPU (a
# call cost 5-6.5 ms whatever its lanes), and the driver ran at 389,010 posteriors/s
# (kernels-gpu-20261127-031144.json): the nested rule's 21.75 % of the lanes took
# 0.20 s of its 0.26 s. The middle rules take all but 0.23 % of them. In chunks of
# 1024, beside Gauss-Hermite's old chunks, they cost more than they saved
# (-031014.json); t outermost alone cost 0.0022 ms a lane against the nested rule's
# 0.0092. With t outermost and Gauss-Hermite in (alpha, t) in chunks of 16,384 and
# 8192 their programs had not compiled after 150 s (-031225.json). So: first the
# variants in 0.24.0's chunks (the driver with all three middle rules, without each,
# without any (the GPU's default plan), with t outermost alone, the nested rule
# alone), then larger middle chunks, a step at a time, with long limits. Carry .whl/
# and this script with lease.sh in .gpu/; run it with the device tool's timeout_s at 600.
. "$(dirname "$0")/lease.sh"
Q="scripts/bench_kernels.py --sizes 100000 --quadrature-only --middle-rules on --out $R"
step "quadrature 10^5: the middle rules and their variants, in 0.24.0's chunks"
timeout $(left 300) python3 $Q --quadrature-variants all 2>&1 | grep -v "^ "
step "quadrature 10^5: the middle rules, t outermost and (alpha, t) in chunks of 4096, the middle rule 2048"
timeout $(left 590) python3 $Q --quadrature-variants driver --rule-chunks t_outer=4096 hermite_alpha_t=4096 hermite_t=2048 2>&1 | grep -v "^ "
finish
