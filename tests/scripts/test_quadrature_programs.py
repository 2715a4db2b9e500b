"""The census of a program's loops (scripts/quadrature_programs.py)."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from quadrature_programs import PROGRAMS, anatomy, known_trips, while_loops  # noqa: E402


def test_loops_are_found_with_their_trips_and_inner_loops_count_per_outer_trip():
    def program(x):
        def outer(_, y):
            inner = jax.lax.fori_loop(0, 7, lambda _, z: jnp.sin(z) + y, y)
            return jnp.cos(inner) * y

        y = jax.lax.fori_loop(0, 3, outer, x)
        # A data-dependent loop: XLA cannot know its trips.
        return jax.lax.while_loop(lambda z: jnp.sum(z) < 100.0, lambda z: z * 2.0 + 1.0, y)

    hlo = jax.jit(program).lower(jnp.ones(5)).compile().as_text()
    found = while_loops(hlo)
    trips = sorted((n or 0) for loops in found.loops.values() for *_, n in loops)
    assert trips == [0, 3, 7]  # 0: unknown
    # 3 outer trips, each with 7 inner ones, and the unknown loop counted as one trip.
    assert known_trips(found) == 3 * (1 + 7) + 1


def test_a_rule_s_anatomy_names_its_quantile_loops_and_its_costs():
    found = anatomy(PROGRAMS["nested_exact_s"](), 8)
    assert found["loops"].count(16) == 2  # the interval's two ends, Newton within a bracket
    assert found["trips"] >= 32
    assert set(found["per_lane"]) >= {"flops", "transcendentals", "bytes accessed"}
    assert found["scratch_bytes_per_lane"] > 0
