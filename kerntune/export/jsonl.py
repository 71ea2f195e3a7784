"""Write JSON Lines: to a file atomically (temporary file, then rename), or to stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable

from kerntune.errors import ErrorCode, KerntuneError


def write_jsonl(lines: Iterable[str], path: Path | None) -> int:
    """Write one JSON document per line; returns how many. ``path`` None: stdout."""
    if path is None:
        n = 0
        for line in lines:
            sys.stdout.write(line + "\n")
            n += 1
        sys.stdout.flush()
        return n
    if path.is_dir():
        raise KerntuneError(ErrorCode.USAGE, f"the output {path} is a folder", hint="pass a file name, e.g. -o pairs.jsonl")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
                n += 1
        os.replace(tmp, path)
    except OSError as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise KerntuneError(ErrorCode.FILE, f"cannot write {path}: {e}") from None
    return n
