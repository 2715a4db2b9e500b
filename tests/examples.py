"""The commands the documents show, extracted and run as written.

Used by ``tests/test_examples.py`` (the commands that need no Ray) and
``tests/test_examples_ray.py`` (those that start or join Ray). The documents
are README.md and the header comments of ``configs/*.yaml``.

What counts as a command
    README.md: each line of a ```bash block; the whole of a ```python block
    (one program, fed to ``python -``); each ``$ `` line of an untagged or
    ```text block, the lines after it (up to the next ``$ ``) being its shown
    output. ``&&`` chains are split into their commands (same line number).
    An untagged block that follows a runnable block with only blank lines
    between is the shown output of that block's last command. Any other block
    (a usage synopsis, a listing, a command that cannot run here) is found but
    not run, and must be listed in :data:`SKIPPED`.
    configs/*.yaml: each comment line of the leading header indented by two
    or more spaces after the ``#`` (``#   sweep run ...``), without a trailing
    ``  # comment`` (bash would drop it too).

Rules
1.  Where and how. Each document runs in a fresh temporary directory that
    holds ``configs/`` (copies of the repo's, with the :data:`STAND_INS` over
    some) and no ``runs/`` (git ignores it, so a clone has none: the commands
    create it). The venv's ``bin`` (``Path(sys.executable).parent``) is first
    on PATH, so ``sweep``, ``python`` and ``ray`` are this environment's;
    PYTHONPATH and RAY_ADDRESS are unset, as in a user's shell. Each command
    runs through ``bash`` under ``set -euo pipefail``, one at a time and in
    document order, since later commands read earlier outputs. The compile
    cache is the test session's (``JAX_COMPILATION_CACHE_DIR`` from
    ``tests/conftest.py``, inherited), so the commands compile what the rest
    of the suite has not.
2.  Set-up is the test's own environment: the leading patterns of
    :data:`SETUP` (a fresh venv and ``pip install``, ``pip install`` of an
    extra) are stripped from a command, and a line that is nothing but set-up
    is dropped. Everything found and not run (a command or a block) is in
    :data:`SKIPPED` with its reason, and the test asserts that the found and
    not run are exactly those: each entry (a prefix) matches exactly one item,
    each item exactly one entry, so a new command added to a document cannot
    slip through unrun, and a stale entry fails too.
3.  Stand-ins (:data:`STAND_INS`): a long run is replaced by a small one
    written at the same path under the temporary ``configs/``, so the command
    line stays as written and writes the same output directory, and the later
    ``show``/``status``/``plot`` commands run as written against it. Each is
    the shipped sweep with a few keys changed, its configurations a subset of
    the shipped ones (checked):

    - ``published-tables.yaml``: NUTS on 112 configurations takes minutes
      (NUTS programs alone take tens of seconds to compile on CPU); the same
      grid by ``method: quadrature`` (``sampler`` dropped) takes seconds and
      fills the same table.
    - ``legacy-grid.yaml``: 158,400 configurations by NUTS (about a GPU-hour);
      each axis cut to two or three of its own values (alpha 0, 0.6, 1; rho
      0.55, 0.95; eta 0.75; n_phi and n_rho_eta 0, 100; n_m 0, 1000: 48
      configurations, both gammas) by quadrature. No later command names a
      ``--where`` value of it; one that did would fail here until the cut
      kept that value.
    - ``estimators.yaml``: 372 configurations × 2,000 replicates, six
      estimators (minutes); its first block cut to the values its header's
      ``show`` and ``plot`` commands name (2 configurations, the same
      replicates).
    - ``preferences-posterior.yaml``: 600 preference NUTS fits (about 45 minutes on
      2 cores); the same grid's classical estimators alone (seconds). Its
      header's ``show`` commands filter on no estimator, so they run against
      it as written; the posterior's path through a preference sweep is
      tested in tests/sweep/test_preference.py.
    - ``arena.yaml``: 1,440 arena NUTS fits (about 11 minutes on 2 cores); the same
      configurations with 2 replicates and 2 chains × (50 + 50) (seconds after their
      programs compile). Its header's ``show`` and ``plot`` commands run as written; an
      arena sweep's numbers are checked against the kernels in
      tests/sweep/test_arena_sweep.py.

    Shipped sweeps run as written: ``quickstart.yaml`` (about 30 s cold on 2
    cores, seconds with its programs cached) and ``sampled-coverage.yaml``
    (about 37 s cold, 5 s cached: compiling dominates, and 4 replicates
    instead of 50 measured 38 s cold, 3 s cached, so cutting them saves
    nothing worth the difference), and ``preferences.yaml`` and
    ``scales.yaml`` (the classical estimators alone: seconds).
4.  Shown output: a command's shown lines are compared with its standard
    output line by line, exactly after trailing spaces are stripped. A ``...``
    line stands for lines left out; elsewhere the shown lines must be the
    output's lines, consecutive, from its first line to its last. Commands
    matching :data:`ABRIDGED` (``sweep plan``: the README shows its frontier
    abridged, without a marker) need their shown lines only to appear in the
    output in order.
5.  Ray: commands with ``--backend ray`` run only in
    ``tests/test_examples_ray.py``, each in a fresh directory, against a Ray
    head that module starts with ``ray start --head`` (the venv's ``ray``);
    a command without ``--address`` joins it as the latest local instance.
6.  Exit statuses: every command must exit 0, unless :data:`EXIT_STATUS`
    (statuses the documents themselves give) says otherwise.
7.  Failures of one document are collected, not stopped at, and reported
    together: the command, where it is written, its exit status, the tail of
    its standard error, and the shown lines against the output.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

#: Set-up a user does and the test's environment has done (rule 2): regular
#: expressions matched at the start of a command line, stripped, with why.
SETUP = {
    r"python3 -m venv \.venv && \. \.venv/bin/activate && pip install [^&]+ && ": (
        "a fresh venv with the package installed: the test runs in its own venv"
    ),
    r'pip install -e "\.\[ray\]" && ': "the [ray] extra: Ray is part of the test extras",
    r'pip install -e \. "jax\[cuda12\]"$': "JAX's CUDA build, for a GPU: not this environment",
}

#: Everything found and not run (rule 2): a prefix of the command, or of an
#: unrun block's first line, and why it is not run.
SKIPPED = {
    "python -m pytest -q": "the test suite itself, of which this test is part",
    "sweep run SWEEP.yaml --out DIR ": "the usage synopsis: placeholders, not commands",
    "DIR/sweep.json ": "a listing of output files, not commands",
}

#: Commands whose shown output is abridged without a ``...`` marker (rule 4).
ABRIDGED = {
    "sweep plan ": "the README shows the frontier abridged (and says so)",
}

#: Exit statuses other than 0 that the documents give for a command (rule 6),
#: by prefix. ``sweep plan`` exits 3 for an unreachable target, but no
#: documented example has one.
EXIT_STATUS: dict[str, int] = {}

#: Seconds a single command may take before it counts as failed.
COMMAND_TIMEOUT = 600

#: Shown-output lines that stand for lines left out (rule 4).
ELLIPSIS = "..."

RUNNABLE = ("bash", "python")


# --- extraction -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Command:
    """One documented command.

    ``language`` is ``bash``, ``python`` (a program for ``python -``) or
    ``text`` (a block found but not runnable: ``text`` is its first line).
    ``shown`` is the output the document shows for it, if any.
    """

    source: str
    line: int
    text: str
    language: str = "bash"
    shown: tuple[str, ...] | None = None

    @property
    def where(self) -> str:
        """``source:line``, where the command is written."""
        return f"{self.source}:{self.line}"

    @property
    def skipped(self) -> str | None:
        """Why it is not run (its :data:`SKIPPED` entry), or None."""
        return _prefixed(SKIPPED, self.text)

    @property
    def runs(self) -> bool:
        """Whether the tests run it."""
        return self.language in RUNNABLE and self.skipped is None

    @property
    def needs_ray(self) -> bool:
        """Whether it starts or joins Ray (run by tests/test_examples_ray.py only)."""
        return self.language == "bash" and "--backend ray" in self.text

    @property
    def abridged(self) -> bool:
        """Whether its shown output leaves lines out without a marker."""
        return _prefixed(ABRIDGED, self.text) is not None

    @property
    def exit_status(self) -> int:
        """The exit status the documents give it."""
        status = _prefixed(EXIT_STATUS, self.text)
        return 0 if status is None else status


@dataclasses.dataclass(frozen=True)
class Document:
    """The commands of one document, in order, and the set-up stripped from them."""

    source: str
    commands: tuple[Command, ...]
    setup: tuple[tuple[str, str], ...]  # (where, pattern of SETUP)


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced block: its opening line, tag, lines, and whether only blanks precede it
    since the previous block closed."""

    line: int
    tag: str
    lines: tuple[str, ...]
    follows_block: bool


