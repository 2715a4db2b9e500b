"""Sweep files: what is accepted, how it is normalised, and one-line refusals."""

from __future__ import annotations

import pytest
import yaml

from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.spec.config import load_sweep, spec_digest

from .helpers import CONFIGS, tiny


def test_shipped_sweep_files_parse():
    names = {p.stem for p in CONFIGS.glob("*.yaml")}
    assert {"quickstart", "published-tables", "legacy-grid", "sampled-coverage"} <= names
    for path in CONFIGS.glob("*.yaml"):
        spec = load_sweep(path)
        assert spec.name


def test_defaults_and_normalised_axes():
    spec = load_sweep(
        {
            "name": "d",
            "grid": {
                "alpha": 0.6,
                "rho": [0.7],
                "eta": "rho",
                "n_phi": {"logspace": [1, 3, 3]},
                "n_m": [0],
            },
        }
    )
    assert (spec.counts, spec.method, spec.replicates, spec.seed) == ("expected", "nuts", 1, 0)
    assert spec.gamma == (0.05,) and spec.interval == 0.95 and spec.shard_size == 2048
    block = spec.grid[0]
    assert block.alpha == (0.6,) and block.eta == "rho"
    assert block.n_phi == (10.0, 100.0, 1000.0)
    assert block.n_rho_eta == "n_phi" and block.psi == "alpha"


def test_generated_axes():
    grid = {
        "alpha": {"range": [0.0, 1.05, 0.1]},
        "rho": {"linspace": [0.5, 0.9, 5]},
        "eta": "rho",
        "n_phi": {"linspace": [0, 10, 4]},
        "n_m": {"range": [0, 3000, 1000]},
    }
    block = load_sweep({"name": "g", "grid": grid}).grid[0]
    assert block.alpha == tuple(round(0.1 * i, 12) for i in range(11))
    assert block.rho == (0.5, 0.6, 0.7, 0.8, 0.9)
    assert block.n_phi == (0.0, 3.0, 7.0, 10.0)  # rounded half up to integers
    assert block.n_m == (0.0, 1000.0, 2000.0)  # the stop is excluded, as in Python's range


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"grd": 1}, "grd"),
        ({"counts": "expectd"}, "counts"),
        ({"method": "mcmc"}, "method"),
        ({"counts": "expected", "replicates": 3}, "replicates"),
        ({"replicates": 0}, "replicates"),
        ({"seed": -1}, "seed"),
        ({"interval": 1.0}, "interval"),
        ({"gamma": []}, "gamma"),
        ({"gamma": [0.05, 1.5]}, "gamma"),
        ({"shard_size": 0}, "shard_size"),
        ({"sampler": {"chans": 4}}, "sampler.chans"),
        ({"sampler": {"chains": "four"}}, "sampler.chains"),
        ({"sampler": {"loop": "triton"}}, "sampler.loop"),
        ({"name": ""}, "name"),
        ({"grid": []}, "grid"),
        ({"grid": {"alpha": [0.5]}}, "grid.rho"),
        ({"grid": {**tiny()["grid"], "alpha": [1.5]}}, "grid.alpha"),
        ({"grid": {**tiny()["grid"], "rho": [-0.1]}}, "grid.rho"),
        ({"grid": {**tiny()["grid"], "n_phi": [10.5]}}, "grid.n_phi"),
        ({"grid": {**tiny()["grid"], "n_m": [-5]}}, "grid.n_m"),
        ({"grid": {**tiny()["grid"], "n_m": []}}, "grid.n_m"),
        ({"grid": {**tiny()["grid"], "alhpa": [0.5]}}, "grid.alhpa"),
        ({"grid": {**tiny()["grid"], "eta": "n_phi"}}, "grid.eta"),
        ({"grid": {**tiny()["grid"], "eta": "gamma"}}, "grid.eta"),
        ({"grid": {**tiny()["grid"], "eta": "rho", "rho": "eta"}}, "grid.rho"),
        # a tie to a tie whose own name is bad (found by hypothesis: an AttributeError)
        ({"grid": {**tiny()["grid"], "alpha": "rho", "rho": ""}}, "grid.rho"),
        ({"grid": {**tiny()["grid"], "alpha": "eta", "eta": "n_m"}}, "grid.eta"),
        ({"grid": {**tiny()["grid"], "psi": [0.4]}}, "grid.psi"),
        ({"grid": {**tiny()["grid"], "n_m": "known"}}, "grid.n_m"),
        ({"grid": {**tiny()["grid"], "n_m": {"range": [0, 10, 0]}}}, "grid.n_m"),
        ({"grid": {**tiny()["grid"], "n_m": {"linspace": [0, 10]}}}, "grid.n_m"),
        ({"grid": {**tiny()["grid"], "n_m": {"between": [0, 10]}}}, "grid.n_m"),
        ({"grid": [tiny()["grid"], {**tiny()["grid"], "rho": [2]}]}, "grid.rho"),
    ],
)
def test_refusals_name_the_field_in_one_line(change, field):
    with pytest.raises(SweepError) as err:
        load_sweep(tiny(**change))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(field) or f" {field}" in message or field in message.split(":")[0]


