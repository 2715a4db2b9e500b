"""Safeguarded Newton in a bracket (kernels.roots)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from binmetric_sweep.kernels.roots import (
    bracketed_newton,
    in_closed_bracket,
    in_open_bracket_or_still,
)


def normal_excess(q):
    """Φ(x) − q and its derivative: the root is the normal q-quantile."""
    return lambda x: (jax.scipy.special.ndtr(x) - q, jax.scipy.stats.norm.pdf(x))


@functools.partial(jax.jit, static_argnames=("steps", "guard"))
def normal_quantile(q, start, steps=40, guard=True):
    lo, hi = jnp.array(-10.0), jnp.array(10.0)
    return bracketed_newton(normal_excess(q), lo, hi, start, steps, guard=guard)


def traced(f_and_slope, lo, hi, start, steps, **options):
    """The root, each point f was evaluated at, and each bracket ``accept`` saw (eagerly)."""
    points, brackets = [], []
    accept = options.pop("accept", in_closed_bracket)

    def recording(x):
        points.append(float(x))
        return f_and_slope(x)

    def recording_accept(newton, bracket, trusted):
        brackets.append((float(bracket.lo), float(bracket.hi)))
        return accept(newton, bracket, trusted)

    with jax.disable_jit():
        x = bracketed_newton(recording, lo, hi, start, steps, accept=recording_accept, **options)
    return float(x), np.array(points), np.array(brackets)


def test_converges_to_the_cube_root_of_two_from_either_end():
    cube = lambda x: (x**3 - 2.0, 3.0 * x**2)  # noqa: E731
    lo, hi = jnp.array(0.0), jnp.array(2.0)
    for start in (0.0, 0.1, 1.0, 2.0):
        x = bracketed_newton(cube, lo, hi, jnp.array(start), 60)
        np.testing.assert_allclose(float(x), 2.0 ** (1 / 3), rtol=1e-15)


@settings(max_examples=50, deadline=None)
@given(
    q=st.floats(1e-6, 1 - 1e-6),
    start=st.floats(-10.0, 10.0),
)
def test_inverts_the_normal_cdf_from_any_start(q, start):
    # To rounding: Φ(x) − q is known to ~1e-16 near q = 1, so x to ~1e-16/φ(x).
    for guard in (True, False):  # a density is never negative: no guard needed
        x = float(normal_quantile(q, start, guard=guard))
        assert abs(stats.norm.cdf(x) - q) <= 4e-16
        np.testing.assert_allclose(x, stats.norm.ppf(q), rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    root=st.floats(0.0, 1.0, allow_subnormal=False),
    steepness=st.floats(1.0, 1e4),
    start=st.floats(-1.0, 2.0, allow_subnormal=False),
)
def test_every_point_and_bracket_stays_inside_and_the_bracket_holds_the_root(
    root, steepness, start
):
    # tanh: Newton overshoots far from a steep root, so the steps must bisect.
    def f_and_slope(x):
        t = jnp.tanh(steepness * (x - root))
        return t, steepness * (1.0 - t * t)

    x, points, brackets = traced(f_and_slope, jnp.array(-1.0), jnp.array(2.0), jnp.array(start), 60)
    lo, hi = brackets.T
    # Up to subnormals: XLA on CPU flushes them to zero, so f(x) = 0 within one of the root.
    tiny = np.finfo(float).tiny
    assert np.all((points >= -1.0) & (points <= 2.0))
    assert np.all((lo <= root + tiny) & (root - tiny <= hi))
    # Each bracket lies within the one before.
    assert np.all(np.diff(lo) >= -tiny) and np.all(np.diff(hi) <= tiny)
    assert abs(x - root) <= 1e-12


def test_bisects_where_the_slope_is_untrusted_or_newton_leaves_the_bracket():
    lo, hi, start = jnp.array(0.0), jnp.array(1.0), jnp.array(0.9)
    bisections, a, b = [0.9], 0.0, 1.0  # plain bisection of x − 0.3, from 0.9
    for _ in range(8):
        a, b = (bisections[-1], b) if bisections[-1] < 0.3 else (a, bisections[-1])
        bisections.append(0.5 * (a + b))
    for slope in (0.0, -1.0, np.nan, 1e-9):  # untrusted, or a Newton point far outside
        x, points, _ = traced(lambda x, s=slope: (x - 0.3, jnp.asarray(s)), lo, hi, start, 8)
        np.testing.assert_array_equal(points, bisections[:-1])
        assert x == bisections[-1]


def test_a_root_hit_exactly_stays_put():
    x, points, brackets = traced(lambda x: (x - 0.5, jnp.ones_like(x)), 0.0, 1.0, 0.5, 5)
    assert x == 0.5 and np.all(points == 0.5)
    assert brackets[-1].tolist() == [0.0, 0.5]  # f = 0: x became the upper end


@pytest.mark.parametrize(("zero_below", "end"), [(False, 0.0), (True, 1.0)])
def test_zero_below_says_which_end_a_nan_f_moves(zero_below, end):
    nan = lambda x: (jnp.full_like(x, jnp.nan), jnp.ones_like(x))  # noqa: E731
    lo, hi, start = jnp.array(0.0), jnp.array(1.0), jnp.array(0.5)
    x = bracketed_newton(nan, lo, hi, start, 60, zero_below=zero_below)
    assert abs(float(x) - end) < 1e-15  # every step bisects towards that end


@settings(max_examples=30, deadline=None)
@given(a=st.floats(1.5, 1e4), b=st.floats(1.5, 1e4), start=st.floats(0.02, 0.98))
def test_finds_the_mode_of_a_beta_kernel_from_its_log_derivatives(a, b, start):
    # log f = (a − 1)·log x + (b − 1)·log(1 − x): its derivative falls through the mode.
    def slope_fn(x):
        return (a - 1) / x - (b - 1) / (1 - x), -(a - 1) / x**2 - (b - 1) / (1 - x) ** 2

    x = bracketed_newton(
        slope_fn,
        jnp.array(0.0),
        jnp.array(1.0),
        jnp.array(start),
        64,
        increasing=False,
        accept=in_open_bracket_or_still,
    )
    np.testing.assert_allclose(float(x), (a - 1) / (a + b - 2), rtol=1e-12)


def test_a_falling_f_with_the_wrong_curvature_takes_a_gradient_step():
    # Convex in x, so f′ > 0 where f should fall: the step is x + f, taken inside (lo, hi).
    x, points, _ = traced(
        lambda x: (0.1 - x, jnp.ones_like(x)),
        jnp.array(0.0),
        jnp.array(1.0),
        jnp.array(0.0),
        2,
        increasing=False,
        accept=in_open_bracket_or_still,
    )
    np.testing.assert_array_equal(points, [0.0, 0.1])
    assert x == 0.1


def test_runs_under_vmap_lane_by_lane():
    q = jnp.array([0.025, 0.5, 0.975])
    x = jax.vmap(lambda q: normal_quantile(q, jnp.array(0.0)))(q)
    np.testing.assert_allclose(np.asarray(x), stats.norm.ppf(np.asarray(q)), rtol=1e-12, atol=1e-15)
