"""sweep compare: each system's posterior and every pair's P(α_a > α_b), against independent
references (the sweep's own fit, exact two-Beta probabilities, brute-force grids, the
published comparisons), and the command's outputs."""

from __future__ import annotations

import json
import os
import pathlib
import stat
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import integrate, stats

from binmetric_sweep import sweep
from binmetric_sweep.sweep.cli import main
from binmetric_sweep.sweep.compare.analysis import (
    benjamini_hochberg,
    compare_systems,
    counts_of,
    holm,
)
from binmetric_sweep.sweep.compare.report import comparison_text
from binmetric_sweep.sweep.execution.fits import fit_lanes

SHARED_COMPARISONS = (
    pathlib.Path(__file__).resolve().parents[3]
    / "shared"
    / "reference"
    / "published_comparisons.csv"
)
#: A copy of it, for a clone with no ``shared/`` beside it.
COPIED_COMPARISONS = (
    pathlib.Path(__file__).resolve().parents[1] / "data" / "published_comparisons.csv"
)
COMPARISONS = SHARED_COMPARISONS if SHARED_COMPARISONS.exists() else COPIED_COMPARISONS
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ratings.csv"


def counts_table(*rows) -> pd.DataFrame:
    keys = ("system", "n_phi", "n_pos", "n_rho_eta", "n_pos_paired", "n_tp", "n_tn", "n_m", "m_pos")
    return pd.DataFrame([dict(zip(keys, row, strict=True)) for row in rows])


#: Three small systems: two with paired and metric ratings, one with human ratings only.
SMALL = counts_table(
    ("a", 30, 20, 12, 8, 7, 3, 60, 40),
    ("b", 25, 14, 10, 6, 5, 3, 80, 45),
    ("c", 20, 9, 0, 0, 0, 0, 0, 0),
)


def brute_force(counts: pd.DataFrame, rates: str, cells: int = 400, nodes: int = 100):
    """Posterior means and P(α_i > α_j) on a plain grid: midpoint sums over ``cells`` values of
    α (whose CDF they also give), Gauss–Legendre sums over ``nodes`` values each of ρ and η."""
    g = (np.arange(cells) + 0.5) / cells
    y, w = np.polynomial.legendre.leggauss(nodes)
    r, wr = (y + 1) / 2, w / 2
    alpha, rho, eta = g[:, None, None], r[None, :, None], r[None, None, :]
    log_wre = np.log(wr)[:, None] + np.log(wr)[None, :]
    p = alpha * rho + (1 - alpha) * (1 - eta)

    def log_lik(row):
        return (
            stats.beta.logpdf(alpha, row.n_pos + 1, row.n_phi - row.n_pos + 1)
            + row.m_pos * np.log(p)
            + (row.n_m - row.m_pos) * np.log1p(-p)
        )

    def cdf(q):  # the midpoint rule's CDF at each cell's centre
        return np.cumsum(q, axis=0) - 0.5 * q

    rows = list(counts.itertuples())
    if rates == "per-system":
        marginals = []
        for row in rows:
            log_j = (
                log_lik(row)
                + log_wre
                + stats.beta.logpdf(rho, row.n_tp + 1, row.n_pos_paired - row.n_tp + 1)
                + stats.beta.logpdf(
                    eta, row.n_tn + 1, row.n_rho_eta - row.n_pos_paired - row.n_tn + 1
                )
            )
            m = np.exp(log_j - log_j.max()).sum(axis=(1, 2))
            marginals.append(m / m.sum())
        means = np.array([np.sum(g * m) for m in marginals])
        prob = np.array([[np.sum(mi * cdf(mj)) for mj in marginals] for mi in marginals])
        return means, prob
    a_r = counts.n_tp.sum() + 1
    b_r = (counts.n_pos_paired - counts.n_tp).sum() + 1
    a_e = counts.n_tn.sum() + 1
    b_e = (counts.n_rho_eta - counts.n_pos_paired - counts.n_tn).sum() + 1
    log_w = (
        log_wre + stats.beta.logpdf(r, a_r, b_r)[:, None] + stats.beta.logpdf(r, a_e, b_e)[None, :]
    )
    conditionals = []
    for row in rows:
        lq = log_lik(row)
        top = lq.max(axis=0)
        z = np.exp(lq - top).sum(axis=0)
        log_w = log_w + np.log(z) + top
        conditionals.append(np.exp(lq - top) / z)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    means = np.array([np.einsum("a,are,re->", g, q, w) for q in conditionals])
    prob = np.array(
        [[np.einsum("are,are,re->", qi, cdf(qj), w) for qj in conditionals] for qi in conditionals]
    )
    return means, prob


