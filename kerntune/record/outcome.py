"""The records of what an optimize run concluded: the tester's final word
(test.json; `kerntune tune` keeps the same record in its database), the
kernels handed back (per_shape/dispatch.json) and the run's answer
(results.json, also what `kerntune optimize --json` prints)."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import computed_field

from kerntune.engine.hostload import HostLoad
from kerntune.record.models import LLMUsage, RoundRecord, RunStatus
from kerntune.results import CheckReport, Record, ShapeTiming, Status
from kerntune.speedup import THRESHOLD, Interval, Spread, Verdict


class CandidateResult(Record):
    """One candidate of the final test. ``status`` says how it ended: ``ok`` (verified on every shape,
    clean under the memory checker, and timed where it was picked), or the failure, with ``stage``
    saying where it failed (verify, memcheck, timing, re-verify) and ``message`` the details."""

    round: int
    key: str
    config: dict[str, Any]
    status: Status = Status.OK
    stage: str = ""
    message: str = ""
    identical: bool = False                  # the original kernel itself (1.0x by definition)
    check: Optional[CheckReport] = None
    timings: list[ShapeTiming] = []
    speedups: dict[str, float] = {}          # shape label -> baseline / candidate (the interval's estimate)
    intervals: dict[str, Interval] = {}      # shape label -> speedup with its confidence interval
    geomean: Optional[Interval] = None
    geomean_speedup: Optional[float] = None
    confirmed: bool = False                  # timed again in the confirmation sessions (timings: the last one's;
                                             # intervals: every session, kerntune.speedup.across_sessions)
    screening: Optional[Interval] = None     # the geomean of the screening session alone (confirmed candidates)
    session_geomeans: list[Interval] = []    # each session's own geomean (screening, then each confirmation)
    session_intervals: dict[str, list[Interval]] = {}   # shape label -> each session's own interval
    session_processes: list[int] = []        # the worker process each session ran in (0: screening, then 1, 2, ...)
    verdict: Optional[Verdict] = None        # kerntune.speedup.decide on the geomean
    flags: list[str] = []

    @computed_field      # type: ignore[prop-decorator]
    @property
    def verified(self) -> bool:
        return self.status is Status.OK

    def failed(self, status: Status, stage: str, message: str, **update: Any) -> "CandidateResult":
        return self.model_copy(update={"status": status, "stage": stage, "message": message, **update})


class ShapeWinner(Record):
    label: str
    shape: dict[str, int]
    baseline_ms: float
    winner: str                              # candidate key, or "original"
    round: Optional[int] = None
    best_ms: float
    speedup: float
    interval: Optional[Interval] = None
    pct_of_copy: Optional[float] = None


class TestReport(Record):
    __test__ = False   # not a pytest test class
    seed: int
    baseline: list[ShapeTiming] = []
    candidates: list[CandidateResult] = []
    general: Optional[CandidateResult] = None
    improved: bool = False
    threshold: float = THRESHOLD
    per_shape: list[ShapeWinner] = []
    fresh_shapes: list[dict[str, int]] = []
    reach_shapes: list[dict[str, int]] = []  # beyond, between and below the run's shapes (checker:
                                             # reach_shapes, spread_shapes, low_shapes), the spec's inputs only
    checker: str = ""                        # the memory checker used, or why there was none
    host_load: Optional[HostLoad] = None     # other work on the host while the test timed kernels
    process_spread: Optional[Spread] = None  # how much a speedup moved between confirmation processes (log sd)
    notes: list[str] = []

    def candidate(self, round_: Optional[int], key: str) -> Optional[CandidateResult]:
        return next((c for c in self.candidates if c.round == round_ and c.key == key), None)


class DispatchEntry(Record):
    """per_shape/dispatch.json: which kernel to launch for a shape, and how."""

    label: str
    shape: dict[str, int]
    kernel: str                              # path relative to the run directory
    launch: dict[str, Any]                   # a spec `launches` entry
    speedup: float
    winner: str                              # candidate key, or "original"
    round: Optional[int] = None


class OutputFiles(Record):
    """What the run handed back, relative to the run directory."""

    best: str = ""
    dispatch: str = ""
    spec: str = ""
    report: str = ""
    digests: dict[str, str] = {}             # SHA-256 of each kernel, launch and spec file written (record.audit)


class OptimizeResult(Record):
    headline: str = ""                       # the result in one sentence (report.md's)
    run_dir: str
    kernel: str
    spec: str
    device: str
    generator: str
    status: RunStatus
    stop_reason: str
    baseline: list[ShapeTiming] = []
    rounds: list[RoundRecord] = []
    test: Optional[TestReport] = None
    improved: bool = False
    general_round: Optional[int] = None
    general_key: str = ""
    general_config: dict[str, Any] = {}
    general_speedup: Optional[float] = None
    general_interval: Optional[Interval] = None
    per_shape: list[ShapeWinner] = []
    checker: str = ""                        # the memory checker used, or why none was
    notes: list[str] = []
    llm: LLMUsage = LLMUsage()
    files: OutputFiles = OutputFiles()


__all__ = ["CandidateResult", "DispatchEntry", "OptimizeResult", "OutputFiles", "ShapeWinner", "TestReport"]
