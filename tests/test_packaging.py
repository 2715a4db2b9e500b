"""binmetric-sweep installs beside PyPI's ``kernels`` and ``sweep``, in either order.

PyPI has packages called ``kernels`` (Hugging Face's; ``transformers[kernels]``
requires it) and ``sweep``. Ours installs under ``binmetric_sweep`` only, so
neither install order overwrites the other's files and uninstalling ours
leaves theirs whole. One fresh virtual environment, with the suite's own
site-packages appended for our dependencies (JAX and the rest are not
installed twice); ours is installed from a wheel built from this checkout.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THEIRS = ("kernels", "sweep")

#: Imports that work only with each package whole.
CHECK_THEIRS = "from kernels import get_kernel; import sweep; sweep.fas2sweep; print('theirs ok')"
CHECK_OURS = (
    "from binmetric_sweep import sweep; from binmetric_sweep.kernels import quadrature; "
    "print('ours', sweep.__version__)"
)

pytestmark = pytest.mark.slow


def _run(*args: str | Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``args`` run away from the checkout, whose own folders would shadow what is installed."""
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(sys.prefix).anchor,
        check=False,
        timeout=600,
    )


def _ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _files(site: Path, package: str) -> dict[str, str]:
    """Every file of ``package`` under ``site``: its path and a digest of its bytes."""
    return {
        str(path.relative_to(site)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((site / package).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv with PyPI's wheels of theirs downloaded and a wheel of ours built."""
    base = tmp_path_factory.mktemp("coexist")
    wheels = base / "wheels"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    fetched = _run(sys.executable, "-m", "pip", "download", "-q", "-d", wheels, *THEIRS, env=env)
    if fetched.returncode != 0:
        pytest.skip(f"PyPI's kernels and sweep could not be downloaded: {fetched.stderr[-300:]}")
    # Built from a copy: pip builds a local folder in place, and would leave build/ here.
    source = base / "source"
    source.mkdir()
    for part in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / part, source / part)
    for part in ("sweep", "kernels"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    _ok(_run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", base / "ours", source))
    (ours,) = (base / "ours").glob("binmetric_sweep-*.whl")
    _ok(_run(sys.executable, "-m", "venv", base / "venv"))
    python = base / "venv" / "bin" / "python"
    site = Path(
        _ok(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")).strip()
    )
    # Our dependencies from the suite's environment, after the venv's own packages.
    (site / "zz-suite-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site, wheels, ours, env


def _pip(venv, command, *args):
    python, _, wheels, _, env = venv
    found = ("--find-links", wheels) if command == "install" else ()
    return _ok(_run(python, "-m", "pip", "-q", command, *args, *found, env=env))


def test_either_order_and_uninstall_keep_both_whole(venv):
    python, site, wheels, ours, env = venv
    bin_dir = python.parent

    # Ours first, then theirs.
    _pip(venv, "install", "--no-deps", ours)
    _pip(venv, "install", *THEIRS)
    theirs_files = {p: _files(site, p) for p in THEIRS}
    assert all(theirs_files.values())
    assert "theirs ok" in _ok(_run(python, "-c", CHECK_THEIRS))
    assert "ours" in _ok(_run(python, "-c", CHECK_OURS))
    assert _ok(_run(bin_dir / "binmetric-sweep", "--version")).startswith("binmetric-sweep ")
    assert _ok(_run(bin_dir / "sweep", "--version")).startswith("binmetric-sweep ")

    # Uninstalling ours removes only ours.
    _pip(venv, "uninstall", "-y", "binmetric-sweep")
    assert {p: _files(site, p) for p in THEIRS} == theirs_files
    # pip leaves the namespace's folder, empty, as it does for any PEP 420 namespace.
    assert not [p for p in site.glob("binmetric_sweep*/**/*") if p.is_file()]
    assert "theirs ok" in _ok(_run(python, "-c", CHECK_THEIRS))

    # Theirs first, then ours: nothing of theirs is touched.
    _pip(venv, "install", "--no-deps", ours)
    assert {p: _files(site, p) for p in THEIRS} == theirs_files
    assert "theirs ok" in _ok(_run(python, "-c", CHECK_THEIRS))
    assert "ours" in _ok(_run(python, "-c", CHECK_OURS))

    # Uninstalling theirs leaves ours working.
    _pip(venv, "uninstall", "-y", *THEIRS)
    assert "ours" in _ok(_run(python, "-c", CHECK_OURS))
    assert _ok(_run(bin_dir / "binmetric-sweep", "--version")).startswith("binmetric-sweep ")