def _prefixed(table: dict, text: str):
    """The value of the entry of ``table`` whose key ``text`` starts with, or None."""
    for prefix, value in table.items():
        if text.startswith(prefix):
            return value
    return None


def sources() -> list[str]:
    """The documents, as paths relative to the repo: README.md, then configs/*.yaml."""
    configs = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "configs").glob("*.yaml"))
    return ["README.md", *configs]


def document(source: str) -> Document:
    """The commands written in ``source`` (a path relative to the repo)."""
    text = (REPO / source).read_text(encoding="utf-8")
    if source.endswith(".md"):
        return _markdown(source, text)
    return _config_header(source, text)


def fenced_blocks(text: str) -> list[Block]:
    """The ``` blocks of a Markdown text (fences at the start of a line)."""
    blocks, lines = [], text.splitlines()
    closed, i = None, 0  # closed: the index of the previous closing fence
    while i < len(lines):
        opening = re.fullmatch(r"```(\S*)\s*", lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not re.fullmatch(r"```\s*", lines[end]):
            end += 1
        follows = closed is not None and all(not s.strip() for s in lines[closed + 1 : i])
        blocks.append(Block(i + 1, opening.group(1), tuple(lines[i + 1 : end]), follows))
        closed, i = end, end + 1
    return blocks


def split_chain(line: str) -> list[str]:
    """A command line split at ``&&`` outside quotes, each part stripped."""
    parts, current, quote, i = [], "", None, 0
    while i < len(line):
        char = line[i]
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif line.startswith("&&", i):
            parts.append(current.strip())
            current, i = "", i + 2
            continue
        current += char
        i += 1
    return [p for p in [*parts, current.strip()] if p]


def strip_setup(line: str) -> tuple[str, list[str]]:
    """``line`` without its leading set-up (:data:`SETUP`), and the patterns stripped."""
    used, changed = [], True
    while changed:
        changed = False
        for pattern in SETUP:
            match = re.match(pattern, line)
            if match:
                line, changed = line[match.end() :].strip(), True
                used.append(pattern)
    return line, used


def _commands_of_line(source: str, number: int, line: str, setup: list) -> list[Command]:
    """The commands of one documented command line, set-up stripped and chains split."""
    rest, used = strip_setup(line.strip())
    setup.extend((f"{source}:{number}", pattern) for pattern in used)
    return [Command(source, number, part) for part in split_chain(rest)]


def _with_shown(commands: list[Command], shown: list[str]) -> None:
    """Give the last command of ``commands`` its shown output (in place)."""
    if commands and shown:
        commands[-1] = dataclasses.replace(commands[-1], shown=tuple(shown))


def _markdown(source: str, text: str) -> Document:
    """The commands of a Markdown document's fenced blocks."""
    commands: list[Command] = []
    setup: list[tuple[str, str]] = []
    previous_runnable: list[Command] = []  # the commands of the block just before
    for block in fenced_blocks(text):
        first = block.line + 1
        this: list[Command] = []
        if block.tag == "bash":
            for offset, line in enumerate(block.lines):
                if line.strip() and not line.lstrip().startswith("#"):
                    this += _commands_of_line(source, first + offset, line, setup)
        elif block.tag == "python":
            this = [Command(source, first, "\n".join(block.lines) + "\n", "python")]
        elif block.tag in ("", "text") and any(s.startswith("$ ") for s in block.lines):
            shown: list[str] = []
            for offset, line in enumerate(block.lines):
                if line.startswith("$ "):
                    _with_shown(this, shown)
                    this += _commands_of_line(source, first + offset, line[2:], setup)
                    shown = []
                else:
                    shown.append(line)
            _with_shown(this, shown)
        elif block.tag == "" and block.follows_block and previous_runnable:
            _with_shown(commands, list(block.lines))
            previous_runnable = []
            continue
        else:
            lead = next((s.strip() for s in block.lines if s.strip()), "")
            commands.append(Command(source, first, lead, "text"))
            previous_runnable = []
            continue
        commands += this
        previous_runnable = this
    return Document(source, tuple(commands), tuple(setup))


def _config_header(source: str, text: str) -> Document:
    """The commands of a sweep file's leading comment header."""
    commands: list[Command] = []
    setup: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("#"):
            break
        written = re.fullmatch(r"#\s{2,}(\S.*)", line)
        if written:
            command = re.sub(r"\s{2,}#.*$", "", written.group(1))
            commands += _commands_of_line(source, number, command, setup)
    return Document(source, tuple(commands), tuple(setup))


# --- stand-ins ------------------------------------------------------------------------


def by_quadrature(sweep: dict) -> dict:
    """The same sweep solved exactly: ``method: quadrature``, no ``sampler``."""
    sweep = {**sweep, "method": "quadrature"}
    sweep.pop("sampler", None)
    return sweep


#: The legacy grid's axes cut to a few of their own values.
LEGACY_AXES = {
    "alpha": [0.0, 0.6, 1.0],
    "rho": [0.55, 0.95],
    "eta": [0.75],
    "n_phi": [0, 100],
    "n_rho_eta": [0, 100],
    "n_m": [0, 1000],
}


def legacy_cut(sweep: dict) -> dict:
    """The legacy grid with :data:`LEGACY_AXES`, by quadrature."""
    sweep = by_quadrature(sweep)
    return {**sweep, "grid": {**sweep["grid"], **LEGACY_AXES}}


#: What the estimators sweep's header commands show: its first block (a shared
#: paired set) at alpha 0.5, rho 0.7, n_m 10,000, two sizes of n_phi.
ESTIMATORS_AXES = {"alpha": [0.5], "rho": [0.7], "n_phi": [10, 100], "n_m": [10000]}


def estimators_cut(sweep: dict) -> dict:
    """The estimators sweep's first block cut to :data:`ESTIMATORS_AXES`."""
    return {**sweep, "grid": [{**sweep["grid"][0], **ESTIMATORS_AXES}]}


def without_posterior(sweep: dict) -> dict:
    """The same sweep's classical estimators alone (``bayes`` dropped)."""
    return {**sweep, "estimators": [e for e in sweep["estimators"] if e != "bayes"]}


def light_arena(sweep: dict) -> dict:
    """The same arena sweep with 2 replicates and 2 chains × (50 + 50)."""
    return {**sweep, "replicates": 2, "sampler": {"chains": 2, "warmup": 50, "samples": 50}}


#: Stand-ins (rule 3): sweep file name -> change of the shipped sweep (its reason
#: is in the module docstring).
STAND_INS: dict[str, Callable[[dict], dict]] = {
    "published-tables.yaml": by_quadrature,
    "legacy-grid.yaml": legacy_cut,
    "estimators.yaml": estimators_cut,
    "preferences-posterior.yaml": without_posterior,
    "arena.yaml": light_arena,
}


def stand_in(name: str) -> dict:
    """The stand-in sweep for ``configs/<name>``."""
    shipped = yaml.safe_load((REPO / "configs" / name).read_text(encoding="utf-8"))
    return STAND_INS[name](shipped)


# --- running --------------------------------------------------------------------------


def workdir(root: Path) -> Path:
    """A fresh working directory under ``root``: configs/ and examples/ copied, stand-ins in
    place."""
    work = root / "work"
    shutil.copytree(REPO / "configs", work / "configs")
    shutil.copytree(REPO / "examples", work / "examples")
    for name in STAND_INS:
        header = f"# Stand-in for the shipped configs/{name} (tests/examples.py, rule 3).\n"
        text = header + yaml.safe_dump(stand_in(name), sort_keys=False)
        (work / "configs" / name).write_text(text, encoding="utf-8")
    return work


def environment() -> dict[str, str]:
    """The commands' environment: this one, the venv's bin first on PATH, and no
    PYTHONPATH or RAY_ADDRESS."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run(command: Command, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run one command through bash (``set -euo pipefail``) in ``cwd``."""
    if command.language == "python":
        script, given = "python -", command.text
    else:
        script, given = command.text, None
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=cwd,
        env=env,
        input=given,
        stdin=None if given is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )


def shown_matches(shown: list[str], output: list[str], abridged: bool = False) -> bool:
    """Whether ``output`` is what ``shown`` shows (rule 4; lines compared after rstrip).

    ``...`` lines stand for any lines (none included) left out; elsewhere the
    shown lines are the output's, consecutive, first to last. ``abridged``:
    the shown lines need only appear in the output in order.
    """
    shown = [s.rstrip() for s in shown]
    output = [s.rstrip() for s in output]
    if abridged:
        rest = iter(output)
        return all(any(line == got for got in rest) for line in shown)
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == ELLIPSIS else re.escape(line + "\n") for line in shown
    )
    return re.fullmatch(pattern, "".join(s + "\n" for s in output)) is not None


def problems(command: Command, done: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with a command's run: its exit status, its output against the shown."""
    found = []
    if done.returncode != command.exit_status:
        found.append(
            f"exit status {done.returncode}, expected {command.exit_status}\n"
            f"stderr (tail):\n{done.stderr[-3000:]}"
        )
    output = done.stdout.splitlines()
    if command.shown is not None and not shown_matches(
        list(command.shown), output, command.abridged
    ):
        diff = difflib.unified_diff(
            [s.rstrip() for s in command.shown],
            [s.rstrip() for s in output],
            "shown in the document",
            "printed",
            lineterm="",
        )
        how = "in order" if command.abridged else "as shown ('...' for left-out lines)"
        found.append(f"output differs from the shown ({how}):\n" + "\n".join(diff))
    return found


def run_in_order(commands: list[Command], cwd: Path) -> list[str]:
    """Run ``commands`` one after another in ``cwd``; one report per failed command."""
    env, failures = environment(), []
    for command in commands:
        try:
            done = run(command, cwd, env)
        except subprocess.TimeoutExpired:
            failures.append(f"{command.where}: {command.text}\ntimed out ({COMMAND_TIMEOUT} s)")
            continue
        found = problems(command, done)
        if found:
            failures.append(f"{command.where}: {command.text.strip()}\n" + "\n".join(found))
    return failures
