"""The records a report is drawn from: one :class:`RunReport` per run
directory, filled by :mod:`kerntune.reporting.load` from what the run wrote,
and read by the plot, Markdown and HTML renderers. Numbers are milliseconds,
GB/s, and speedups as baseline time / candidate time."""

from __future__ import annotations

from typing import Any, Optional

from kerntune.record.models import LLMUsage, RoundRecord, SkippedRule, Transformation
from kerntune.record.outcome import OutputFiles, TestReport
from kerntune.results import Record
from kerntune.speedup import Interval


class ShapeRow(Record):
    """One shape: the baseline, the general configuration and the shape's own best."""

    label: str
    shape: dict[str, int]
    bytes_moved: Optional[int] = None
    floor_ms: Optional[float] = None          # bytes moved / the copy bandwidth of the best's timing session
    baseline_ms: Optional[float] = None
    general_ms: Optional[float] = None
    best_ms: Optional[float] = None
    best_winner: str = ""                     # configuration key, or "original"
    best_round: Optional[int] = None
    general_speedup: Optional[float] = None
    best_speedup: Optional[float] = None
    baseline_gbs: Optional[float] = None
    general_gbs: Optional[float] = None
    best_gbs: Optional[float] = None
    baseline_pct: Optional[float] = None      # achieved bandwidth as % of the measured copy
    general_pct: Optional[float] = None
    best_pct: Optional[float] = None
    general_interval: Optional[Interval] = None   # confirmed runs: the speedups with their 95% intervals
    best_interval: Optional[Interval] = None
    copies_gbs: list[float] = []              # the copy measured in each session that timed this row's kernels
                                              # (every % of copy is against its own session's copy)


class Point(Record):
    """One measured evaluation of the search, in the order the run made them."""

    n: int                                    # evaluation number over the whole run (1-based)
    key: str
    status: str
    value: Optional[float] = None             # its speedup (or geomean time), None when it failed
    best: Optional[float] = None              # the best value of its series so far


class Series(Record):
    name: str                                 # "round 1", or the tuning run's strategy
    round: Optional[int] = None
    points: list[Point] = []


class Failures(Record):
    """How the evaluations of one scope (a round, the run, the final test) ended."""

    scope: str
    ok: int = 0
    failed: dict[str, int] = {}               # status -> count
    pruned: dict[str, int] = {}               # pruning reason -> count
    duplicates: int = 0


class Step(Record):
    """One round in the winning kernel's lineage: the rewrites it applied and the values it chose."""

    round: int
    source: str = ""                          # "rules" or "llm"
    transformations: list[Transformation] = []
    chosen: dict[str, Any] = {}               # the winning configuration's values of this round's parameters
    speedup: Optional[float] = None           # the round's best geomean speedup while tuning
    rationale: str = ""
    skipped: list[SkippedRule] = []           # rules that did not apply, with why


class Param(Record):
    name: str
    values: list[Any]
    baseline: Any = None
    general: Any = None


class Source(Record):
    name: str                                 # what it is, for the diff's column header
    path: str = ""                            # where it lives, relative to the run directory when inside it
    text: str


class RunReport(Record):
    kind: str                                 # "optimize" or "tune"
    run_dir: str
    kernel: str                               # the kernel's name
    kernel_path: str = ""
    spec_path: str = ""
    device: str = ""
    method: str = ""                          # the generator (optimize) or search strategy (tune)
    status: str = ""
    stop_reason: str = ""
    partial: bool = False
    notes: list[str] = []                     # what is missing and why
    record_problems: list[str] = []           # where the record does not hold together (kerntune.record.audit)
    confirmed: bool = False                   # numbers from the final test (not tuning estimates)
    improved: Optional[bool] = None
    baseline_label: str = "the original"
    general_key: str = ""
    general_round: Optional[int] = None
    general_config: dict[str, Any] = {}
    general_speedup: Optional[float] = None   # geomean over the shapes
    general_interval: Optional[Interval] = None   # its 95% confidence interval (confirmed runs)
    per_shape_speedup: Optional[float] = None # geomean of every shape's own best
    copy_gbs: Optional[float] = None          # the copy measured with the baseline (the tuning's first session)
    measured: int = 0
    space_size: Optional[int] = None
    elapsed_s: Optional[float] = None
    metric: str = "speedup"                   # what the convergence values are: "speedup" or "time"
    shapes: list[ShapeRow] = []
    convergence: list[Series] = []
    failures: list[Failures] = []
    trace: list[Step] = []
    params: list[Param] = []
    original: Optional[Source] = None
    winner: Optional[Source] = None
    winner_note: str = ""
    # optimize runs: the records behind the detail sections
    rounds: list[RoundRecord] = []
    test: Optional[TestReport] = None
    llm: LLMUsage = LLMUsage()
    files: Optional[OutputFiles] = None       # what the run handed back (best kernel, dispatch, spec)


def copy_span(r: RunReport) -> Optional[tuple[float, float]]:
    """The lowest and highest copy bandwidth (GB/s) measured in the sessions behind the report's times,
    or None when no copy was measured."""
    seen = [c for s in r.shapes for c in s.copies_gbs] + ([r.copy_gbs] if r.copy_gbs else [])
    return (min(seen), max(seen)) if seen else None


def steady(span: tuple[float, float]) -> bool:
    """Whether the sessions' copies agree (within 5%): one figure then says it."""
    return span[1] <= span[0] * 1.05


