"""Where a benchmark's numbers came from: the checkout's commit, recorded beside the results."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def commit(mark_uncommitted: bool = False) -> str:
    """The checkout's short commit ('' outside a git checkout); with ``mark_uncommitted``, followed by
    ' + uncommitted changes' when tracked files differ from it (and 'unknown' when git cannot tell)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        if not mark_uncommitted:
            return head
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown" if mark_uncommitted else ""
    return (head or "unknown") + (" + uncommitted changes" if dirty else "")
