"""The tables behind the figures (and the optimize run's detail tables), as
plain cells, so the Markdown and HTML renderers show the same numbers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from kerntune import fmt
from kerntune.record.models import Transformation
from kerntune.reporting.model import RunReport, ShapeRow


class Code(str):
    """A cell to show as code (a configuration key, a parameter value)."""


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    numeric: frozenset[int] = frozenset()       # right-aligned columns


ms = fmt.ms
nbytes = fmt.nbytes
pct = fmt.pct


def x(v: Optional[float]) -> str:
    return fmt.times(v, 3)


def gbs(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.1f} GB/s"


def value(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def winner(r: RunReport, s: ShapeRow) -> str:
    if not s.best_winner:
        return "-"
    if s.best_winner == "original":
        return "original"
    return Code(s.best_winner) if s.best_round is None else Code(f"round {s.best_round}: {s.best_winner}")


def _xi(iv, v) -> str:
    """A confirmed speedup with its 95% interval, else the plain estimate."""
    return fmt.interval(iv) if iv is not None else x(v)


def speedup(r: RunReport) -> Table:
    head = "speedup [95% CI]" if r.confirmed else "speedup"
    t = Table(["shape", r.baseline_label if r.kind == "tune" else "original", "general", head,
               "best per shape", head, "% of copy", "winner"], numeric=frozenset(range(1, 7)))
    for s in r.shapes:
        t.rows.append([s.label, ms(s.baseline_ms), ms(s.general_ms), _xi(s.general_interval, s.general_speedup),
                       ms(s.best_ms), _xi(s.best_interval, s.best_speedup), pct(s.best_pct), winner(r, s)])
    if len(r.shapes) > 1:
        t.rows.append(["geomean", "", "", _xi(r.general_interval, r.general_speedup), "", x(r.per_shape_speedup),
                       "", ""])
    return t


def times(r: RunReport) -> Table:
    t = Table(["shape", "sizes", "bytes moved", "copy-speed floor", "baseline", "general", "best per shape",
               "best / floor"], numeric=frozenset(range(2, 8)))
    for s in r.shapes:
        ratio = f"{s.best_ms / s.floor_ms:.2f}" if s.best_ms and s.floor_ms else "-"
        t.rows.append([s.label, " ".join(f"{k}={v}" for k, v in s.shape.items()), nbytes(s.bytes_moved),
                       ms(s.floor_ms), ms(s.baseline_ms), ms(s.general_ms), ms(s.best_ms), ratio])
    return t


def bandwidth(r: RunReport) -> Table:
    t = Table(["shape", "baseline", "% of copy", "general", "% of copy", "best per shape", "% of copy"],
              numeric=frozenset(range(1, 7)))
    for s in r.shapes:
        t.rows.append([s.label, gbs(s.baseline_gbs), pct(s.baseline_pct), gbs(s.general_gbs), pct(s.general_pct),
                       gbs(s.best_gbs), pct(s.best_pct)])
    return t


def convergence(r: RunReport) -> Table:
    unit = (lambda v: x(v)) if r.metric == "speedup" else ms
    t = Table(["search", "measured", "valid", "failed", "first valid", "best", "best reached at"],
              numeric=frozenset(range(1, 7)))
    for s in r.convergence:
        ok = [p for p in s.points if p.value is not None]
        best = ok[-1].best if ok else None
        at = next((p.n for p in s.points if p.value is not None and p.value == best), None)
        t.rows.append([s.name, str(len(s.points)), str(len(ok)), str(len(s.points) - len(ok)),
                       unit(ok[0].value) if ok else "-", unit(best) if best is not None else "-",
                       f"evaluation {at}" if at else "-"])
    return t


def failures(r: RunReport) -> Table:
    t = Table(["scope", "ok", "failed", "failed by reason", "pruned", "pruned by reason", "duplicates"],
              numeric=frozenset({1, 2, 4, 6}))
    for f in r.failures:
        t.rows.append([f.scope, str(f.ok), str(sum(f.failed.values())),
                       ", ".join(f"{k} {v}" for k, v in f.failed.items()) or "-", str(sum(f.pruned.values())),
                       ", ".join(f"{k} {v}" for k, v in f.pruned.items()) or "-", str(f.duplicates)])
    return t


def trace(r: RunReport) -> Table:
    t = Table(["round", "source", "rule", "what it did", "chosen values", "round best (tuning)"],
              numeric=frozenset({5}))
    for step in r.trace:
        for i, tr in enumerate(step.transformations or [Transformation(rule="-")]):
            chosen = ", ".join(f"{p}={value(step.chosen[p])}" for p in tr.params if p in step.chosen)
            t.rows.append([str(step.round) if i == 0 else "", step.source if i == 0 else "",
                           Code(tr.rule), tr.summary, Code(chosen) if chosen else "-",
                           x(step.speedup) if i == 0 else ""])
    return t


def params(r: RunReport) -> Table:
    t = Table(["parameter", "values searched", "baseline", "general configuration"])
    for p in r.params:
        t.rows.append([Code(p.name), ", ".join(value(v) for v in p.values), Code(value(p.baseline)),
                       Code(value(p.general)) if p.general is not None else "-"])
    return t


def rounds(r: RunReport) -> Table:
    t = Table(["round", "source", "status", "space", "measured", "best (tuning)", "transformations"],
              numeric=frozenset({3, 4, 5}))
    for rd in r.rounds:
        tr = "; ".join(x_.summary for x_ in rd.transformations) or rd.message or "-"
        t.rows.append([str(rd.round), rd.source or "-", rd.status.value, str(rd.space_size), str(rd.measured),
                       x(rd.best_speedup) if rd.best_speedup else "-", tr])
    return t


def final_test(r: RunReport) -> Table:
    t = Table(["round", "configuration", "verified", "geomean speedup", "flags"], numeric=frozenset({3}))
    for c in (r.test.candidates if r.test else []):
        flags = "; ".join(c.flags) or ("" if c.identical else c.message)
        t.rows.append([str(c.round), Code(c.key), "yes" if c.verified else "no",
                       _xi(c.geomean, c.geomean_speedup) if c.geomean_speedup else "-", flags])
    return t


# the table behind each figure, by figure id
FOR_PLOT = {"speedup": speedup, "times": times, "convergence": convergence, "bandwidth": bandwidth,
            "failures": failures, "trace": trace}

__all__ = ["Code", "FOR_PLOT", "Table", "bandwidth", "convergence", "failures", "final_test", "ms", "params",
           "pct", "rounds", "speedup", "times", "trace", "x"]
