"""Every command the README and the sweep files' headers show runs as written (no Ray).

The rules (what is extracted, set-up, stand-ins, shown output, exit
statuses) are in :mod:`tests.examples`; the Ray commands run in
``tests/test_examples_ray.py``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from binmetric_sweep.sweep.spec.config import load_sweep
from binmetric_sweep.sweep.spec.grid import expand_grid
from tests import examples

SOURCES = examples.sources()


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES)
def test_documented_commands_run_as_written(source, tmp_path):
    """Each document's commands, in order, in a fresh directory: exit statuses and output."""
    commands = [c for c in examples.document(source).commands if c.runs and not c.needs_ray]
    assert commands, f"{source} shows no command to run"
    failures = examples.run_in_order(commands, examples.workdir(tmp_path))
    assert not failures, "\n\n".join(failures)


def test_commands_found_and_not_run_are_exactly_the_listed_skips():
    """No documented command goes unrun without a listed reason, and no listing is stale."""
    documents = [examples.document(source) for source in SOURCES]
    unrun = [c for d in documents for c in d.commands if not c.runs]
    for command in unrun:
        assert command.skipped, f"{command.where}: found, not run, not listed: {command.text!r}"
    hits = Counter(p for c in unrun for p in examples.SKIPPED if c.text.startswith(p))
    assert hits == Counter(list(examples.SKIPPED)), f"each SKIPPED entry must match once: {hits}"
    used = Counter(pattern for d in documents for _, pattern in d.setup)
    assert set(used) == set(examples.SETUP), f"a SETUP pattern matches nothing: {used}"


def test_every_document_has_its_commands_found():
    """The extraction sees what the documents are known to show (a guard on the parser)."""
    readme = examples.document("README.md").commands
    texts = [c.text for c in readme]
    assert "sweep show runs/quickstart --rows n_phi --cols n_m --value eps" in texts
    assert any(c.language == "python" for c in readme)
    assert any(c.shown and c.text.startswith("sweep plan ") for c in readme)
    assert any(c.shown and "..." in c.shown for c in readme)  # the quickstart table
    for source in SOURCES[1:]:
        runs = [c for c in examples.document(source).commands if c.text.startswith("sweep run")]
        assert runs, f"{source}: no 'sweep run' in its header"


@pytest.mark.parametrize("name", sorted(examples.STAND_INS))
def test_stand_ins_are_smaller_copies_of_the_shipped_sweeps(name):
    """A stand-in changes only the method (and sampler) and cuts axes to shipped values; an
    arena's, which has no quadrature, fewer replicates and a shorter sampler."""
    shipped = load_sweep(examples.REPO / "configs" / name)
    small = load_sweep(examples.stand_in(name))
    light = examples.STAND_INS[name] is examples.light_arena
    if light:
        assert small.replicates < shipped.replicates
        assert small.sampler.warmup + small.sampler.samples < (
            shipped.sampler.warmup + shipped.sampler.samples
        )
    else:
        assert small.method == "quadrature" or not small.has_posterior
    same = ("name", "counts", "seed", "interval", "gamma", "power")
    same += () if light else ("replicates",)
    assert [getattr(small, f) for f in same] == [getattr(shipped, f) for f in same]
    ids, shipped_ids = (set(expand_grid(s)["config_id"]) for s in (small, shipped))
    assert ids <= shipped_ids, "a stand-in configuration is not shipped"
    if examples.STAND_INS[name] is examples.by_quadrature:
        assert ids == shipped_ids, "a stand-in by quadrature alone keeps the whole grid"
    assert len(ids) <= 200, "a stand-in should be small"


SHOWN = ["a   1", "b   2", "...", "e   5"]
OUTPUT = ["a   1", "b   2", "c   3", "d   4", "e   5 "]


@pytest.mark.parametrize(
    ("shown", "output", "abridged", "matches"),
    [
        (SHOWN, OUTPUT, False, True),
        (SHOWN, [*OUTPUT, "note"], False, False),  # an output line the document leaves out
        (SHOWN, OUTPUT[:2] + OUTPUT[-1:], False, True),  # '...' may stand for no lines
        (["a   1", "c   3"], OUTPUT, False, False),  # left out without '...'
        (["a   1", "c   3"], OUTPUT, True, True),
        (["c   3", "a   1"], OUTPUT, True, False),  # out of order
        (["a  1"], ["a   1"], True, False),  # inner spaces count
    ],
)
def test_shown_output_is_compared_exactly(shown, output, abridged, matches):
    """The comparison of shown and printed lines (rule 4) tells them apart."""
    assert examples.shown_matches(shown, output, abridged) is matches


def test_chains_split_outside_quotes_and_setup_is_stripped():
    """`&&` splits a chain except inside quotes; the set-up prefixes go."""
    line = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e . && a "x && y" && b'
    rest, used = examples.strip_setup(line)
    assert examples.split_chain(rest) == ['a "x && y"', "b"] and len(used) == 1