def copy_words(r: RunReport) -> str:
    """The copy bandwidth the report's floors and percentages are against, in words: one figure, or the
    range over the timing sessions when they measured different copies (a busy or drifting host)."""
    span = copy_span(r)
    if span is None:
        return ""
    lo, hi = span
    if steady(span):
        return f"{hi:.1f} GB/s, read + write"
    return (f"read + write; measured {lo:.1f} to {hi:.1f} GB/s in the different timing sessions, and each "
            "time is set against the copy of its own session")


def _x(v: float) -> str:
    return f"{v:.2f}x"


def _xi(r: "RunReport") -> str:
    """The general speedup, with its confidence interval when the run has one."""
    from kerntune.fmt import interval

    return interval(r.general_interval) if r.general_interval is not None else _x(r.general_speedup)


def _per_shape_winners(r: RunReport) -> list[ShapeRow]:
    """The shapes whose confirmed best kernel is a candidate, not the original."""
    return [s for s in r.shapes if s.best_winner not in ("", "original") and s.best_speedup]


def faster_list(rows: list[ShapeRow], most: int = 3) -> str:
    """'large 1.66x [1.07, 2.56], ...': each shape's per-shape speedup, with its interval where it has one."""
    from kerntune.fmt import interval

    out = [f"{s.label} {interval(s.best_interval) if s.best_interval is not None else _x(s.best_speedup or 0)}"
           for s in rows[:most]]
    return ", ".join(out) + (f" and {len(rows) - most} more" if len(rows) > most else "")


def headline(r: RunReport) -> str:
    """The result in one sentence."""
    n = len(r.shapes)
    device = r.device.split(" (")[0]
    on = f" on {device}" if device else ""
    shapes = f"{n} shape{'s' if n != 1 else ''}"
    if r.record_problems:
        k = len(r.record_problems)
        return (f"Not to be trusted: the record of this {r.kind} run of {r.kernel} does not hold together ({k} "
                f"problem{'s' if k != 1 else ''}; changed after the run), so none of its numbers is a verified claim.")
    if not r.shapes or all(s.baseline_ms is None and s.best_ms is None for s in r.shapes):
        return f"Partial run: nothing has been measured for {r.kernel} yet."
    if r.kind == "optimize":
        if r.confirmed:
            if r.improved and r.general_speedup:
                best = f"; {_x(r.per_shape_speedup)} with the best kernel per shape" \
                    if r.per_shape_speedup and r.per_shape_speedup > r.general_speedup * 1.005 else ""
                return (f"kerntune made {r.kernel} {_xi(r)} faster{on} (geometric mean over {shapes}, 95% "
                        f"confidence interval, one general configuration{best}), verified again on fresh inputs "
                        "and unseen shapes.")
            near = f" (the best candidate measured {_xi(r)})" if r.general_speedup else ""
            faster = _per_shape_winners(r)
            if faster:
                # the run hands back kernels for these shapes (per_shape/, dispatch.json): a headline saying only
                # that the original stays read as if nothing had been found (a newcomer's tour of an int8 GEMV)
                return (f"No single candidate made {r.kernel} faster{on} on every shape by the required margin{near}, "
                        f"so the original stays the general kernel; on {len(faster)} of {shapes} a per-shape kernel "
                        f"is faster ({faster_list(faster)}): see per_shape/ and dispatch.json.")
            return f"No candidate made {r.kernel} faster{on} by the required margin{near}: the original kernel stays."
        if r.general_speedup:
            return (f"Partial run: tuning estimates so far put {r.kernel} at {_x(r.general_speedup)} faster{on} "
                    f"(geometric mean over {shapes}), not yet confirmed by the final test.")
        if r.status == "done":      # finished, and no round produced a candidate (every proposal refused)
            return (f"No candidate was produced for {r.kernel}{on}: no round's template was usable (see the rounds), "
                    "so the original kernel stays.")
        return f"Partial run: {r.kernel}'s original kernel has been measured{on}; no candidate has been timed yet."
    # a tuning run
    against = f"than {r.baseline_label}" if r.baseline_label else "than the baseline"
    space = f" ({r.measured} of {r.space_size} configurations measured)" if r.space_size else ""
    prefix = "Partial run: so far, " if r.partial else ""
    if r.confirmed and r.general_interval is not None and not r.improved:
        return (f"No configuration of {r.kernel} is verifiably faster {against}{on}: the general configuration "
                f"measured {_xi(r)} (95% confidence interval){space}.")
    if r.general_speedup:
        best = f"; {_x(r.per_shape_speedup)} with the best configuration per shape" \
            if r.per_shape_speedup and r.per_shape_speedup > r.general_speedup * 1.005 else ""
        verb = "makes" if not prefix else "would make"
        if r.confirmed:
            return (f"The general configuration makes {r.kernel} {_xi(r)} faster {against}{on} (geometric mean over "
                    f"{shapes}, 95% confidence interval, confirmed by the tester{best}){space}.")
        lead = f"{prefix}the general configuration" if prefix else "The general configuration"
        return (f"{lead} {verb} {r.kernel} {_x(r.general_speedup)} faster {against}{on} "
                f"(geometric mean over {shapes}{best}){space}.")
    if r.general_key and r.metric == "time":
        lead = f"{prefix}the" if prefix else "The"
        return (f"{lead} fastest configuration of {r.kernel} over {shapes}{on} is {r.general_key} "
                f"(no baseline was measured, so no speedup){space}.")
    return f"{prefix}no configuration of {r.kernel} has been timed on every shape{on}{space}."


__all__ = ["Failures", "Param", "Point", "RunReport", "Series", "ShapeRow", "Source", "Step", "headline"]
