"""Files that are never left half-written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from kerntune.errors import ErrorCode, KerntuneError


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
