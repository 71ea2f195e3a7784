"""Read a run directory into a :class:`RunReport`: an optimize run (run.json,
see :mod:`kerntune.record`) or a tuning run (tuning.db, see
:mod:`kerntune.tuner.store`). Whatever a run has not written yet (an
interrupted run) is left out and said so in ``notes``; a file that is there
but unreadable is an error naming it."""

from __future__ import annotations

from pathlib import Path

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.record.store import RunDir
from kerntune.reporting.load_optimize import load_optimize
from kerntune.reporting.load_tune import load_tune
from kerntune.reporting.model import RunReport
from kerntune.tuner.store import DB_NAME

HINT = "pass the directory that `kerntune optimize` or `kerntune tune` printed (\"run directory: ...\")"


def load_run(path: Path, finishing: bool = False) -> RunReport:
    """The report of the run in ``path``, an optimize run or a tuning run (``finishing``: an optimize
    run writing its end, reported as the finished run it is about to be)."""
    if not path.exists():
        raise KerntuneError(ErrorCode.FILE, f"run directory not found: {path}", hint=HINT)
    if not path.is_dir():
        raise KerntuneError(ErrorCode.FILE, f"{path} is a file, not a run directory", hint=HINT)
    if RunDir.is_run(path):
        return load_optimize(path, finishing=finishing)
    if (path / DB_NAME).exists():
        return load_tune(path)
    raise KerntuneError(ErrorCode.RUN, f"{path} holds no kerntune run: neither run.json (`kerntune optimize`) "
                                       f"nor {DB_NAME} (`kerntune tune`) is there", hint=HINT)


__all__ = ["load_run"]
