"""A NUTS sweep through the whole pipeline: sweep file → counts → NUTS → Parquet.

The kernels' tests hold the sampler to the quadrature fit by fit; here the
same sweep run by both methods must agree through the pipeline (both see
the same counts, which depend only on the seed, configuration and
replicate), the sampler's diagnostics must reach the tables, its numbers
must not depend on the sharding, and each shard must record which NUTS
loop computed it (``sampler.loop: auto`` resolves per device).
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from binmetric_sweep import sweep
from binmetric_sweep.kernels.nuts import NUTSSettings, resolve_loop

from .helpers import sorted_surface, tiny

#: The tiny sweep (16 configurations × 3 replicates, half of them with N_M = 0,
#: which need no sampler) with short chains: 24 sampled fits. The sampler is
#: test_fits.py's, whose NUTS program (calls of 256 fits on 32 slots) the
#: session's compilation cache then holds once for both.
NUTS_SWEEP = tiny(
    name="tiny-nuts", method="nuts", sampler={"chains": 2, "warmup": 50, "samples": 50}
)


@pytest.fixture(scope="module")
def nuts_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("nuts") / "out"
    sweep.run(NUTS_SWEEP, out)
    return out


@pytest.fixture(scope="module")
def quadrature_run(tmp_path_factory):
    """The same sweep (the same counts) by quadrature."""
    out = tmp_path_factory.mktemp("quadrature") / "out"
    sweep.run({**NUTS_SWEEP, "method": "quadrature"}, out)
    return out


def _fits(out) -> pd.DataFrame:
    return sorted_surface(sweep.load_fits(out))


def test_nuts_sweep_agrees_with_the_quadrature_sweep_of_the_same_counts(nuts_run, quadrature_run):
    nuts, exact = _fits(nuts_run), _fits(quadrature_run)
    counts = ["config_id", "replicate", "n_pos", "n_tp", "n_pos_paired", "n_tn", "m_pos"]
    pd.testing.assert_frame_equal(nuts[counts], exact[counts])
    surface = sweep.load_surface(nuts_run).drop_duplicates("config_id").set_index("config_id")
    sampled = ~nuts.exact.to_numpy()
    assert np.array_equal(sampled, surface.n_m.loc[nuts.config_id].to_numpy() > 0)
    assert sampled.sum() == 24
    s, q = nuts[sampled], exact[sampled]
    assert np.all(np.abs(s.estimate - q.estimate) <= 5 * s.se / np.sqrt(s.ess))
    assert np.all(np.abs(s.se - q.se) <= 5 * s.sd_mcse)
    # 2 × 50 draws: loose bounds, enough to catch a row joined to another lane's
    # numbers; the sampler's own accuracy is held to the bounds in test_nuts.py.
    assert np.all(s.rhat < 1.2) and np.all(s.ess > 10) and np.all(s.steps > 0)
    # N_M = 0: the Beta itself, exactly, in both.
    unsampled = nuts[~sampled]
    np.testing.assert_allclose(unsampled.estimate, exact[~sampled].estimate, rtol=1e-12)
    assert np.all(unsampled.divergences == 0) and np.all(unsampled.steps == 0)
    # The surface's sampler health is its fits'.
    per_config = s.groupby("config_id")
    health = surface.loc[per_config.rhat.max().index]
    np.testing.assert_array_equal(health.rhat_max, per_config.rhat.max())
    np.testing.assert_array_equal(health.ess_min, per_config.ess.min())
    np.testing.assert_array_equal(health.divergences, per_config.divergences.sum())


def test_nuts_numbers_do_not_depend_on_the_sharding(tmp_path, nuts_run):
    sweep.run({**NUTS_SWEEP, "shard_size": 16}, tmp_path / "one-shard")
    pd.testing.assert_frame_equal(_fits(tmp_path / "one-shard"), _fits(nuts_run), check_exact=True)


def test_each_shard_records_the_loop_that_ran_it(nuts_run, quadrature_run):
    loop = resolve_loop(NUTSSettings(), jax.default_backend()).loop
    assert loop != "auto"
    for path in sorted((nuts_run / "fits").glob("*.parquet")):
        meta = pq.read_metadata(path).metadata
        assert meta[b"binmetric_sweep.loop"].decode() == loop
    state = sweep.status(nuts_run)
    assert state.loops == {loop: state.shards}
    assert f"NUTS loop: {loop} ({state.shards} shards)" in state.lines()
    # Quadrature runs no NUTS loop, and its status says nothing of one.
    for path in sorted((quadrature_run / "fits").glob("*.parquet")):
        assert pq.read_metadata(path).metadata[b"binmetric_sweep.loop"] == b""
    assert sweep.status(quadrature_run).loops == {}
