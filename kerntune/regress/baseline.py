"""The baseline file of the regression gate (``bench/baseline.json``).

One JSON document: per kernel (keyed by its path relative to the baseline
file's folder) the device it was measured on, the kerntune version, the seed,
the timing settings, the kernel source and spec digest, and per shape the
median of the batch medians, the within-batch IQR, the number of timed runs
and every batch median (what the noise-aware decision compares). Written
atomically (temporary file, fsync, rename), so an interrupted ``--update``
never leaves half a baseline behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import ValidationError

from kerntune.fsutil import write_atomic
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import Record

FORMAT = "kerntune-baseline"
VERSION = 1


class TimingSettings(Record):
    warmup: int
    repeats: int                 # timed runs per batch
    batches: int                 # independent batches per shape
    flush_l2: bool = True


class ShapeRecord(Record):
    label: str
    shape: dict[str, int]
    median_ms: float             # median of the batch medians
    iqr_ms: float                # median of the batches' interquartile ranges (run-to-run spread)
    min_ms: float
    n: int                       # timed runs over all batches
    batch_medians: list[float]   # one per batch: what the decision rule compares


class KernelRecord(Record):
    path: str                    # relative to the baseline file's folder
    kernel: str                  # entry point
    lang: str
    device: str                  # device name, e.g. "NVIDIA H100 80GB HBM3"
    device_id: str
    backend: str
    driver: str = ""
    kerntune_version: str
    seed: int
    recorded: float              # Unix time
    shape_set: Optional[str] = None
    settings: TimingSettings
    source_sha256: str
    spec_digest: str
    source: str                  # the kernel as measured: the reference when its spec has no NumPy function
    options: list[str] = []
    launch: Optional[dict[str, Any]] = None
    verified_against: str = ""   # "numpy", "kernel" or "self"
    shapes: list[ShapeRecord] = []

    def shape(self, key: dict[str, int]) -> Optional[ShapeRecord]:
        return next((s for s in self.shapes if s.shape == key), None)


class BaselineFile(Record):
    format: Literal["kerntune-baseline"] = FORMAT
    version: int = VERSION
    updated: float = 0.0
    kernels: dict[str, KernelRecord] = {}


def key_for(kernel_path: Path, baseline_path: Path) -> str:
    """The record key of a kernel: its path relative to the baseline file's folder, with '/'."""
    rel = os.path.relpath(kernel_path.resolve(), baseline_path.resolve().parent)
    return Path(rel).as_posix()


def load(path: Path, missing_ok: bool) -> BaselineFile:
    if not path.exists():
        if missing_ok:
            return BaselineFile()
        raise KerntuneError(ErrorCode.FILE, f"no baseline at {path}",
                            hint=f"record one first: kerntune regress PATH... --baseline {path} --update")
    if path.is_dir():
        raise KerntuneError(ErrorCode.FILE, f"the baseline {path} is a folder, expected a JSON file",
                            hint="pass the file, e.g. --baseline bench/baseline.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise KerntuneError(ErrorCode.FILE, f"cannot read the baseline {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise KerntuneError(ErrorCode.FILE, f"the baseline {path} is not valid JSON: {e}",
                            hint="restore it from version control, or record a new one with --update") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise KerntuneError(ErrorCode.FILE, f"{path} is not a kerntune baseline (no \"format\": \"{FORMAT}\")",
                            hint="record one with kerntune regress PATH... --baseline FILE --update")
    if data.get("version") != VERSION:
        raise KerntuneError(ErrorCode.FILE, f"the baseline {path} has format version {data.get('version')!r}; "
                                            f"this kerntune reads version {VERSION}",
                            hint="record a new one with --update")
    try:
        return BaselineFile.model_validate(data)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KerntuneError(ErrorCode.FILE, f"the baseline {path} is corrupt: {where}: {first['msg']}",
                            hint="restore it from version control, or record a new one with --update") from None


def save(path: Path, baseline: BaselineFile) -> None:
    """Write atomically: a temporary file in the same folder, flushed to disk, renamed over the old one."""
    write_atomic(path, baseline.model_dump_json(indent=2) + "\n", what=f"the baseline {path}")