def test_yaml_text_and_missing_file():
    spec = load_sweep("name: y\ngrid: {alpha: [0.5], rho: [0.7], eta: rho, n_phi: [1], n_m: [0]}\n")
    assert spec.name == "y"
    with pytest.raises(SweepError, match="sweep file"):
        load_sweep("/no/such/sweep.yaml")
    with pytest.raises(SweepError, match="not valid YAML"):
        load_sweep("name: [\n  oops\n")


def test_a_removed_sampler_key_is_refused_with_its_reason():
    base = (CONFIGS / "quickstart.yaml").read_text()
    for extra, field in (
        ("sampler: {dense_mass: false}", "sampler.dense_mass: was removed in 0.33.0"),
        ("sampler: {loop: transition}", "sampler.loop: 'transition' was removed in 0.33.0"),
    ):
        with pytest.raises(SweepError) as err:
            load_sweep(base + extra + "\n")
        message = str(err.value)
        assert message.startswith(field) and "\n" not in message, message
        assert "docs/performance.md" in message


def test_digests_are_those_earlier_versions_wrote():
    """A sweep's digest names its directory's shards: removing a sampler key must not
    move it, or directories written before would no longer resume (0.32.0's digests)."""
    assert spec_digest(load_sweep(CONFIGS / "quickstart.yaml")) == "f25571bd3ad8072f"
    assert spec_digest(load_sweep(CONFIGS / "sampled-coverage.yaml")) == "6ad111c8c7a60f01"


def test_the_sampler_loops_a_sweep_file_takes_are_the_kernels_drivers():
    from typing import get_args

    from binmetric_sweep.kernels.nuts import LOOPS
    from binmetric_sweep.sweep.spec.config import SamplerSettings

    assert get_args(SamplerSettings.model_fields["loop"].annotation) == LOOPS


def test_a_huge_nested_value_is_refused_in_one_short_line():
    """A 'billion laughs' axis (7 levels of 9 through YAML aliases; 43 million numbers,
    megabytes as text) is refused in one line that echoes it shortened."""
    anchors = ["&a0 [" + ", ".join(["0.5"] * 9) + "]"]
    anchors += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 7)]
    laughs = yaml.safe_load(f"[{', '.join(anchors)}]")[-1]
    text = yaml.safe_dump(tiny(grid={**tiny()["grid"], "alpha": [laughs]}))  # with its aliases
    for source in (tiny(grid={**tiny()["grid"], "alpha": [laughs]}), text):
        with pytest.raises(SweepError) as err:
            load_sweep(source)
        message = str(err.value)
        assert message.startswith("grid.alpha: value [[[…], […], […], …], ")
        assert message.endswith("(nested list) is not a finite number")
        assert len(message) < 200 and "\n" not in message


