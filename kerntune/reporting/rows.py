"""Shared pieces of the report loaders: shape rows from timings (the tester's
confirmation when there is one), convergence series and failure counts."""

from __future__ import annotations

from typing import Any, Optional

from kerntune.record.outcome import CandidateResult, TestReport
from kerntune.reporting.model import Failures, Point, Series, ShapeRow
from kerntune.results import EvalResult, ShapeTiming, Status
from kerntune.speedup import geomean
from kerntune.tuner.store import Evaluation
from kerntune.tuner.summary import TuneSummary

General = tuple[Optional[int], str, dict[str, Any], Optional[float]]     # round, key, config, speedup
NO_GENERAL: General = (None, "", {}, None)


def shape_id(shape: dict[str, int]) -> tuple:
    return tuple(sorted((k, int(v)) for k, v in shape.items()))


def series(name: str, round_: Optional[int], evals: list[Evaluation], start: int, speedup: bool) -> Series:
    """The measured evaluations in order; a score is candidate / baseline time (geomean), so speedup = 1 / score."""
    points, best, n = [], None, start
    for e in evals:
        if not e.counted:
            continue
        n += 1
        value = None
        if e.status == Status.OK.value and e.score:
            value = 1.0 / e.score if speedup else e.score
            best = value if best is None else (max(best, value) if speedup else min(best, value))
        points.append(Point(n=n, key=e.key, status=e.status, value=value, best=best))
    return Series(name=name, round=round_, points=points)


def failures(scope: str, s: TuneSummary) -> Failures:
    return Failures(scope=scope, ok=s.ok, failed=dict(s.failed_by_status), pruned=dict(s.pruned_by_reason),
                    duplicates=s.duplicates)


def test_failures(test: TestReport) -> Failures:
    """How the final test's candidates ended, by status."""
    failed: dict[str, int] = {}
    for c in test.candidates:
        if not c.verified:
            failed[c.status.value] = failed.get(c.status.value, 0) + 1
    return Failures(scope="final test", ok=sum(1 for c in test.candidates if c.verified), failed=failed)


def timing(result: Optional[EvalResult], shape: dict[str, int]) -> Optional[ShapeTiming]:
    if result is None:
        return None
    sid = shape_id(shape)
    return next((t for t in result.timings if shape_id(t.shape) == sid), None)


def timing_of(c: Optional[CandidateResult], shape: dict[str, int]) -> Optional[ShapeTiming]:
    if c is None:
        return None
    sid = shape_id(shape)
    return next((t for t in c.timings if shape_id(t.shape) == sid), None)


def session_copy(t: Optional[ShapeTiming]) -> Optional[float]:
    """The copy bandwidth (GB/s) measured in the session that timed ``t``, from its achieved bandwidth and
    its % of that copy."""
    if t is None or not t.pct_of_copy or not t.achieved_gbs:
        return None
    return t.achieved_gbs * 100 / t.pct_of_copy


def copy_gbs(*results: Optional[EvalResult]) -> Optional[float]:
    for r in results:
        if r is not None and r.copy_bandwidth is not None and r.copy_bandwidth.stats.median_ms > 0:
            return r.copy_bandwidth.gbs
    return None


def shape_row(label: str, shape: dict[str, int], copy: Optional[float], base: Optional[ShapeTiming],
              general: Optional[ShapeTiming], best: Optional[ShapeTiming], **known: Any) -> ShapeRow:
    """A row from the three timings; ``known`` overrides (the tester's own numbers)."""
    bytes_moved = next((t.bytes_moved for t in (base, general, best) if t is not None), None)
    row: dict[str, Any] = dict(label=label, shape=shape, bytes_moved=bytes_moved)
    sessions = [session_copy(t) for t in (best, general, base)]
    row["copies_gbs"] = sorted({c for c in sessions if c})
    # the floor against the copy of the session that timed the best kernel: its "best / floor" then agrees
    # with its % of copy (the copy drifts between sessions on a busy host)
    floor_copy = next((c for c in sessions if c), copy)
    if bytes_moved and floor_copy:
        row["floor_ms"] = bytes_moved / (floor_copy * 1e9) * 1e3
    for name, t in (("baseline", base), ("general", general), ("best", best)):
        if t is not None:
            row[f"{name}_ms"] = t.stats.median_ms
            row[f"{name}_gbs"] = t.achieved_gbs
            row[f"{name}_pct"] = t.pct_of_copy
    row.update({k: v for k, v in known.items() if v is not None})
    b = row.get("baseline_ms")
    for name in ("general", "best"):
        ms = row.get(f"{name}_ms")
        if f"{name}_speedup" not in known and b and ms:
            row[f"{name}_speedup"] = b / ms
    return ShapeRow(**row)


def per_shape_geomean(rows: list[ShapeRow]) -> Optional[float]:
    vals = [r.best_speedup for r in rows if r.best_speedup]
    return geomean(vals) if vals else None


def confirmed_rows(test: TestReport, copy: Optional[float]) -> tuple[list[ShapeRow], General]:
    """Rows from the tester's confirmation: its own interleaved timings and intervals."""
    g = test.general
    winners = {shape_id(w.shape): w for w in test.per_shape}
    rows = []
    for bt in test.baseline:
        w = winners.get(shape_id(bt.shape))
        best_t, known = None, {}
        if w is not None:
            cand = test.candidate(w.round, w.winner)
            best_t = bt if w.winner == "original" else timing_of(cand, bt.shape)
            known = dict(best_ms=w.best_ms, best_speedup=w.speedup, best_pct=w.pct_of_copy, best_winner=w.winner,
                         best_round=w.round, best_interval=w.interval)
        gen_t = timing_of(g, bt.shape)
        if g is not None and bt.label in g.speedups:
            known["general_speedup"] = g.speedups[bt.label]
            known["general_interval"] = g.intervals.get(bt.label)
        rows.append(shape_row(bt.label, bt.shape, copy, bt, gen_t, best_t, **known))
    general = (g.round, g.key, g.config, g.geomean_speedup) if g is not None else NO_GENERAL
    return rows, general


__all__ = ["General", "NO_GENERAL", "confirmed_rows", "copy_gbs", "failures", "per_shape_geomean", "series",
           "session_copy", "shape_id", "shape_row", "test_failures", "timing", "timing_of"]
