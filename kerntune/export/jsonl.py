"""Write JSON Lines: to a file atomically (temporary file, then rename), or to stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

from kerntune.fsutil import write_atomic


def write_jsonl(lines: Iterable[str], path: Path | None) -> int:
    """Write one JSON document per line; returns how many. ``path`` None: stdout."""
    if path is None:
        n = 0
        for line in lines:
            sys.stdout.write(line + "\n")
            n += 1
        sys.stdout.flush()
        return n
    return write_atomic(path, (line + "\n" for line in lines))
