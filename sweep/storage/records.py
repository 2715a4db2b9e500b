"""What the benchmark scripts under scripts/ record beside their numbers, and where they write them.

Each script imports it as ``binmetric_sweep.sweep.storage.records``: its provenance
(:func:`provenance`), the record written as JSON (:func:`write_record`), and a
long run's record rewritten stage by stage (:class:`StageLog`).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from contextlib import contextmanager
from pathlib import Path


def provenance(script: str, argv: list[str]) -> dict:
    """Device, host, the package's, JAX's and NumPyro's versions, and the command that
    reruns ``script``."""
    import jax
    import numpyro

    from binmetric_sweep.sweep.execution.shards import device_name
    from binmetric_sweep.sweep.version import __version__

    return {
        "device": device_name(),
        "host": platform.processor() or platform.machine(),
        "binmetric_sweep": __version__,
        "jax": jax.__version__,
        "numpyro": numpyro.__version__,
        "command": f"python scripts/{script} " + " ".join(argv),
        # XLA's own flags change the compiled programs (and so the timings).
        **({"xla_flags": os.environ["XLA_FLAGS"]} if os.environ.get("XLA_FLAGS") else {}),
    }


def write_record(result: dict, out: str | Path, stem: str, path: Path | None = None) -> Path:
    """Write ``result`` as ``out/stem-YYYYmmdd-HHMMSS.json`` (``out`` created if missing).

    With ``path`` (what an earlier call returned), overwrite that file
    instead: a record written part by part as a long run goes on.
    """
    if path is None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)
    return path


class StageLog:
    """A long run's record, rewritten as each of its stages ends, with the stage's time.

    Each stage is printed to stderr as it ends (``[  12.3 s] name: 4.56 s``)
    and appended to the record's ``stages``, so a run cut short (a time limit
    on a lent machine) still says where its time went: drawing lanes,
    compiling, warm-up or timed runs.

    Args:
        result: the record (``partial`` until the caller removes it).
        out, stem: as for :func:`write_record`, which writes it at once.
    """

    def __init__(self, result: dict, out: str | Path, stem: str):
        self.result, self.start = result, time.perf_counter()
        result.setdefault("stages", [])
        self.path = write_record(result, out, stem)
        self.out, self.stem = out, stem

    def write(self) -> Path:
        """Rewrite the record as it now stands."""
        return write_record(self.result, self.out, self.stem, self.path)

    def record(self, name: str, seconds: float) -> None:
        """Log stage ``name``, which took ``seconds`` and has just ended."""
        at = time.perf_counter() - self.start
        self.result["stages"].append(
            {"stage": name, "s": round(seconds, 3), "ended_at_s": round(at, 1)}
        )
        print(f"[{at:7.1f} s] {name}: {seconds:.2f} s", file=sys.stderr, flush=True)
        self.write()

    @contextmanager
    def stage(self, name: str):
        """Time the block as stage ``name``; it is logged only if the block ends."""
        start = time.perf_counter()
        yield
        self.record(name, time.perf_counter() - start)
