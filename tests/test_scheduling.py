"""The suite's xdist scheduler (tests/conftest.py) finishes a run in which a worker crashes.

xdist 3.8's module scheduler requeues a crashed worker's finished modules and then
waits forever for a replacement to complete them: CI once ran out of time that way after
one segmentation fault. It also hands work to a replacement worker that has not finished
collecting, loses that unit and ends in an internal error. A small suite in which one
test kills every worker that runs it must end, every other test passed.
"""

import os
import subprocess
import sys

from .examples import REPO

MODULES = {
    "conftest.py": "from tests.conftest import pytest_xdist_make_scheduler  # noqa: F401\n",
    "test_a.py": "def test_a1():\n    pass\n\ndef test_a2():\n    pass\n",
    "test_b.py": "import os\n\ndef test_b1():\n    os._exit(1)\n\ndef test_b2():\n    pass\n",
    "test_c.py": "import time\n\ndef test_c1():\n    time.sleep(1)\n\ndef test_c2():\n    pass\n",
    **{f"test_{name}.py": f"def test_{name}():\n    pass\n" for name in ("d", "e", "f")},
}


def test_a_crashed_worker_does_not_stall_the_run(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name, text in MODULES.items():
        (suite / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            str(suite),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert "crashed while running 'suite/test_b.py::test_b1'" in run.stdout, run.stdout
    assert " 7 passed" in run.stdout, run.stdout
