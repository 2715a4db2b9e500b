"""The documented commands that start or join Ray run as written, against a local Ray head.

The module starts one head, as a user would before ``--address auto``:
``ray start --head --num-cpus=2 --include-dashboard=false
--disable-usage-stats`` (the venv's ``ray``; ``--block`` keeps it in the
foreground, in its own process group). Afterwards it kills that process group
(what ``ray stop --force`` does, limited to the processes this module started,
so another Ray on the machine is left alone) and removes the address file
``ray start`` wrote, as ``ray stop`` does. Each command runs in a fresh
directory with the stand-ins of :mod:`tests.examples`; those without
``--address`` join the head as the latest local instance.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import examples

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

COMMANDS = [
    c
    for source in examples.sources()
    for c in examples.document(source).commands
    if c.runs and c.needs_ray
]

HEAD = ["start", "--head", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"]


def address_file() -> Path:
    """The file where ``ray start`` leaves its address for ``ray.init()`` and ``auto``."""
    try:
        from ray._common.utils import get_ray_address_file
    except ImportError:  # Ray before 2.47
        from ray._private.utils import get_ray_address_file
    return Path(get_ray_address_file(None))


def wait_started(head: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    """Wait until ``ray start`` says the runtime started; fail with its log if it exits."""
    deadline = time.monotonic() + timeout
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if head.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"ray start failed (status {head.poll()}):\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop_group(head: subprocess.Popen, timeout: float = 30) -> None:
    """SIGKILL the head's process group and wait until none of it is left."""
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(head.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """A Ray head on this machine for the module's commands."""
    where = tmp_path_factory.mktemp("ray-head")
    log = where / "ray-start.log"
    ray_cli = str(Path(sys.executable).parent / "ray")
    with log.open("w") as out:
        head = subprocess.Popen(
            [ray_cli, *HEAD, "--block"],
            cwd=where,
            env=examples.environment(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_started(head, log)
        ours = address_file().read_text().strip() if address_file().exists() else None
        yield
    finally:
        stop_group(head)
    if ours and address_file().exists() and address_file().read_text().strip() == ours:
        address_file().unlink()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.where)
def test_documented_ray_command_runs_as_written(ray_head, command, tmp_path):
    """One Ray command, in a fresh directory, exits as documented."""
    failures = examples.run_in_order([command], examples.workdir(tmp_path))
    assert not failures, "\n\n".join(failures)
