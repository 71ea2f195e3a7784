"""The one reader and writer of an optimize run directory (layout: the
package doc of :mod:`kerntune.record`). Every file is written atomically;
a file that is missing reads as None (the run has not got that far); a file
that is there but unreadable, or a run written in another format, is a
:class:`KerntuneError` naming the file, never half-read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Optional, TypeVar

from pydantic import BaseModel, ValidationError

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fsutil import write_atomic
from kerntune.record.models import FORMAT, Manifest, ProposalRecord
from kerntune.record.outcome import DispatchEntry, OptimizeResult, TestReport
from kerntune.results import EvalResult
from kerntune.tuner.kernel_files import EXT
from kerntune.tuner.summary import TuneSummary
from kerntune.fmt import shell

M = TypeVar("M", bound=BaseModel)

MANIFEST = "run.json"
LOCK = ".lock"          # held (flock) by the process writing the run: one writer at a time
BASELINE = "baseline.json"
TEST = "test.json"
RESULTS = "results.json"
DISPATCH = "per_shape/dispatch.json"
REPORT = "report.md"
ORIGINAL = "original"
DAMAGED = "the run directory is damaged: restore the file, or start a new run"


def _first_line(e: Exception) -> str:
    text = str(e)
    return text.splitlines()[0] if text else type(e).__name__


class RunDir:
    def __init__(self, path: Path):
        self.path = path
        self._lock = None

    def holder(self) -> str | None:
        """The pid of the process running this run now ("" when it wrote none), or None when none is
        (or the file system has no locks)."""
        try:
            import fcntl
        except ImportError:
            return None
        try:
            f = open(self.path / LOCK)
        except OSError:
            return None
        with f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return f.read().strip()
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return None

    def hold(self) -> None:
        """Take the run for this process (until it exits): a second `optimize --resume` of a run still
        going ended in a database IntegrityError (exit 70), or both finished, the second's answer
        replacing the one the first had printed (adversarial tour). Where the file system has no
        locks (fcntl), nothing is held."""
        try:
            import fcntl
        except ImportError:
            return
        import os

        try:
            f = open(self.path / LOCK, "a+")
        except OSError as e:
            raise KerntuneError(ErrorCode.FILE, f"cannot write in the run directory {self.path}: {e.strerror or e}",
                                hint="a run is written where it is; copy it to a writable folder") from None
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            pid = f.read().strip()
            f.close()
            raise KerntuneError(ErrorCode.USAGE, f"the run in {self.path} is in progress in another kerntune process"
                                                 + (f" (pid {pid})" if pid else ""),
                                hint="wait for it to finish (then `kerntune show` it), or stop it and --resume "
                                     "it") from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._lock = f

    # --- opening ------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path) -> "RunDir":
        if (path / MANIFEST).exists():
            raise KerntuneError(ErrorCode.USAGE, f"{path} already holds an optimize run",
                                hint=f"continue it with --resume {shell(path)}, or choose another --run-dir")
        if (path / "tuning.db").exists():       # a `kerntune tune` run's database (tuner.store.DB_NAME)
            raise KerntuneError(ErrorCode.USAGE, f"{path} already holds a `kerntune tune` run",
                                hint="choose another --run-dir (an optimize run there would make that run unreadable)")
        try:
            path.mkdir(parents=True, exist_ok=True)
            for sub in (ORIGINAL, "rounds", "llm", "per_shape"):
                (path / sub).mkdir(exist_ok=True)
        except OSError as e:
            raise KerntuneError(ErrorCode.FILE, f"cannot create the run directory {path}: {e.strerror or e}",
                                hint="choose a writable folder with --run-dir") from None
        return cls(path)

    def discard_unmeasured(self, there_before: Optional[set[str]], made_from: Optional[Path]) -> bool:
        """Remove a new run that failed before its original kernel was measured (nothing in it to
        keep, and its run.json would refuse the next try with the same --run-dir): what
        :meth:`create` and the start made, that is, every entry of the folder but those ``there_before``
        (None: the folder did not exist), then the folder and its parents up to ``made_from`` (the
        first folder the run created) when they are empty. A run with a baseline is kept, and so is
        one whose rounds, LLM or per-shape folders hold anything."""
        made = {MANIFEST, LOCK, ORIGINAL, "rounds", "llm", "per_shape"}
        keep = there_before or set()
        try:
            entries = {p.name for p in self.path.iterdir()} - keep
            if (self.path / BASELINE).exists() or not entries <= made \
                    or any(any((self.path / d).iterdir()) for d in ("rounds", "llm", "per_shape") if d in entries):
                return False
            for name in entries:
                target = self.path / name
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            if there_before is None and made_from is not None:
                folder = self.path.absolute()
                while True:
                    folder.rmdir()
                    if folder == made_from or folder.parent == folder:
                        break
                    folder = folder.parent
        except OSError:
            pass               # a folder not empty: kept, the run's own files are gone
        return True

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        """An existing run; its manifest must be in this kerntune's format."""
        if not path.is_dir():
            raise KerntuneError(ErrorCode.FILE, f"no such run directory: {path}",
                                hint="pass the directory `kerntune optimize` printed (\"run directory: ...\")")
        if not (path / MANIFEST).exists():
            raise KerntuneError(ErrorCode.RUN, f"no optimize run in {path} ({MANIFEST} is missing)",
                                hint="pass the directory `kerntune optimize` printed (\"run directory: ...\")")
        run = cls(path)
        run.manifest()          # the format check
        return run

    @staticmethod
    def is_run(path: Path) -> bool:
        return (path / MANIFEST).exists()

    # --- plain files --------------------------------------------------------------------------
    def file(self, rel: str) -> Path:
        return self.path / rel

    def has(self, rel: str) -> bool:
        return (self.path / rel).exists()

    def write(self, rel: str, text: str) -> Path:
        p = self.path / rel
        write_atomic(p, text)     # never leave a half-written file behind
        return p

    def write_json(self, rel: str, value: Any) -> Path:
        if isinstance(value, BaseModel):
            text = value.model_dump_json(indent=2)
        elif isinstance(value, list) and all(isinstance(v, BaseModel) for v in value):
            text = json.dumps([v.model_dump(mode="json") for v in value], indent=2)
        else:
            text = json.dumps(value, indent=2)
        return self.write(rel, text + "\n")

    def text(self, rel: str) -> Optional[str]:
        p = self.path / rel
        try:
            return p.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            return None
        except (OSError, UnicodeDecodeError) as e:
            raise KerntuneError(ErrorCode.RUN, f"cannot read {p}: {e}", hint=DAMAGED) from None

    def read_json(self, rel: str) -> Any:
        text = self.text(rel)
        if text is None:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise KerntuneError(ErrorCode.RUN, f"{self.path / rel} is corrupt ({e})", hint=DAMAGED) from None

    def read_model(self, rel: str, model: type[M]) -> Optional[M]:
        data = self.read_json(rel)
        if data is None:
            return None
        try:
            return model.model_validate(data)
        except ValidationError as e:
            raise KerntuneError(ErrorCode.RUN, f"{self.path / rel} is not a valid kerntune record "
                                               f"({_first_line(e)})", hint=DAMAGED) from None

    # --- the manifest -----------------------------------------------------------------------------
    def manifest(self) -> Manifest:
        data = self.read_json(MANIFEST)
        where = self.path / MANIFEST
        if data is None:
            raise KerntuneError(ErrorCode.RUN, f"no optimize run in {self.path} ({MANIFEST} is missing)")
        if not isinstance(data, dict):
            raise KerntuneError(ErrorCode.RUN, f"{where} is corrupt (not a JSON object)", hint=DAMAGED)
        found = data.get("format") or (f"kerntune.run/{data['version']}" if "version" in data else "none")
        if found != FORMAT:
            by = data.get("kerntune_version")
            raise KerntuneError(ErrorCode.RUN, f"{self.path} was written {f'by kerntune {by} ' if by else ''}in run "
                                               f"format {found}; this kerntune reads {FORMAT} only",
                                hint="read it with the kerntune version that wrote it, or start a new run")
        try:
            return Manifest.model_validate(data)
        except ValidationError as e:
            raise KerntuneError(ErrorCode.RUN, f"{where} is not a valid kerntune record ({_first_line(e)})",
                                hint=DAMAGED) from None

    def save_manifest(self, m: Manifest) -> None:
        self.write_json(MANIFEST, m)

    # --- the records ------------------------------------------------------------------------------
    def baseline(self) -> Optional[EvalResult]:
        return self.read_model(BASELINE, EvalResult)

    def save_baseline(self, result: EvalResult) -> None:
        self.write_json(BASELINE, result)

    def test(self) -> Optional[TestReport]:
        return self.read_model(TEST, TestReport)

    def save_test(self, report: TestReport) -> None:
        self.write_json(TEST, report)

    def results(self) -> Optional[OptimizeResult]:
        return self.read_model(RESULTS, OptimizeResult)

    def save_results(self, result: OptimizeResult) -> None:
        self.write_json(RESULTS, result)

    def dispatch(self) -> list[DispatchEntry]:
        data = self.read_json(DISPATCH)
        if data is None:
            return []
        try:
            return [DispatchEntry.model_validate(d) for d in data]
        except (ValidationError, TypeError) as e:
            raise KerntuneError(ErrorCode.RUN, f"{self.path / DISPATCH} is not a valid kerntune record "
                                               f"({_first_line(e)})", hint=DAMAGED) from None

    def save_dispatch(self, entries: list[DispatchEntry]) -> None:
        self.write_json(DISPATCH, entries)

    # --- the original ------------------------------------------------------------------------------
    def original(self, m: Manifest) -> str:
        """The run's own copy of the kernel (what resume, reports and exports use)."""
        return f"{ORIGINAL}/{m.kernel_file}"

    @property
    def original_spec(self) -> str:
        return f"{ORIGINAL}/spec.yaml"

    # --- rounds ------------------------------------------------------------------------------------
    @staticmethod
    def round_rel(r: int, name: str = "") -> str:
        return f"rounds/{r:02d}" + (f"/{name}" if name else "")

    def round_dir(self, r: int) -> Path:
        d = self.path / self.round_rel(r)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def template_rel(self, r: int, lang: str) -> str:
        return self.round_rel(r, f"template{EXT[lang]}.j2")

    def input_rel(self, r: int, lang: str) -> str:
        return self.round_rel(r, f"input{EXT[lang]}")

    def best_rel(self, r: int, lang: str) -> str:
        return self.round_rel(r, f"best{EXT[lang]}")

    def proposal(self, r: int) -> Optional[ProposalRecord]:
        return self.read_model(self.round_rel(r, "proposal.json"), ProposalRecord)

    def save_proposal(self, r: int, lang: str, template: str, proposal: ProposalRecord) -> None:
        self.write(self.template_rel(r, lang), template)
        self.write_json(self.round_rel(r, "proposal.json"), proposal)

    def summary(self, r: int) -> Optional[TuneSummary]:
        """The round's tuning summary, None before the round finished."""
        return self.read_model(self.round_rel(r, "summary.json"), TuneSummary)

    def save_summary(self, r: int, summary: TuneSummary) -> None:
        self.write_json(self.round_rel(r, "summary.json"), summary)


__all__ = ["BASELINE", "DISPATCH", "EXT", "MANIFEST", "ORIGINAL", "REPORT", "RESULTS", "RunDir", "TEST"]
