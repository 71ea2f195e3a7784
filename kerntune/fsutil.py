"""Files that are never left half-written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from kerntune.errors import ErrorCode, KerntuneError


RUN_MARKERS = ("run.json", "tuning.db")    # a folder holding one of these is a kerntune run (or one of its rounds)


def run_holding(path: Path) -> Path | None:
    """The kerntune run directory ``path`` is or lies in (itself or a parent holding run.json or tuning.db),
    or None."""
    here = Path(os.path.abspath(path))
    for d in (here, *here.parents):
        if any((d / m).exists() for m in RUN_MARKERS):
            return d
    return None


def check_output_file(path: Path, example: str) -> None:
    """Refuse an output that is a folder, or an existing file inside a kerntune run (the run's own
    results, database or kernels would be replaced); ``example``: a file name for the hint."""
    if path.is_dir():
        raise KerntuneError(ErrorCode.USAGE, f"the output {path} is a folder", hint=f"pass a file name, e.g. -o {example}")
    run = run_holding(path)
    if run is not None and path.exists():
        raise KerntuneError(ErrorCode.USAGE, f"refusing to overwrite {path}: it is a file of the kerntune run {run}",
                            hint=f"write to a new file (e.g. -o {example}) or outside the run; delete the file "
                                 "first if you mean to replace it")


def write_atomic(path: Path, chunks: str | Iterable[str], what: str = "") -> int:
    """Write ``chunks`` to a temporary file beside ``path``, flush it to disk and
    rename it over ``path``: readers see the old file or the new one, never a
    part. Returns the number of chunks written; an OS error becomes a
    KerntuneError naming ``what`` (default: the path)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            for chunk in [chunks] if isinstance(chunks, str) else chunks:
                f.write(chunk)
                n += 1
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        if isinstance(e, OSError):
            raise KerntuneError(ErrorCode.FILE, f"cannot write {what or path}: {e}") from None
        raise
    return n
