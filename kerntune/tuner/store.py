"""The run database: every evaluation written to SQLite the moment it is
known (autocommit, WAL), so a killed run loses nothing and resumes.

Tables: ``meta`` (the run's settings, template and spec texts, device,
baseline), ``evaluations`` (one row per configuration tried: parameters,
rendered-source hash, status, reason, whether it counted against the
budget, score, the full result with compile log, resources, verification and
per-shape timings, and timestamps).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from kerntune.errors import ErrorCode, KerntuneError
from kerntune.fmt import shell
from kerntune.results import EvalResult

DB_NAME = "tuning.db"
SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    config TEXT NOT NULL,
    source_hash TEXT,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    counted INTEGER NOT NULL,
    duplicate_of INTEGER,
    score REAL,
    result TEXT,
    started REAL NOT NULL,
    finished REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Evaluation:
    """One row of the evaluations table, as a plug-in sees it (immutable)."""

    id: int
    key: str
    config: dict[str, Any]
    source_hash: str
    status: str
    reason: str
    message: str
    counted: bool
    duplicate_of: int | None
    score: float | None
    result: EvalResult | None
    started: float
    finished: float


def _open_readonly(path: Path) -> sqlite3.Connection:
    """``path`` opened without writing anything. A database with no -wal file beside it has no writer (a
    writer in WAL mode keeps one while it is open): it is opened as immutable, which creates no -wal or
    -shm file, so a finished run is read as it is, on read-only storage too. A run being written (its
    -wal file is there) is opened read-only beside its writer, to see what it has written so far."""
    from urllib.parse import quote

    uri = f"file:{quote(str(path.resolve()))}"
    if not Path(f"{path}-wal").exists():
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
    return sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=30)


# SQLite's primary result codes of a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB), spelled out: the
# sqlite3 module names them from Python 3.11 on, and kerntune runs on 3.10
DAMAGED_CODES = (11, 26)


class RunStore:
    """A run's tuning database. ``readonly``: for commands that only read a run (show, report, export,
    replay, priors): nothing is written, not even the schema into an empty file, and a run on read-only
    storage opens (its WAL-mode database is then read as immutable)."""

    def __init__(self, path: Path, create: bool = False, readonly: bool = False):
        self.path = path
        if not create and not path.exists():
            rounds = sorted(d.name for d in path.parent.glob("[0-9][0-9]") if (d / DB_NAME).exists())
            hint = (f"this folder holds the rounds of an optimize run: pass one ({shell(path.parent / rounds[0])}) "
                    f"or the run itself ({shell(path.parent.parent)})" if rounds else
                    "pass the run directory that `kerntune tune` printed, or one round of an optimize run "
                    "(RUN/rounds/01)")
            raise KerntuneError(ErrorCode.RUN, f"no tuning database at {path}", hint=hint)
        try:
            if readonly:     # nothing writes the schema here: an empty or foreign file has none
                self.db = _open_readonly(path)
                missing = {"meta", "evaluations"} - {row[0] for row in self.db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                if missing:
                    raise sqlite3.DatabaseError(f"no {' or '.join(sorted(missing))} table (an empty or foreign file)")
            else:
                self.db = sqlite3.connect(str(path), isolation_level=None, timeout=30)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError) and \
                    getattr(e, "sqlite_errorcode", 0) & 0xFF not in DAMAGED_CODES:
                # a read-only folder or disk, a full disk: the run is fine (a resume on read-only storage
                # was told its database was damaged)
                raise KerntuneError(ErrorCode.FILE, f"cannot write the run database {path}: {e}",
                                    hint="a run is written where it is: free space on its disk, or copy the run to "
                                         "a writable folder and continue it there") from None
            raise KerntuneError(ErrorCode.RUN, f"{path} is not a readable kerntune database: {e}",
                                hint="the file is damaged or is not kerntune's: restore it from a copy of the run, "
                                     "or run again") from None
        if create:
            self.set("schema_version", SCHEMA_VERSION)
        version = self.get("schema_version")
        if version is not None and version != SCHEMA_VERSION:
            raise KerntuneError(ErrorCode.RUN, f"{path} was written by an incompatible kerntune (schema {version})")

    @classmethod
    def in_dir(cls, run_dir: Path, create: bool = False, readonly: bool = False) -> "RunStore":
        if create:
            if run_dir.exists() and not run_dir.is_dir():
                raise KerntuneError(ErrorCode.USAGE, f"the run directory {run_dir} is a file",
                                    hint="pass a new folder (or an empty one) to --run-dir")
            try:
                run_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:        # a parent is a file, no permission, a read-only disk
                raise KerntuneError(ErrorCode.FILE, f"cannot create the run directory {run_dir}: "
                                                    f"{e.strerror or e}",
                                    hint="pass a folder you can write to with --run-dir") from None
        elif run_dir.exists() and not run_dir.is_dir():
            raise KerntuneError(ErrorCode.USAGE, f"{run_dir} is a file, not a run directory",
                                hint="pass the folder a `kerntune tune` or `optimize` run wrote (its --run-dir); to "
                                     f"verify and time a kernel file, `kerntune bench {shell(run_dir)}`")
        elif not run_dir.is_dir():
            raise KerntuneError(ErrorCode.RUN, f"run directory not found: {run_dir}",
                                hint="give a directory an earlier `kerntune tune` or `optimize` wrote (it holds "
                                     f"{DB_NAME}), or make one from a Kernel Tuner cache: "
                                     "`kerntune kt-cache import CACHE --run-dir DIR`")
        return cls(run_dir / DB_NAME, create=create, readonly=readonly)

    def _write(self, sql: str, args: tuple) -> sqlite3.Cursor:
        """One write, committed at once. A disk that is full, or a folder or file that is not writable,
        is the user's to fix (it was exit 70, "a bug in kerntune", with no word of the run being kept):
        what was written before stays, and the run continues with --resume."""
        try:
            return self.db.execute(sql, args)
        except sqlite3.OperationalError as e:
            raise KerntuneError(ErrorCode.FILE, f"cannot write the run database {self.path}: {e}",
                                hint="free space on its disk (or make its folder writable), then continue the run "
                                     "with --resume: everything written before this is kept") from None

    # --- meta -----------------------------------------------------------------
    def set(self, key: str, value: Any) -> None:
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get(self, key: str, default: Any = None, kind: Any = None) -> Any:
        """A meta entry (``default`` when there is none). ``kind``: the type (or pydantic model) kerntune
        writes there; an entry that is not one is a damaged record, said so (a hand-edited entry was
        exit 70, "a bug in kerntune", from deep in the reader)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            return default
        try:
            value = json.loads(row[0])
        except json.JSONDecodeError:
            raise KerntuneError(ErrorCode.RUN, f"{self.path}: meta entry {key!r} is corrupt") from None
        if kind is None or value is None:
            return value
        from pydantic import TypeAdapter, ValidationError

        try:
            return TypeAdapter(kind).validate_python(value)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise KerntuneError(ErrorCode.RUN, f"{self.path}: meta entry {key!r} is not a valid kerntune record "
                                               f"({where + ': ' if where else ''}{first['msg']})",
                                hint="the file was edited or damaged: restore it from a copy of the run, or run "
                                     "again") from None

    # --- evaluations --------------------------------------------------------------
    def add(self, key: str, config: dict[str, Any], status: str, counted: bool, *, source_hash: str = "",
            reason: str = "", message: str = "", duplicate_of: int | None = None, score: float | None = None,
            result: EvalResult | None = None, started: float | None = None) -> int:
        now = time.time()
        cur = self._write(
            "INSERT INTO evaluations (key, config, source_hash, status, reason, message, counted, duplicate_of, "
            "score, result, started, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, json.dumps(config), source_hash, status, reason, message[:2000], int(counted), duplicate_of,
             score, result.model_dump_json() if result is not None else None, started or now, now))
        return int(cur.lastrowid)

    def evaluations(self) -> Iterator[Evaluation]:
        rows = self.db.execute("SELECT id, key, config, source_hash, status, reason, message, counted, duplicate_of, "
                               "score, result, started, finished FROM evaluations ORDER BY id")
        for r in rows:
            try:
                result = EvalResult.model_validate_json(r[10]) if r[10] else None
                config = json.loads(r[2])
            except (ValueError, json.JSONDecodeError) as e:
                raise KerntuneError(ErrorCode.RUN, f"{self.path}: evaluation {r[0]} is corrupt: {e}") from None
            yield Evaluation(id=r[0], key=r[1], config=config, source_hash=r[3] or "", status=r[4], reason=r[5],
                             message=r[6], counted=bool(r[7]), duplicate_of=r[8], score=r[9], result=result,
                             started=r[11], finished=r[12])

    def counted(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM evaluations WHERE counted = 1").fetchone()[0])

    def close(self) -> None:
        self.db.close()


def discard_empty_run(run_dir: Path, remove_dir: bool) -> bool:
    """Remove the database of a run that recorded no evaluation (and ``run_dir`` itself when
    ``remove_dir`` and nothing else is in it); a run with any evaluation is kept. Returns whether it went."""
    db = run_dir / DB_NAME
    try:
        con = _open_readonly(db)
        try:
            n = con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return False
    if n:
        return False
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    (run_dir / ".lock").unlink(missing_ok=True)      # the lock this process holds on the run (cli.cmd_tune)
    if remove_dir:
        try:
            run_dir.rmdir()
        except OSError:
            pass
    return True
