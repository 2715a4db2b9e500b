"""What the scripts under scripts/ record beside their numbers, and where they write them."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path


def provenance(script: str, argv: list[str]) -> dict:
    """Device, host, JAX and NumPyro versions, and the command that reruns ``script``."""
    import jax
    import numpyro

    from sweep.shards import device_name

    return {
        "device": device_name(),
        "host": platform.processor() or platform.machine(),
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
