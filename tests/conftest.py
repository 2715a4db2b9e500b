"""Test-wide settings: the kernels are checked in float64, as the runner uses them."""

import jax

jax.config.update("jax_enable_x64", True)
