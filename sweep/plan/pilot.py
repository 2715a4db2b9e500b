"""A pilot: a scenario's α, ρ and η read off a small file of one system's ratings.

A pilot file has the columns ``human`` and ``metric`` (1, 0 or empty, read as
``sweep compare`` reads them: :mod:`binmetric_sweep.sweep.compare.ratings`)
and optionally ``item`` (an item's labels gathered from all its rows) and
``system`` (then one system only: α is one system's rate). It is CSV
(``.tsv`` with tabs), Parquet or JSON Lines, by its suffix.

Its counts are the model's (docs/model.md): N_Φ outputs with a human label,
n₊ of them adequate; N_ρη with both labels, P of them adequate by the human,
n_ρ of those called 1 by the metric and n_η of the N_ρη − P called 0. Under
the model's uniform priors the posteriors are Beta, and the rates planned
with are their means:

- α: Beta(n₊ + 1, N_Φ − n₊ + 1), mean (n₊ + 1)/(N_Φ + 2);
- ρ: Beta(n_ρ + 1, P − n_ρ + 1), mean (n_ρ + 1)/(P + 2);
- η: Beta(n_η + 1, N_ρη − P − n_η + 1), mean (n_η + 1)/(N_ρη − P + 2).

Every human label counts toward α, paired ones included. A metric-only
output is not used: it speaks of α only through ρ and η (its rate is
αρ + (1 − α)(1 − η)), so the exact posterior of α would no longer be a Beta;
leaving it out keeps these posteriors exact and loses what a pilot's few
such outputs would add. Why not the agreement alone: it is αρ + (1 − α)η,
so one agreement is many (ρ, η), and the plans differ between them
(docs/model.md, "Planning a campaign").
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from binmetric_sweep.sweep.errors import SweepError, shown

__all__ = ["Pilot", "read_pilot"]

#: A pilot file's formats, by suffix (those of ``sweep compare``'s ratings).
_FORMATS = {".csv": ",", ".tsv": "\t", ".parquet": None, ".pq": None}
_JSON_LINES = (".jsonl", ".ndjson")
#: The rates a pilot gives, by :class:`~.spec.PlanSpec` field, with their symbols.
RATES = {"alpha": "α", "rho": "ρ", "eta": "η"}


def _beta(successes: int, trials: int) -> tuple[float, float]:
    """Mean and SD of Beta(successes + 1, trials − successes + 1), the uniform prior's
    posterior."""
    a, b = successes + 1.0, trials - successes + 1.0
    return a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))


class Pilot(NamedTuple):
    """A pilot file's counts and the rates they give (module docstring).

    Attributes:
        source: the file as named.
        rows: records read.
        n_phi: outputs with a human label, N_Φ (paired ones included).
        n_pos: of them, those the human calls adequate, n₊.
        n_rho_eta: outputs with both labels, N_ρη.
        n_pos_paired: of them, those the human calls adequate, P.
        n_tp: of the P, those the metric calls 1 too, n_ρ.
        n_tn: of the N_ρη − P, those the metric calls 0 too, n_η.
        n_m: outputs with a metric label only (not used).
        unlabelled: rows with neither label (skipped).
    """

    source: str
    rows: int
    n_phi: int
    n_pos: int
    n_rho_eta: int
    n_pos_paired: int
    n_tp: int
    n_tn: int
    n_m: int
    unlabelled: int = 0

    @property
    def alpha(self) -> float:
        """α's posterior mean, (n₊ + 1)/(N_Φ + 2)."""
        return _beta(self.n_pos, self.n_phi)[0]

    @property
    def rho(self) -> float:
        """ρ's posterior mean, (n_ρ + 1)/(P + 2)."""
        return _beta(self.n_tp, self.n_pos_paired)[0]

    @property
    def eta(self) -> float:
        """η's posterior mean, (n_η + 1)/(N_ρη − P + 2)."""
        return _beta(self.n_tn, self.n_rho_eta - self.n_pos_paired)[0]

    def sd(self) -> dict[str, float]:
        """The posterior SD of each rate, by field: how well the pilot knows it."""
        return {
            "alpha": _beta(self.n_pos, self.n_phi)[1],
            "rho": _beta(self.n_tp, self.n_pos_paired)[1],
            "eta": _beta(self.n_tn, self.n_rho_eta - self.n_pos_paired)[1],
        }

    def rates(self) -> dict[str, float]:
        """``alpha``, ``rho``, ``eta``: the posterior means, as :class:`~.spec.PlanSpec` fields."""
        return {"alpha": self.alpha, "rho": self.rho, "eta": self.eta}

    @property
    def agreement(self) -> float:
        """Share of the paired outputs on which metric and human agree, (n_ρ + n_η)/N_ρη."""
        return (self.n_tp + self.n_tn) / self.n_rho_eta

    def line(self, spec=None) -> str:
        """One line for a plan's output: what was read and the rates; with ``spec`` (the
        scenario planned), which of them a value given replaced."""
        sd = self.sd()
        values = ", ".join(
            f"{symbol} = {getattr(self, f):.3f} ± {sd[f]:.3f}" for f, symbol in RATES.items()
        )
        human_only = self.n_phi - self.n_rho_eta
        read = f"{self.n_rho_eta:,} paired ratings" + (
            f" + {human_only:,} human-only" if human_only else ""
        )
        out = (
            f"pilot {self.source}: {read} (agreement {self.agreement:.3f}): {values} "
            "(posterior means ± SD, uniform priors)"
        )
        if spec is not None:
            for f, symbol in RATES.items():
                if getattr(spec, f) != getattr(self, f):
                    out += f"; {symbol} = {getattr(spec, f):g} given, used instead"
        return out

    def notes(self) -> list[str]:
        """What was read and not used, and rates the pilot says nothing about."""
        out = []
        if self.n_m:
            out.append(
                f"pilot {self.source}: {self.n_m:,} metric-only ratings not used (α is read "
                "from the human labels alone)"
            )
        if self.unlabelled:
            out.append(f"pilot {self.source}: {self.unlabelled:,} rows with neither label skipped")
        for rate, n, who in (
            ("ρ", self.n_pos_paired, "adequate"),
            ("η", self.n_rho_eta - self.n_pos_paired, "inadequate"),
        ):
            if n == 0:
                out.append(
                    f"pilot {self.source}: no paired output the human calls {who}, so {rate} is "
                    "the prior's 0.5: give it, or pilot more"
                )
        return out

    def as_dict(self) -> dict:
        """The counts, the rates (posterior means) and their SDs, JSON-able."""
        sd = self.sd()
        out = self._asdict() | self.rates()
        out |= {f"{f}_sd": sd[f] for f in RATES}
        return out | {"agreement": self.agreement}