def by_name(result) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    names = list(result.systems["system"])
    return result.systems.set_index("system"), result.p_better, names


@pytest.mark.parametrize("rates", ["per-system", "shared"])
def test_posteriors_and_pairs_match_a_brute_force_grid(rates):
    result = compare_systems(SMALL, rates=rates)
    systems, p, names = by_name(result)
    means, prob = brute_force(SMALL, rates)
    order = [list(SMALL["system"]).index(n) for n in names]
    np.testing.assert_allclose(systems["alpha_mean"].to_numpy(), means[order], atol=2e-5)
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(p[off], prob[np.ix_(order, order)][off], atol=5e-5)
    # The shared rate model correlates the α's: it is not the per-system answer.
    if rates == "shared":
        other = compare_systems(SMALL, rates="per-system")
        assert np.max(np.abs(other.p_better - p)) > 0.01


def test_per_system_rows_are_the_sweep_s_posterior_for_the_same_counts():
    result = compare_systems(SMALL, rates="per-system", level=0.9)
    fits = fit_lanes(counts_of(SMALL), None, "quadrature", level=0.9).fits
    systems = result.systems.set_index("system").loc[list(SMALL["system"])]
    for column, field in (
        ("alpha_mean", "post_mean"),
        ("alpha_sd", "post_sd"),
        ("ci_low", "ci_low"),
        ("ci_high", "ci_high"),
    ):
        np.testing.assert_array_equal(systems[column].to_numpy(), np.asarray(getattr(fits, field)))


def test_without_metric_ratings_every_p_is_the_exact_two_beta_probability():
    counts = counts_table(
        ("x", 527, 353, 0, 0, 0, 0, 0, 0),
        ("y", 527, 337, 0, 0, 0, 0, 0, 0),
        ("z", 600, 24, 0, 0, 0, 0, 0, 0),
        ("w", 40, 30, 0, 0, 0, 0, 0, 0),
    )
    for rates in ("per-system", "shared"):
        systems, p, names = by_name(compare_systems(counts, rates=rates))
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i == j:
                    continue
                ra, rb = systems.loc[a], systems.loc[b]
                ba = (ra.n_human, counts.set_index("system").loc[a, "n_pos"])
                bb = (rb.n_human, counts.set_index("system").loc[b, "n_pos"])
                da = stats.beta(ba[1] + 1, ba[0] - ba[1] + 1)
                db = stats.beta(bb[1] + 1, bb[0] - bb[1] + 1)
                exact = integrate.quad(
                    lambda x, da=da, db=db: da.pdf(x) * db.cdf(x), 0, 1, epsabs=1e-13, limit=400
                )[0]
                assert p[i, j] == pytest.approx(exact, abs=1e-9), (rates, a, b)


