"""Newton's method for a root bracketed in [lo, hi], safeguarded by bisection.

Each step evaluates f and its slope at x, moves one end of the bracket to x
by the sign of f(x), and takes Newton's point x − f/f′ where
:func:`in_closed_bracket` (or the ``accept`` given) allows it, the middle of
the bracket where not (Press et al., *Numerical Recipes*, ``rtsafe``). So the
iteration converges wherever f changes sign in the bracket, quadratically once
Newton's points stay inside. A fixed number of steps in a ``fori_loop``, so
that every lane of a ``vmap`` runs the same program.

The quantiles of the quadrature rules (:mod:`.quadrature`, :mod:`.t_outer`,
:mod:`.gauss_hermite`) invert a CDF with it, and the nested rule finds the
mode of its s-integrand as the root of the log-density's derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array


class Bracket(NamedTuple):
    """The bracket [lo, hi] around the root and the current point x in it."""

    lo: Array
    hi: Array
    x: Array


def in_closed_bracket(newton: Array, bracket: Bracket, trusted: Array | None) -> Array:
    """Take Newton's point where it lies in [lo, hi] and the slope is trusted.

    ≤, not <: at convergence x is an end of the bracket and Newton stays there.
    ``trusted`` is None where the slope is not checked (``guard=False``).
    """
    inside = newton >= bracket.lo if trusted is None else trusted & (newton >= bracket.lo)
    return inside & (newton <= bracket.hi)


def in_open_bracket_or_still(newton: Array, bracket: Bracket, trusted: Array | None) -> Array:
    """Take Newton's point where it lies in (lo, hi), or does not move x.

    A step too small to move x has converged; bisecting then would throw the
    root away for the middle of a bracket that may never have closed in on
    it. ``trusted`` is unused: with the guard, a slope of the wrong sign
    makes a step of f itself (at a mode, a gradient step), taken like any other.
    """
    del trusted
    return ((newton > bracket.lo) & (newton < bracket.hi)) | (newton == bracket.x)


def bracketed_newton(
    f_and_slope: Callable[[Array], tuple[Array, Array]],
    lo: Array,
    hi: Array,
    start: Array,
    steps: int,
    *,
    increasing: bool = True,
    guard: bool = True,
    zero_below: bool = False,
    accept: Callable[[Array, Bracket, Array | None], Array] = in_closed_bracket,
) -> Array:
    """The root of f in [lo, hi] after ``steps`` safeguarded Newton steps from ``start``.

    Args:
        f_and_slope: ``x -> (f(x), f′(x))``, scalars (or any shape, elementwise).
        lo, hi: the bracket's ends, scalars; f changes sign between them.
        start: the first point, in [lo, hi].
        steps: how many steps (a static count: a ``fori_loop`` of that length).
        increasing: whether f rises through its root (a CDF minus its target)
            or falls (the derivative of a log-concave function at its mode).
        guard: whether a slope of the wrong sign for ``increasing`` is replaced
            by ±1 before Newton divides by it, and reported to ``accept`` as
            untrusted. Without it (for a slope that is never of the wrong
            sign, such as a density) Newton divides by the slope as it is.
        zero_below: whether a point where f is 0 (or NaN) becomes the
            bracket's lower end; by default it becomes the upper end.
        accept: ``(newton, bracket, trusted) -> bool``, whether to take Newton's
            point from x in the bracket just narrowed (``trusted``: whether the
            slope had the right sign; None without ``guard``):
            :func:`in_closed_bracket` or :func:`in_open_bracket_or_still`.
            Where it does not, the step bisects.

    Returns:
        x after the last step, the shape of ``start``.
    """

    def step(_, bracket: Bracket) -> Bracket:
        lo, hi, x = bracket
        f, slope = f_and_slope(x)
        if zero_below:
            above = f > 0 if increasing else f < 0
            lo, hi = jnp.where(above, lo, x), jnp.where(above, x, hi)
        else:
            below = f < 0 if increasing else f > 0
            lo, hi = jnp.where(below, x, lo), jnp.where(below, hi, x)
        trusted = None
        if guard:
            trusted = slope > 0 if increasing else slope < 0
            slope = jnp.where(trusted, slope, 1.0 if increasing else -1.0)
        newton = x - f / slope
        inside = accept(newton, Bracket(lo, hi, x), trusted)
        return Bracket(lo, hi, jnp.where(inside, newton, 0.5 * (lo + hi)))

    return jax.lax.fori_loop(0, steps, step, Bracket(lo, hi, start)).x