def read_pilot(path: str | os.PathLike, *, label: str = "pilot") -> Pilot:
    """Read a pilot file (module docstring): its counts and, as :class:`Pilot`'s properties,
    the posterior means of α, ρ and η.

    ::

        p = read_pilot("examples/pilot.csv")
        p.alpha, p.rho, p.eta          # what sweep.plan(pilot=...) plans with

    Raises:
        SweepError: one line naming ``label``, the file and the column or row: not a file,
            an unknown format, a missing ``human`` or ``metric`` column, a label that is not
            1, 0 or empty, several systems, several labels of a kind for one item, no
            paired rating.
    """
    from binmetric_sweep.sweep.compare.ratings import counts_from_ratings

    source = os.fspath(path)
    where = f"{label} {source}"
    frame = _read(Path(path), where)
    missing = [c for c in ("human", "metric") if c not in frame.columns]
    if missing:
        raise SweepError(
            f"{where}: no column {missing[0]!r}; a pilot has the columns human and metric "
            "(1, 0 or empty), optionally item and system"
            + f" (it has: {', '.join(shown(c) for c in list(frame.columns)[:12]) or 'none'})"
        )
    if len(frame) == 0:
        raise SweepError(f"{where}: empty (no rows)")
    if "system" in frame.columns:
        names = frame["system"].dropna().astype(str).str.strip()
        systems = list(dict.fromkeys(n for n in names if n))
        if len(systems) > 1:
            raise SweepError(
                f"{where}: column system holds {len(systems)} systems ({shown(systems[0])}, "
                f"{shown(systems[1])}, …); a pilot is one system's ratings: keep one system's rows"
            )
    else:
        frame = frame.assign(system="pilot")
    if "item" in frame.columns:
        _one_label_each(frame, where)
    ratings = counts_from_ratings(frame, where)
    counts = ratings.counts.iloc[0]
    n = {c: int(counts[c]) for c in ("n_phi", "n_pos", "n_rho_eta", "n_pos_paired")}
    n |= {c: int(counts[c]) for c in ("n_tp", "n_tn", "n_m")}
    if n["n_rho_eta"] == 0:
        raise SweepError(
            f"{where}: no paired ratings (an output with both a human and a metric label); "
            "ρ and η are learnt from them"
        )
    unlabelled = int(getattr(ratings.reading, "unlabelled", 0))
    return Pilot(source, len(frame), **n, unlabelled=unlabelled)


def _read(file: Path, where: str) -> pd.DataFrame:
    """The file's table, every cell as written (CSV: text, empty cells empty)."""
    if not file.is_file():
        raise SweepError(f"{where}: {'not a file' if file.exists() else 'no such file'}")
    suffix = file.suffix.lower()
    if suffix not in _FORMATS and suffix not in _JSON_LINES:
        allowed = ", ".join([*_FORMATS, *_JSON_LINES])
        raise SweepError(f"{where}: unknown format {file.suffix!r}; allowed: {allowed}")
    try:
        if suffix in _JSON_LINES:
            return pd.read_json(file, lines=True, dtype=False)
        if _FORMATS[suffix] is None:
            return pd.read_parquet(file)
        return pd.read_csv(file, sep=_FORMATS[suffix], dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise SweepError(f"{where}: empty (no rows)") from None
    except (ValueError, OSError, UnicodeDecodeError, ImportError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise SweepError(f"{where}: unreadable ({why})") from None


def _one_label_each(frame: pd.DataFrame, where: str) -> None:
    """Refuse an item with several labels of one kind: a pilot's item is one output, rated
    once by a human and once by the metric (combine annotators or judge runs first)."""
    items = frame["item"].astype(str).str.strip()
    for column in ("human", "metric"):
        values = frame[column]
        labelled = values.notna() & (values.astype(str).str.strip() != "")
        again = items[labelled].duplicated()
        if again.any():
            row = int(again.to_numpy().nonzero()[0][0])
            item = items[labelled].iloc[row]
            raise SweepError(
                f"{where}: item {shown(item)} has several {column} labels; a pilot takes one of "
                f"each kind per item: combine them first (e.g. their majority)"
            )
