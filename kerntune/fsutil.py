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


def blocked_folder(path: Path) -> str:
    """Why ``path`` cannot be created where it is, or "": the nearest existing folder above it is a file, or
    one this process may not write in."""
    for d in Path(os.path.abspath(path)).parents:
        if d.exists():
            if not d.is_dir():
                return f"{d} is a file, not a folder"
            return "" if os.access(d, os.W_OK | os.X_OK) else f"the folder {d} is not writable"
    return ""


def check_writable(path: Path, what: str) -> None:
    """Refuse, before any work is done, an output file whose folder cannot be made or written in;
    ``what`` names the file in the message (e.g. "the baseline")."""
    why = blocked_folder(path)
    if why:
        raise KerntuneError(ErrorCode.FILE, f"cannot write {what} {path}: {why}", hint=_WRITABLE_HINT)


_WRITABLE_HINT = "pass a path in a folder you can write to (missing folders are created)"


def refuse_existing(path: Path, force: bool) -> None:
    """Refuse to replace an existing ``path`` unless ``force`` (the command's --force)."""
    if path.exists() and not force:
        raise KerntuneError(ErrorCode.USAGE, f"{path} already exists", hint="pass --force to overwrite it")


def check_output_file(path: Path, example: str) -> None:
    """Refuse an output that is a folder, one that cannot be written where it is, or an existing file inside a
    kerntune run (the run's own results, database or kernels would be replaced); ``example``: a file name
    for the hint."""
    if path.is_dir():
        raise KerntuneError(ErrorCode.USAGE, f"the output {path} is a folder", hint=f"pass a file name, e.g. -o {example}")
    check_writable(path, "the output")
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
            why = blocked_folder(path) or str(e)
            raise KerntuneError(ErrorCode.FILE, f"cannot write {what or path}: {why}", hint=_WRITABLE_HINT) from None
        raise
    return n
