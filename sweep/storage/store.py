"""The Parquet store of a sweep: one directory, one file per shard and table.

Layout of ``DIR``::

    sweep.json                 the sweep it holds (canonical form), its digest, the layout
    surface/shard-00000.parquet   one row per (configuration, γ, power)
    fits/shard-00000.parquet      one row per (configuration, replicate)
    .lock                      held by the one process writing

Each file is written under a hidden temporary name (``.shard-….tmp``, which
pyarrow, pandas, polars and DuckDB globs skip), flushed to disk and renamed
into place, so a reader sees a shard's file whole or not at all. A shard is
done when both of its files are readable, belong to this sweep and hold the
rows they should; anything else is recomputed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from binmetric_sweep.sweep.errors import SweepError
from binmetric_sweep.sweep.execution.shards import ShardResult
from binmetric_sweep.sweep.paths import check_out_dir, os_reason, writing
from binmetric_sweep.sweep.spec.config import SweepSpec, spec_digest
from binmetric_sweep.sweep.version import NUMBERS_VERSION, __version__

__all__ = ["TABLES", "ShardState", "Store", "open_store", "read_manifest"]

TABLES = ("surface", "fits")
MANIFEST = "sweep.json"
_META = "binmetric_sweep."


class ShardState(NamedTuple):
    """What is on disk for one shard.

    Attributes:
        index: the shard's number.
        state: "done", "missing" or "corrupt".
        reason: why it is corrupt ("" otherwise).
        node: where it was computed ("" unless done).
        seconds: compute time recorded with it (0 unless done).
        written: when it was written (Unix time; 0 unless done).
        device: the device that computed it (:attr:`sweep.execution.shards.ShardResult.device`;
            "" unless done, or where an older version wrote it).
        loop: the NUTS loop that computed it (:attr:`sweep.execution.shards.ShardResult.loop`;
            "" for quadrature, unless done, or where an older version wrote it).
    """

    index: int
    state: str
    reason: str = ""
    node: str = ""
    seconds: float = 0.0
    written: float = 0.0
    device: str = ""
    loop: str = ""


def _differences(old, new, path: str = "") -> list[str]:
    """Dotted paths at which two JSON-like values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{path}.{key}" if path else key)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        if path == "grid" or path.endswith("]"):
            out = []
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                out += _differences(a, b, f"{path}[{i}]")
            return out
    return [] if old == new else [path]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_manifest(out: str | Path) -> dict:
    """The ``sweep.json`` of a sweep directory; :class:`SweepError` if there is none."""
    path = Path(out) / MANIFEST
    if not path.is_file():
        raise SweepError(f"DIR: {str(out)!r} holds no sweep (no {MANIFEST}); run `sweep run` first")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SweepError(f"DIR: {str(path)!r} is unreadable ({err})") from None


