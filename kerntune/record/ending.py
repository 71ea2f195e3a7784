"""Whether an optimize run directory holds a finished run: `show`, `export` and `score` ask the same
question and give the same answer.

A run is finished once run.json says done, results.json is there with its headline and report.md is
written (run.json says done last). Anything short of that is a run still going in another process, a
run with no result yet, or a run that stopped before its end was written; each has its own hint."""

from __future__ import annotations

from typing import Optional

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell
from kerntune.record.models import RunStatus
from kerntune.record.store import REPORT, RunDir


def unfinished(run: RunDir, each: str = "") -> Optional[KerntuneError]:
    """Why ``run`` holds no finished result (an error to raise or to quote), or None when it does.
    ``each``: where each round's search can be seen, added to the hints that have use for it."""
    result = run.results()
    m = run.manifest()
    finished = result is not None and m.status is RunStatus.DONE
    rounds = f"; each round's search: {each}" if each else ""
    pid = run.holder() if not finished else None
    if pid is not None:
        return KerntuneError(ErrorCode.RUN, f"{run.path} is a `kerntune optimize` run still going, in another "
                                            f"kerntune process{f' (pid {pid})' if pid else ''}: no result yet",
                             hint=f"wait for it to finish, then `kerntune show {shell(run.path)}`"
                                  + (f"; each round's search so far: {each}" if each else ""))
    if result is None:
        searched = sum(1 for p in (run.path / "rounds").glob("[0-9]*") if (p / "tuning.db").exists())
        return KerntuneError(ErrorCode.RUN, f"{run.path} is a `kerntune optimize` run with no result yet "
                                            f"({m.status.value}, {searched} round(s) searched)",
                             hint=f"continue it with `kerntune optimize --resume {shell(run.path)}`{rounds}")
    missing = [] if finished else [f"run.json says {m.status.value!r}"]
    missing += [] if result.headline else ["results.json has no headline"]
    missing += [] if run.has(REPORT) else [f"{REPORT} is missing"]
    if missing and (not finished or not result.headline):
        return KerntuneError(ErrorCode.RUN, f"{run.path} is a `kerntune optimize` run that stopped before its end "
                                            f"was written ({'; '.join(missing)})",
                             hint=f"finish it with `kerntune optimize --resume {shell(run.path)}` (nothing is "
                                  "measured again)")
    return None


__all__ = ["unfinished"]