def published_counts(group: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per system, the human-positive counts k whose α (k/n or the posterior mean) rounds to the
    published two decimals: the published table reproduces only within that rounding."""
    out = {}
    for name, alpha, n in (
        pd.concat(
            [
                group[["system_a", "alpha_a", "n_human_per_system"]].set_axis(
                    ["s", "a", "n"], axis=1
                ),
                group[["system_b", "alpha_b", "n_human_per_system"]].set_axis(
                    ["s", "a", "n"], axis=1
                ),
            ]
        )
        .drop_duplicates("s")
        .itertuples(index=False)
    ):
        ks = [
            k
            for k in range(n + 1)
            if round(k / n, 2) == alpha or round((k + 1) / (n + 2), 2) == alpha
        ]
        out[name] = (min(ks), max(ks))
    return out


def test_the_published_comparisons_reproduce_within_their_rounding():
    """P(α_a > α_b) grows with a's positive count and falls with b's: the counts at the ends
    of the published α's rounding bracket the published P (itself rounded to 3 decimals).
    One comparison per data set holds every system at both ends of its bracket."""
    table = pd.read_csv(COMPARISONS)
    for _, group in table.groupby("source"):
        n = int(group["n_human_per_system"].iloc[0])
        ranges = published_counts(group)
        variants = [(f"{s}:{k}", n, k, 0, 0, 0, 0, 0, 0) for s, ks in ranges.items() for k in ks]
        result = compare_systems(counts_table(*variants))
        index = {name: i for i, name in enumerate(result.systems["system"])}

        def p(a, k_a, b, k_b, p_better=result.p_better, index=index):
            return p_better[index[f"{a}:{k_a}"], index[f"{b}:{k_b}"]]

        for row in group.itertuples():
            (lo_a, hi_a), (lo_b, hi_b) = ranges[row.system_a], ranges[row.system_b]
            low = p(row.system_a, lo_a, row.system_b, hi_b)
            high = p(row.system_a, hi_a, row.system_b, lo_b)
            assert low - 5e-4 <= row.p_a_better <= high + 5e-4, row


@pytest.mark.parametrize(("adjust", "method"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjustments_over_all_pairs(adjust, method):
    """Holm's and Benjamini–Hochberg's adjusted values are statsmodels' (the reference);
    stars, and eps, follow them."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(0, 0.01, 30), rng.uniform(0, 1, 200), [0.04, 0.04]])
    ours = holm(p) if adjust == "holm" else benjamini_hochberg(p)
    np.testing.assert_allclose(ours, multipletests(p, method=method)[1], rtol=1e-12)
    result = compare_systems(SMALL, adjust=adjust, gamma=0.05)
    pairs, plain = result.pairs, compare_systems(SMALL, gamma=0.05).pairs
    tail = np.minimum(1, 2 * np.minimum(pairs.p_a_better, 1 - pairs.p_a_better))
    np.testing.assert_allclose(pairs.p_adjusted, multipletests(tail, method=method)[1])
    assert (pairs.significant == (pairs.p_adjusted <= 0.05)).all()
    # eps at the level the adjustment holds a pair to: γ/m (Holm), γ·R/m (BH, R called).
    m, called = len(pairs), max(int(pairs.significant.sum()), 1)
    level = 0.05 / m if adjust == "holm" else 0.05 * called / m
    ratio = stats.norm.ppf(1 - level / 2) / stats.norm.ppf(1 - 0.05 / 2)
    np.testing.assert_allclose(pairs.eps, plain.eps * ratio, rtol=1e-12)


def test_warnings_name_the_systems_they_concern():
    unpaired = counts_table(
        ("a", 50, 30, 20, 12, 10, 6, 500, 300), ("b", 50, 25, 0, 0, 0, 0, 500, 260)
    )
    warnings = compare_systems(unpaired).warnings
    assert len(warnings) == 1 and "'b'" in warnings[0] and "no paired" in warnings[0]
    contradicting = counts_table(
        ("good", 400, 240, 300, 180, 171, 114, 2000, 1300),
        ("odd", 400, 240, 300, 180, 90, 114, 2000, 1000),
        ("fine", 400, 200, 300, 150, 142, 143, 2000, 1100),
    )
    warnings = compare_systems(contradicting, rates="shared").warnings
    assert any(
        "contradict one shared ρ" in w and ": odd (ρ 0.50" in w and "good" not in w
        for w in warnings
    )
    assert compare_systems(contradicting, rates="per-system").warnings == []


def test_the_api_takes_a_file_a_ratings_frame_or_a_counts_frame():
    from_file = sweep.compare(EXAMPLE)
    from_ratings = sweep.compare(pd.read_csv(EXAMPLE, dtype={"system": str}))
    from_counts = sweep.compare(SMALL)
    pd.testing.assert_frame_equal(from_file.systems, from_ratings.systems)
    assert list(from_counts.systems["system"]) == ["a", "b", "c"]
    with pytest.raises(sweep.SweepError, match="n_tp"):
        sweep.compare(SMALL.assign(n_tp=99))


def test_what_to_rate_next_plans_every_pair_that_is_not_significant():
    result = sweep.compare(EXAMPLE, cost_metric=0.01)
    pairs = result.pairs
    weak = ~pairs.significant
    assert weak.any() and (~weak).any()
    assert pairs.loc[~weak, "add_cost"].isna().all()
    finite = pairs.loc[weak, "add_cost"].dropna()
    assert len(finite) and (finite > 0).all()
    for column in ("add_human_a", "add_metric_a", "add_human_b", "add_metric_b"):
        assert (pairs.loc[weak, column].dropna() >= 0).all()
    # A smaller difference needs more ratings.
    ordered = pairs.loc[weak].sort_values("diff_mean")
    assert ordered["add_cost"].is_monotonic_decreasing


def expected_counts(name, alpha, rho, eta, n_phi, n_paired, n_m) -> tuple:
    """A counts row of rounded expected counts at (α, ρ, η): n_paired of the n_phi human
    ratings also have a metric label, n_m outputs the metric's only."""
    pos_paired = round(alpha * n_paired)
    m_pos = round((alpha * rho + (1 - alpha) * (1 - eta)) * n_m)
    tp, tn = round(rho * pos_paired), round(eta * (n_paired - pos_paired))
    return (name, n_phi, round(alpha * n_phi), n_paired, pos_paired, tp, tn, n_m, m_pos)


#: Seven systems 0.035 apart, 120 human ratings (all paired) and 1,200 metric-only each:
#: planned at the unadjusted γ, three pairs not significant under Holm would add nothing.
SEVEN = counts_table(
    *(expected_counts(f"s{i}", 0.8 - 0.035 * i, 0.85, 0.8, 120, 120, 1200) for i in range(7))
)


@pytest.mark.parametrize("adjust", ["holm", "bh"])
def test_what_to_rate_next_plans_at_the_level_the_adjustment_holds_a_pair_to(adjust):
    """Planned at the unadjusted γ, pairs called not significant under Holm were told to add
    nothing. Each pair not significant gets ratings to add, and with them (its systems' own
    rates, expected counts) its test at the level the adjustment holds it to passes."""
    from binmetric_sweep.sweep.compare.next_ratings import next_level, next_ratings

    result = compare_systems(SEVEN, adjust=adjust)
    weak = ~result.pairs["significant"]
    m, called = len(weak), int((~weak).sum())
    assert 0 < called < m
    level = 0.05 / m if adjust == "holm" else 0.05 * called / m
    assert next_level(result) == pytest.approx(level, rel=1e-12)
    pairs = next_ratings(result, cost_metric=0.01)
    assert pairs.loc[~weak, "add_cost"].isna().all()
    plans = pairs[weak]
    assert plans["add_cost"].notna().all() and (plans["add_cost"] > 0).all()
    systems = result.systems.set_index("system")
    rows = []
    for k, row in enumerate(plans.itertuples()):
        for side, name in (("a", row.a), ("b", row.b)):
            s = systems.loc[name]
            human = s.n_human + getattr(row, f"add_human_{side}")
            paired = s.n_paired + getattr(row, f"add_human_{side}")
            metric = s.n_metric + getattr(row, f"add_metric_{side}")
            rates = s.alpha_mean, s.rho_mean, s.eta_mean
            rows.append(expected_counts(f"{k}{side}", *rates, human, paired, metric))
    for start in range(0, len(rows), 8):  # eight systems a call: the programs compiled above
        after = compare_systems(counts_table(*rows[start : start + 8]), gamma=level)
        index = {name: i for i, name in enumerate(after.systems["system"])}
        for k in range(start // 2, min(start // 2 + 4, len(plans))):
            p = after.p_better[index[f"{k}a"], index[f"{k}b"]]
            assert p > 1 - level / 2, (plans.iloc[k].to_dict(), p)
    rule = "γ/m" if adjust == "holm" else "γ·R/m"
    text = comparison_text(replace(result, pairs=pairs))
    assert f"planned at the level each pair is held to, {rule} = {level:.2g}):" in text
    assert "+0 human +0 metric" not in text


def test_a_pair_whose_sizes_meet_its_plan_is_not_told_to_add_nothing():
    """Where the model's SD at a pair's sizes is below its posterior's (here an SD set wide by
    hand), the plan adds nothing: the text says why instead of "+0 human +0 metric"."""
    from binmetric_sweep.sweep.compare.analysis import Comparison, pair_table
    from binmetric_sweep.sweep.compare.next_ratings import next_ratings

    systems = pd.DataFrame(
        {
            "system": ["x", "y"],
            "n_outputs": 60_000,
            "n_human": 20_000,
            "n_paired": 20_000,
            "n_metric": 40_000,
            "alpha_mean": [0.63, 0.6],
            "alpha_sd": 0.05,
            "ci_low": [0.53, 0.5],
            "ci_high": [0.73, 0.7],
            "rho_mean": 0.8,
            "eta_mean": 0.8,
        }
    )
    p = np.array([[0.5, 0.66], [0.34, 0.5]])
    settings = {"rates": "per-system", "gamma": 0.05, "level": 0.95, "adjust": "none"}
    settings["method"] = "quadrature"
    result = Comparison(systems, pair_table(systems, p, 0.05, "none"), settings, [], p)
    pairs = next_ratings(result, cost_metric=0.01)
    assert pairs["add_cost"].tolist() == [0.0]
    text = comparison_text(replace(result, pairs=pairs))
    assert "x vs y (diff +0.030): no plan; its ratings already meet the plan" in text
    assert "+0 human" not in text and "planned at the level" not in text


def test_the_command_prints_writes_and_refuses(tmp_path, capsys):
    out, fig = tmp_path / "out", tmp_path / "cmp.png"
    argv = [
        "compare",
        str(EXAMPLE),
        "--rates",
        "shared",
        "--json",
        "--out",
        str(out),
        "-o",
        str(fig),
    ]
    assert main(argv) == 0
    answer = json.loads(capsys.readouterr().out)
    assert set(answer) == {"systems", "pairs", "settings", "read"}
    assert answer["read"]["outputs"] == 2000 and answer["read"]["by_item"]
    assert answer["read"]["human_labels"] == 400 and answer["read"]["notes"] == []
    assert set(answer["systems"][0]) == {
        "system", "n_outputs", "n_human", "n_paired", "n_metric", "alpha_mean", "alpha_sd",
        "ci_low", "ci_high", "rho_mean", "eta_mean",
    }  # fmt: skip
    assert set(answer["pairs"][0]) == {"a", "b", "diff_mean", "p_a_better", "eps", "significant"}
    assert answer["settings"] == {
        "rates": "shared", "gamma": 0.05, "level": 0.95, "adjust": "none", "method": "quadrature",
        "annotators": "refuse", "judges": "refuse",
    }  # fmt: skip
    assert len(answer["pairs"]) == 6 and fig.stat().st_size > 10_000
    pairs = pq.read_table(out / "pairs.parquet")
    meta = json.loads(pairs.schema.metadata[b"binmetric_sweep.settings"])
    assert meta["rates"] == "shared" and pairs.num_rows == 6
    assert json.loads(pairs.schema.metadata[b"binmetric_sweep.read"]) == answer["read"]
    assert pq.read_table(out / "systems.parquet").num_rows == 4
    assert main(["compare", str(EXAMPLE)]) == 0
    text = capsys.readouterr().out
    assert "sys-A (0.73)" in text and "*" in text and "(two-sided)" in text

    bad = tmp_path / "bad.csv"
    bad.write_text("system,human,metric\nA,1,\nB,yes,1\n")
    for argv, needle in [
        (["compare", str(bad)], "bad.csv: row 2, column human: 'yes' is not a label"),
        (["compare", str(tmp_path / "none.csv")], "none.csv: no such file"),
        (["compare", str(EXAMPLE), "--rates", "pooled"], "--rates"),
        (["compare", str(EXAMPLE), "--gamma", "1.5"], "--gamma"),
        (["compare", str(EXAMPLE), "--frobnicate"], "--frobnicate"),
        (["compare", str(EXAMPLE), "--power", "0.9"], "--power: needs --cost-metric"),
        (["compare", str(EXAMPLE), "-o", str(tmp_path / "f.nope")], "-o"),
        (["compare", str(EXAMPLE), "--cost-human", "2"], "--cost-human: needs --cost-metric"),
    ]:
        assert main([*argv, "--out", str(tmp_path / "never")]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("sweep: error: ") and "\n" not in err and needle in err, err
    assert not (tmp_path / "never").exists()
    # --out naming a file is refused before anything is computed or written.
    assert main(["compare", str(EXAMPLE), "--out", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sweep: error: --out: {str(bad)!r} is a file, not a directory"


def test_paths_that_cannot_be_written_are_refused_before_the_analysis(tmp_path, capsys):
    """A file in the way of --out or -o: exit 2, one line, before anything is computed;
    missing directories are created, and the tables are written 0644 as sweep run's."""
    blocker, folder = tmp_path / "file", tmp_path / "d.png"
    blocker.write_text("x")
    folder.mkdir()
    for argv, message in [
        (["--out", str(blocker / "s")], f"--out: {str(blocker / 's')!r} cannot be made: "),
        (["-o", str(blocker / "x.png")], f"-o: {str(blocker / 'x.png')!r} cannot be made: "),
        (["-o", str(folder)], f"-o: {str(folder)!r} is a directory, not a file"),
    ]:
        assert main(["compare", str(EXAMPLE), *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"sweep: error: {message}") and "\n" not in err, err
    out, fig = tmp_path / "new" / "tables", tmp_path / "new" / "figs" / "p.png"
    previous = os.umask(0o022)
    try:
        assert main(["compare", str(EXAMPLE), "--out", str(out), "-o", str(fig)]) == 0
    finally:
        os.umask(previous)
    assert fig.is_file()
    for path in (out / "systems.parquet", out / "pairs.parquet"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    assert not list(out.glob(".*"))


def test_one_system_is_not_a_comparison(tmp_path, capsys):
    one = tmp_path / "one.csv"
    one.write_text("system,human,metric\nA,1,\nA,0,1\n")
    assert main(["compare", str(one), "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sweep: error: {one}: a comparison needs two systems or more; it has one ('A')"
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("rates", ["per-system", "shared"])
def test_nuts_agrees_with_quadrature_within_monte_carlo_error(rates):
    exact = sweep.compare(EXAMPLE, rates=rates)
    sampled = sweep.compare(EXAMPLE, rates=rates, method="nuts", seed=3)
    s = sampled.settings
    assert s["method"] == "nuts" and s["rhat_max"] < 1.01 and s["ess_min"] > 400
    e = exact.systems.set_index("system")
    n = sampled.systems.set_index("system").loc[e.index]
    mcse = e["alpha_sd"] / np.sqrt(s["ess_min"])
    assert (np.abs(n["alpha_mean"] - e["alpha_mean"]) < 5 * mcse).all()
    assert (np.abs(n["alpha_sd"] / e["alpha_sd"] - 1) < 0.1).all()
    names = list(e.index)

    def matrix(result):
        order = [list(result.systems["system"]).index(x) for x in names]
        return result.p_better[np.ix_(order, order)]

    p, q = matrix(exact), matrix(sampled)
    bound = 4 * np.sqrt(np.maximum(p * (1 - p), 1e-4) / s["ess_min"])
    assert (np.abs(p - q) <= bound + 1e-3).all(), (p, q)


def test_a_binary_file_is_described_not_echoed(tmp_path, capsys):
    binary = tmp_path / "ratings.csv"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) * 3)
    bad_text = tmp_path / "bad.csv"
    bad_text.write_bytes(b"system,human,metric\nA,1,\nB,\xff\xfe,1\n")
    for path in (binary, bad_text):
        assert main(["compare", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"sweep: error: {path}: unreadable as CSV") and "\n" not in err
        assert err.isprintable(), err


def test_a_system_without_human_ratings_is_warned_about_under_shared_rates_too():
    counts = counts_table(*SMALL.itertuples(index=False), ("d", 0, 0, 0, 0, 0, 0, 90, 50))
    shared = sweep.compare(counts, rates="shared")
    assert any("'d' has no human ratings" in w and "pooled" in w for w in shared.warnings)
    assert not any("'a'" in w for w in shared.warnings)
    p = shared.p_better
    assert np.all((p >= 0) & (p <= 1)) and (shared.pairs["p_a_better"].between(0, 1)).all()


def test_items_with_several_annotators_on_the_command_line(tmp_path, capsys):
    """Three annotators per item: refused by default (exit 2, one line, nothing written);
    combined on request, with what was read in the header and the JSON; never each label
    as its own rating (``all``: refused, saying why)."""
    path = tmp_path / "three.csv"
    path.write_text(
        "system,item,annotator,human,metric\n"
        "A,q1,x,1,1\nA,q1,y,1,\nA,q1,z,0,\nA,q2,x,0,0\nA,q2,y,0,\nA,q3,x,1,\nA,q3,y,1,\n"
        "B,q1,x,0,1\nB,q2,x,1,0\nB,q3,x,1,\n"
    )
    out = tmp_path / "out"
    assert main(["compare", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"sweep: error: {path}: row 2, column human: system 'A', item 'q1' has 3 human labels "
        "(2 × 1, 1 × 0); say how to combine several human labels of one item: "
        "--annotators majority"
    )
    assert not out.exists()
    assert main(["compare", str(path), "--annotators", "majority"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(
        f"read {path}: 10 rows, 6 (system, item) outputs of 2 systems; 10 human and 4 metric "
        "labels\n"
    )
    assert captured.err == (
        "sweep: ignored columns: 'annotator' (read: system, item, human, metric)\n"
        "sweep: --annotators majority: 3 items with several human labels took their majority "
        "(1 of them disagreeing)\n"
    )
    assert main(["compare", str(path), "--annotators", "majority", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    a = next(s for s in answer["systems"] if s["system"] == "A")
    assert (a["n_outputs"], a["n_human"], a["n_paired"], a["n_metric"]) == (3, 3, 2, 0)
    assert answer["settings"]["annotators"] == "majority"
    assert answer["read"]["several_human"] == 3 and len(answer["read"]["notes"]) == 2
    assert answer["read"]["ignored"] == ["annotator"]
    assert main(["compare", str(path), "--annotators", "all", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sweep: error: --annotators: 'all' is not allowed: the labels of one")
    assert not out.exists()


def thousand_systems(seed: int = 11) -> pd.DataFrame:
    """1,000 systems' counts: 980 rated by humans alone (20–60 ratings), 20 also by the
    metric (paired and metric-only ratings)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(1000):
        n = int(rng.integers(20, 61))
        k = int(rng.binomial(n, rng.uniform(0.3, 0.9)))
        if i % 50:
            rows.append((f"s{i:04d}", n, k, 0, 0, 0, 0, 0, 0))
        else:  # 10 paired (6 rated 1 by humans), 100 metric-only
            rows.append((f"s{i:04d}", n, max(k, 6), 10, 6, 5, 3, 100, int(rng.integers(30, 80))))
    return counts_table(*rows)


# few systems: test_without_metric_ratings_every_p_is_the_exact_two_beta_probability
@pytest.mark.long
@pytest.mark.parametrize("rates", ["per-system", "shared"])
def test_a_thousand_systems(rates, tmp_path, capsys):
    """A leaderboard: every one of 499,500 pairs, each P in [0, 1]; under per-system rates the
    human-only systems' P against two Betas' exact one; the text ranks the systems, counts the
    significant pairs and says that a leaderboard needs an adjustment."""
    counts = thousand_systems()
    result = compare_systems(counts, rates=rates)
    pairs = result.pairs
    assert len(pairs) == 499_500 and len(result.systems) == 1000
    assert pairs["p_a_better"].between(0, 1).all()
    assert np.abs(result.p_better + result.p_better.T - 1).max() <= 1e-15
    if rates == "per-system":
        systems = result.systems.set_index("system")
        beta = systems[systems["n_metric"] == 0]
        rng = np.random.default_rng(0)
        for _ in range(40):
            a, b = rng.choice(beta.index, 2, replace=False)
            ka, kb = (counts.set_index("system").loc[x] for x in (a, b))
            da = stats.beta(ka.n_pos + 1, ka.n_phi - ka.n_pos + 1)
            db = stats.beta(kb.n_pos + 1, kb.n_phi - kb.n_pos + 1)
            exact = integrate.quad(
                lambda x, da=da, db=db: da.pdf(x) * db.cdf(x), 0, 1, epsabs=1e-13
            )[0]
            i, j = (systems.index.get_loc(x) for x in (a, b))
            assert abs(result.p_better[i, j] - exact) < 1e-9, (a, b)
    path = tmp_path / "leaderboard.csv"
    counts.to_csv(path, index=False)
    assert main(["compare", str(path), "--rates", rates]) == 0
    text = capsys.readouterr().out
    called = int(pairs["significant"].sum())
    assert f"pairs: {called:,} of 499,500 significant at γ = 0.05 (each pair's own" in text
    assert "a leaderboard needs --adjust holm" in text and " vs " not in text
    assert len(text.splitlines()) < 1020  # the ranking and a few lines, no pair listed


@pytest.mark.parametrize(("adjust", "word"), [("holm", "Holm"), ("bh", "BH")])
def test_the_text_shows_the_adjusted_values_its_stars_follow(adjust, word):
    result = compare_systems(SMALL, adjust=adjust, gamma=0.45)
    text = comparison_text(result)
    assert f"{word}-adjusted two-sided tail" in text and "* adjusted value ≤ γ = 0.45" in text
    for row in result.pairs.itertuples():
        cell = f"({row.p_adjusted:.3f})" + ("*" if row.significant else " ")
        assert cell in text, cell
    assert result.pairs["significant"].any() and not result.pairs["significant"].all()


@pytest.mark.parametrize("rates", ["per-system", "shared"])
def test_progress_names_the_stages(rates, capsys):
    compare_systems(SMALL, rates=rates, progress=True)
    err = capsys.readouterr().err
    stages = ["α densities", "pairs"] if rates == "per-system" else ["(ρ, η) rule of 12²", "pairs"]
    assert all(f"compare: {stage}" in err for stage in stages), err
    compare_systems(SMALL, rates=rates)
    assert capsys.readouterr().err == ""
