"""How the benchmark scripts tell two runs' fits apart (scripts/bench_kernels.py)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench_kernels import fits_differing, values_differ  # noqa: E402

from binmetric_sweep.kernels.summaries import FitResults  # noqa: E402


def _fits(**changed) -> FitResults:
    fields = {name: np.zeros(3) for name in FitResults._fields}
    fields["rhat"] = np.array([np.nan, 1.0, np.nan])  # exact fits have no R-hat
    fields["exact"] = np.array([True, False, True])
    return FitResults(**{**fields, **changed})


def test_a_nan_equals_a_nan_and_nothing_else():
    x = np.array([np.nan, 1.0, np.nan, 2.0])
    y = np.array([np.nan, 1.0, 0.5, np.nextafter(2.0, 3.0)])  # one bit off
    assert values_differ(x, y).tolist() == [False, False, True, True]
    assert not values_differ(np.array([3, 4]), np.array([3, 4])).any()


def test_fits_differ_where_any_field_differs_at_all():
    assert fits_differing(_fits(), _fits()) == 0  # R-hat's NaNs alike
    moved = _fits(post_sd=np.array([0.0, 0.0, 5e-17]), rhat=np.array([np.nan, np.nan, np.nan]))
    assert fits_differing(_fits(), moved) == 2