class Store:
    """A sweep directory opened for one sweep (see the module docstring for the layout)."""

    def __init__(self, out: Path, spec: SweepSpec, shard_rows: list[int]):
        self.out = out
        self.spec = spec
        self.digest = spec_digest(spec)
        self.shard_rows = shard_rows  # configurations per shard

    def path(self, table: str, index: int) -> Path:
        """Where a shard's table lives."""
        return self.out / table / f"shard-{index:05d}.parquet"

    def _expected_rows(self, table: str, index: int) -> int:
        levels = len(self.spec.gamma) * len(self.spec.power)
        per_config = levels if table == "surface" else self.spec.replicates
        return self.shard_rows[index] * per_config * len(self.spec.estimators)

    def shard_state(self, index: int) -> ShardState:
        """Whether a shard is done, missing or corrupt (reads only the files' footers)."""
        meta = {}
        for table in TABLES:
            path = self.path(table, index)
            if not path.exists():
                return ShardState(index, "missing")
            try:
                footer = pq.read_metadata(path)
                kv = {k.decode(): v.decode() for k, v in (footer.metadata or {}).items()}
            except Exception as err:  # noqa: BLE001 - any unreadable footer means corrupt
                return ShardState(index, "corrupt", f"{table}: unreadable ({type(err).__name__})")
            if kv.get(_META + "digest") != self.digest or kv.get(_META + "shard") != str(index):
                return ShardState(index, "corrupt", f"{table}: belongs to another sweep or shard")
            expected = self._expected_rows(table, index)
            if footer.num_rows != expected:
                reason = f"{table}: {footer.num_rows} rows, expected {expected}"
                return ShardState(index, "corrupt", reason)
            meta = kv
        return ShardState(
            index,
            "done",
            node=meta.get(_META + "node", ""),
            seconds=float(meta.get(_META + "seconds", 0.0)),
            written=float(meta.get(_META + "written", 0.0)),
            device=meta.get(_META + "device", ""),
            loop=meta.get(_META + "loop", ""),
        )

    def states(self) -> list[ShardState]:
        """Every shard's state, in shard order."""
        return [self.shard_state(i) for i in range(len(self.shard_rows))]

    def _metadata(self, result: ShardResult) -> dict[str, str]:
        sweep_yaml = yaml.safe_dump(self.spec.canonical(), sort_keys=False)
        return {
            _META + "sweep": sweep_yaml,
            _META + "digest": self.digest,
            _META + "version": __version__,
            _META + "numbers_version": NUMBERS_VERSION,
            _META + "seed": str(self.spec.seed),
            _META + "method": self.spec.method if self.spec.has_posterior else "",
            _META + "sampler": json.dumps(
                self.spec.sampler.model_dump() if self.spec.has_posterior else {}
            ),
            _META + "estimators": ",".join(self.spec.estimators),
            _META + "shard": str(result.index),
            _META + "node": result.node,
            _META + "device": result.device,
            _META + "loop": result.loop,
            _META + "seconds": f"{result.seconds:.6f}",
            _META + "written": f"{time.time():.3f}",
        }

    def write_shard(self, result: ShardResult) -> None:
        """Write a shard's two tables, each atomically; the surface last (it marks it done)."""
        meta = self._metadata(result)
        for table in ("fits", "surface"):
            data: pa.Table = getattr(result, table)
            kv = dict(data.schema.metadata or {})
            kv.update({k.encode(): v.encode() for k, v in meta.items()})
            self._write_atomic(data.replace_schema_metadata(kv), self.path(table, result.index))

    def _write_atomic(self, data: pa.Table, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                pq.write_table(data, handle, compression="zstd", write_page_checksum=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except OSError as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if err.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                raise SweepError(
                    f"DIR: no room to write {path.name} in {str(path.parent)!r} "
                    f"({os.strerror(err.errno)}); shards written so far are kept, "
                    "run the same command again once there is room"
                ) from None
            raise SweepError(
                f"--out: cannot write {path.name} in {str(path.parent)!r}: {os_reason(err)}; "
                "shards written so far are kept"
            ) from None

    def remove_stale_temporaries(self) -> int:
        """Delete temporary files left by killed runs; how many there were."""
        count = 0
        for table in TABLES:
            for tmp in (self.out / table).glob(".shard-*.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                    count += 1
        return count

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's write lock, or refuse if another process holds it."""
        path = self.out / ".lock"
        with writing("--out", self.out):
            handle = open(path, "a+")  # noqa: SIM115 - held for the duration of the context
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise SweepError(
                    f"DIR: {str(self.out)!r} is being written by {holder}; wait for it to "
                    "finish (`sweep status` shows progress) or use another --out"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}")
            handle.flush()
            yield
        finally:
            handle.close()


def open_store(out: str | Path, spec: SweepSpec, shard_rows: list[int], create: bool) -> Store:
    """Open ``out`` for ``spec``: check it holds this sweep (or nothing), create it if asked.

    Raises:
        SweepError: ``out`` holds another sweep (naming what differs), is a file
            or under one, or is a non-empty directory that holds no sweep.
    """
    out = Path(out)
    store = Store(out, spec, shard_rows)
    manifest_path = out / MANIFEST
    check_out_dir(out)
    if manifest_path.exists():
        manifest = read_manifest(out)
        written = manifest.get("numbers_version", manifest.get("version"))
        if written != NUMBERS_VERSION:
            # One sweep, one version of the numbers and columns: they change between versions.
            raise SweepError(
                f"--out: {str(out)!r} was written by binmetric-sweep "
                f"{manifest.get('version')} (numbers of {written}), and this is {__version__} "
                f"(numbers of {NUMBERS_VERSION}), whose fits or columns may differ; "
                "finish it with that version, or give a fresh --out directory"
            )
        changed = _differences(manifest.get("sweep"), spec.canonical())
        if changed:
            raise SweepError(
                f"--out: {str(out)!r} holds sweep {manifest.get('sweep', {}).get('name')!r}, "
                f"and this sweep file differs in {', '.join(changed)}; resume with the "
                "original file, or give a fresh --out directory"
            )
        return store
    if out.exists() and any(out.iterdir()):
        raise SweepError(
            f"--out: {str(out)!r} is not empty and holds no sweep; give a new or empty directory"
        )
    if not create:
        raise SweepError(f"DIR: {str(out)!r} holds no sweep (no {MANIFEST})")
    with writing("--out", out):  # checked above; this is for a mount that changed since
        for table in TABLES:
            (out / table).mkdir(parents=True, exist_ok=True)
    manifest = {
        "sweep": spec.canonical(),
        "digest": store.digest,
        "version": __version__,
        "numbers_version": NUMBERS_VERSION,
        "configurations": int(sum(shard_rows)),
        "shards": len(shard_rows),
        "shard_rows": shard_rows,
        "created": time.time(),
    }
    tmp = out / f".{MANIFEST}.tmp"
    with writing("--out", out):
        tmp.write_text(json.dumps(manifest, indent=1))
        os.replace(tmp, manifest_path)
        _fsync_dir(out)
    return store
