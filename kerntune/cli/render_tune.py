"""Human rendering of tuning progress and results (the JSON form is the
pydantic records themselves)."""

from __future__ import annotations

import math

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kerntune.cli.output import err, fmt_interval, fmt_ms, fmt_pct, fmt_x, out
from kerntune.tuner.run import Progress
from kerntune.tuner.summary import TuneSummary


def _bar(done: float, total: float, width: int = 30) -> str:
    frac = 0.0 if total <= 0 else min(1.0, done / total)
    full = int(frac * width)
    return "█" * full + "░" * (width - full)


class LiveProgress:
    """A Rich live panel: evaluations / budget, valid / failed / pruned, best so far."""

    def __init__(self, title: str):
        self.title = title
        self.live = Live(console=err, refresh_per_second=4, transient=False)

    def __enter__(self) -> "LiveProgress":
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def update(self, p: Progress) -> None:
        lines = [Text(self.title, style="bold")]
        if p.budget:
            lines.append(Text(f"{_bar(p.measured, p.budget)} {p.measured}/{p.budget} evaluations"))
        else:
            lines.append(Text(f"{p.measured} evaluations"))
        if p.time_limit_s:
            lines.append(Text(f"{_bar(p.elapsed_s, p.time_limit_s)} {p.elapsed_s:.0f}/{p.time_limit_s:.0f} s"))
        lines.append(Text.from_markup(f"[green]{p.ok} valid[/]  [red]{p.failed} failed[/]  "
                                      f"[yellow]{p.pruned} pruned[/]  {p.duplicates} duplicates  ({p.phase})"))
        if math.isfinite(p.best_score):
            lines.append(Text.from_markup(f"best so far: [bold]{1 / p.best_score:.3f}x[/] over the baseline "
                                          f"(geomean)  {p.best_key}"))
        if p.last_key:
            lines.append(Text(f"last: {p.last_key} -> {p.last_status}", style="dim"))
        self.live.update(Group(*lines))


def render_summary(s: TuneSummary) -> None:
    out.print(f"[bold]{s.template}[/] on {s.device}, strategy {s.strategy}: {s.stop_reason or 'stopped'}")
    out.print(f"space {s.space_size} configurations: {s.measured} measured ({s.ok} valid, {s.failed} failed), "
              f"{s.pruned} pruned, {s.duplicates} duplicates" + (f"; budget {s.budget}" if s.budget else ""))
    if s.pruned_by_reason:
        out.print("pruned: " + ", ".join(f"{k} {v}" for k, v in sorted(s.pruned_by_reason.items(), key=lambda x: -x[1])))
    if s.failed_by_status:
        out.print("failed: " + ", ".join(f"{k} {v}" for k, v in sorted(s.failed_by_status.items(), key=lambda x: -x[1])))
    for v in s.set_aside:
        out.print(f"[yellow]set aside[/] {v.describe()}; {v.answered} later proposal(s) answered without measuring")
    if not s.shapes:
        return
    if s.test is not None:
        _render_confirmed(s)
        return
    t = Table(title=f"Per shape (baseline: {s.baseline}; the search's own estimates, not confirmed)",
              title_justify="left")
    for col in ("shape", "baseline", "best", "speedup", "general", "speedup ", "gap", "best configuration"):
        t.add_column(col, justify="left" if col in ("shape", "best configuration") else "right")
    for r in s.shapes:
        t.add_row(r.label, fmt_ms(r.baseline_ms), fmt_ms(r.best_ms), fmt_x(r.speedup), fmt_ms(r.general_ms),
                  fmt_x(r.general_speedup), fmt_pct(r.general_gap_pct), r.best_key)
    out.print(t)
    if s.general is not None:
        g = s.general
        how = (f"geomean speedup [bold]{g.geomean_speedup:.3f}x[/]" if g.geomean_speedup is not None
               else f"geomean time [bold]{fmt_ms(g.geomean_ms)}[/] (no baseline recorded)")
        out.print(f"general configuration: [bold]{g.key}[/]  {how}"
                  + (f"  (per-shape best: {s.per_shape_geomean_speedup:.3f}x)" if s.per_shape_geomean_speedup else ""))
    else:
        out.print("[yellow]no configuration was timed on every shape[/]")


def _render_confirmed(s: TuneSummary) -> None:
    test = s.test
    t = Table(title=f"Per shape, confirmed: re-verified and timed interleaved with the baseline ({s.baseline})",
              title_justify="left")
    for col in ("shape", "baseline", "best", "speedup [95% CI]", "% of copy", "winner"):
        t.add_column(col, justify="left" if col in ("shape", "winner") else "right", overflow="fold")
    for w in test.per_shape:
        t.add_row(w.label, fmt_ms(w.baseline_ms), fmt_ms(w.best_ms), fmt_interval(w.interval), fmt_pct(w.pct_of_copy),
                  w.winner)
    out.print(t)
    rejected = [c for c in test.candidates if not c.verified]
    for c in rejected:
        out.print(f"[red]rejected[/] {c.key}: {c.message}")
    g = test.general
    if g is not None and g.geomean is not None:
        verdict = ("[green]faster[/]" if test.improved else
                   f"[yellow]not a verified speedup[/] (the interval does not clear {test.threshold:.2f}x)")
        out.print(f"general configuration: [bold]{g.key}[/]  {fmt_interval(g.geomean)} geomean over the baseline "
                  f"(95% confidence interval): {verdict}")
    elif s.general is not None:
        out.print(f"general configuration: [bold]{s.general.key}[/]: not confirmed")
    out.print(f"memory checker: {test.checker}")