GRID_AXES = "allowed: alpha, rho, eta, n_phi, n_rho_eta, psi, n_m"
HUGE = 10**400


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # A misspelt axis is named, not the required axis it was meant to be.
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, nm: 1000}",
            f"grid.nm: unknown axis 'nm' (did you mean n_m?); {GRID_AXES}",
        ),
        (
            "grid:\n- {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, n_m: 10}\n"
            "- {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, nm: 10}",
            f"grid[1].nm: unknown axis 'nm' (did you mean n_m?); {GRID_AXES}",
        ),
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, n_m: 10, zzz: 1}",
            f"grid.zzz: unknown axis 'zzz'; {GRID_AXES}",
        ),
        # The same at the top level and in sampler, where a key is missing as well.
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, n_m: 10}\nreplicate: 1",
            "replicate: unknown key 'replicate' (did you mean replicates?); allowed: name, "
            "ratings, counts, replicates, seed, method, sampler, estimators, interval, gamma, "
            "power, grid, shard_size",
        ),
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, n_m: 10}\nsampler: {chain: 4}",
            "sampler.chain: unknown key 'chain' in sampler (did you mean chains?); allowed: "
            "chains, warmup, samples, target_accept, max_tree_depth, warmup_max_tree_depth, loop",
        ),
        # A size in scientific notation that is not an integer, or is too large.
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 100, n_m: 1e-3}",
            "grid.n_m: value 0.001 is not an integer; sizes are integers from 0 to 1,000,000,000",
        ),
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: [1e10], n_m: 1}",
            "grid.n_phi: value 10000000000 is out of range; sizes are integers from 0 to "
            "1,000,000,000",
        ),
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 1e400, n_m: 1}",
            "grid.n_phi: value inf is not a finite number",
        ),
        (
            "grid: {alpha: 5e1, rho: 0.8, eta: rho, n_phi: 1, n_m: 1}",
            "grid.alpha: value 50 is out of range; allowed: numbers in [0, 1]",
        ),
        (
            "grid: {alpha: 0.5, rho: 0.8, eta: rho, n_phi: 1, n_m: 1}\n"
            "counts: sampled\nreplicates: 2.5e0",
            "replicates: 2.5 is not an integer",
        ),
        # An integer too large for a float is refused, not an OverflowError.
        (
            f"grid: {{alpha: 0.5, rho: 0.8, eta: rho, n_phi: 1, n_m: [{HUGE}]}}",
            "grid.n_m: value 1000000000000…00000000000000 is out of range; sizes are integers "
            "from 0 to 1,000,000,000",
        ),
        (
            f"grid: {{alpha: 0.5, rho: 0.8, eta: rho, n_phi: 1, n_m: {{range: [0, {HUGE}, 2]}}}}",
            "grid.n_m.range: [0, 1000000000000…00000000000000, 2] holds a non-finite number",
        ),
    ],
)
def test_typos_and_numbers_in_a_sweep_file_are_named(text, message):
    with pytest.raises(SweepError) as err:
        load_sweep(f"name: t\n{text}\n")
    assert str(err.value) == message


def test_scientific_notation_reads_as_the_number_it_writes():
    """YAML 1.1 reads 1e4, 1.5e3 and 1e-3 as strings; each field reads them as numbers."""
    text = (
        "name: t\ncounts: sampled\nreplicates: 1e2\nseed: 12345678901234567e0\n"
        "gamma: [5e-2, 1e-2]\ninterval: 9e-1\nshard_size: 1.5e3\n"
        "sampler: {warmup: 2e2, samples: 1E3, target_accept: 9e-1}\n"
        "grid: {alpha: 6e-1, rho: [7e-1, 0.9], eta: rho, n_phi: 1e4, n_m: [0, 1.5e3, 1e+4],"
        " n_rho_eta: {logspace: [2e0, 3, 2]}, psi: 5e-1}\n"
    )
    spec = load_sweep(text)
    assert (spec.replicates, spec.seed, spec.shard_size) == (100, 12345678901234567, 1500)
    assert spec.gamma == (0.05, 0.01) and spec.interval == 0.9
    assert (spec.sampler.warmup, spec.sampler.samples, spec.sampler.target_accept) == (
        200,
        1000,
        0.9,
    )
    block = spec.grid[0]
    assert block.alpha == (0.6,) and block.rho == (0.7, 0.9) and block.psi == (0.5,)
    assert block.n_phi == (10000.0,) and block.n_m == (0.0, 1500.0, 10000.0)
    assert block.n_rho_eta == (100.0, 1000.0)
    # A name stays a name, and a tie stays a tie.
    assert load_sweep(text.replace("name: t", "name: 1e4")).name == "1e4"
    assert block.eta == "rho"
