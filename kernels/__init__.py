"""Pure JAX kernels of binmetric-sweep: counts, log-density, NUTS, quadrature, summaries.

Nothing here reads files, prints, jits or imports Ray: callers compose, vmap
and jit. See ``docs/model.md`` for the model.
"""
