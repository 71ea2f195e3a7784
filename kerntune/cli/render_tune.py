"""Human rendering of tuning progress and results (the JSON form is the
pydantic records themselves)."""

from __future__ import annotations

import math

from rich.markup import escape

from kerntune.cli.output import Progress as OutputProgress
from kerntune.cli.output import fmt_interval, fmt_ms, fmt_pct, fmt_x, grid, out, print_table
from kerntune.tuner.run import Progress
from kerntune.tuner.summary import TuneSummary, prior_notes


def _bar(done: float, total: float, width: int = 30) -> str:
    frac = 0.0 if total <= 0 else min(1.0, done / total)
    full = int(frac * width)
    return "█" * full + "░" * (width - full)


class LiveProgress:
    """The search's progress: on a terminal a live panel (evaluations / budget, valid / failed /
    pruned, best so far), erased at the end; elsewhere a line at each tenth of the budget."""

    def __init__(self, title: str):
        self.title = title
        self.progress = OutputProgress()
        self._tenth = -1

    def __enter__(self) -> "LiveProgress":
        self.progress.__enter__()
        self.progress.line(escape(self.title))
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, p: Progress) -> None:
        best = ""
        if math.isfinite(p.best_score):
            what = f"{1 / p.best_score:.3f}x over the baseline (geomean)" if p.relative else \
                f"{fmt_ms(p.best_score)} (geomean time; no baseline was measured)"
            best = f"best so far {what}, {p.best_key}"
        counts = f"{p.ok} valid, {p.failed} failed, {p.pruned} pruned, {p.duplicates} duplicates"
        seen = p.measured + p.pruned + p.duplicates       # with no budget: configurations visited, of the space
        lines = [escape(self.title)]
        if p.budget:
            lines.append(f"{_bar(p.measured, p.budget)} {p.measured}/{p.budget} evaluations")
        elif p.space:
            lines.append(f"{_bar(seen, p.space)} {seen}/{p.space} configurations visited, {p.measured} evaluations")
        else:
            lines.append(f"{p.measured} evaluations")
        if p.time_limit_s:
            lines.append(f"{_bar(p.elapsed_s, p.time_limit_s)} {p.elapsed_s:.0f}/{p.time_limit_s:.0f} s")
        lines.append(f"[green]{p.ok} valid[/]  [red]{p.failed} failed[/]  [yellow]{p.pruned} pruned[/]  "
                     f"{p.duplicates} duplicates  ({escape(p.phase)})")
        if best:
            lines.append(escape(best))
        if p.last_key:
            lines.append(f"[dim]last: {escape(p.last_key)} -> {escape(p.last_status)}[/]")
        tenth = int(10 * p.measured / p.budget) if p.budget else int(10 * seen / p.space) if p.space else -1
        step = ""
        if tenth != self._tenth and p.measured:
            self._tenth = tenth
            done = f"{p.measured}/{p.budget} evaluations" if p.budget else \
                f"{p.measured} evaluation{'s' if p.measured != 1 else ''}, {seen} of {p.space} configurations visited"
            step = escape(f"{done} ({counts})" + (f"; {best}" if best else ""))
        elif p.phase not in ("searching", "starting"):
            step = escape(p.phase)
        self.progress.show(lines, step)


def render_summary(s: TuneSummary) -> None:
    """The result first, then the numbers behind it."""
    out.print(f"[bold]{escape(s.headline)}[/]")
    stopped = "read from the cache, nothing searched" if s.strategy == "imported" else "stopped"
    out.print(escape(f"{s.template}, strategy {s.strategy}: {s.stop_reason or stopped}; space {s.space_size} "
                     f"configurations: {s.measured} measured ({s.ok} valid, {s.failed} failed), {s.pruned} pruned, "
                     f"{s.duplicates} duplicates" + (f"; budget {s.budget}" if s.budget else "")))
    if s.pruned_by_reason:
        out.print(escape("pruned: " + ", ".join(f"{k} {v}" for k, v in sorted(s.pruned_by_reason.items(),
                                                                                key=lambda x: -x[1]))))
    if s.failed_by_status:
        out.print(escape("failed: " + ", ".join(f"{k} {v}" for k, v in sorted(s.failed_by_status.items(),
                                                                                key=lambda x: -x[1]))))
    if s.crashed is not None:
        out.print(f"[yellow]hint:[/] {escape(s.crashed.hint(s.run_dir))}")
    for note in prior_notes(s):
        out.print(escape(note))
    for v in s.set_aside:
        out.print(f"[yellow]set aside[/] {escape(v.describe())}; {v.answered} later proposal(s) answered without measuring")
    if not s.shapes:
        return
    if s.test is not None:
        _render_confirmed(s)
        return
    rows = [[r.label, fmt_ms(r.baseline_ms), fmt_ms(r.best_ms), fmt_x(r.speedup), fmt_ms(r.general_ms),
             fmt_x(r.general_speedup), fmt_pct(r.general_gap_pct), r.best_key] for r in s.shapes]
    print_table(grid(["shape", "baseline", "best", "speedup", "general", "general\nspeedup", "gap", "best configuration"],
                     rows, title=f"Per shape (baseline: {s.baseline}; the search's own estimates, not confirmed)",
                     right=frozenset(range(1, 7))))
    if s.general is not None:
        g = s.general
        how = (f"geomean speedup [bold]{g.geomean_speedup:.3f}x[/]" if g.geomean_speedup is not None
               else f"geomean time [bold]{fmt_ms(g.geomean_ms)}[/] (no baseline: times, not speedups)")
        out.print(f"general configuration: [bold]{escape(g.key)}[/]  {how}"
                  + (f"  (per-shape best: {s.per_shape_geomean_speedup:.3f}x)" if s.per_shape_geomean_speedup else ""))


def _render_confirmed(s: TuneSummary) -> None:
    test = s.test
    rows = [[w.label, fmt_ms(w.baseline_ms), fmt_ms(w.best_ms), fmt_interval(w.interval), fmt_pct(w.pct_of_copy),
             w.winner] for w in test.per_shape]
    print_table(grid(["shape", "baseline", "best", "speedup [95% CI]", "% of\ncopy", "winner"], rows,
                     title=f"Per shape, confirmed: re-verified and timed interleaved with the baseline ({s.baseline})",
                     right=frozenset({1, 2, 3, 4})))
    for c in test.candidates:
        if not c.verified:
            out.print(f"[red]rejected[/] {escape(c.key)}: {c.status.value}: {escape(c.message)}")
        elif c.message and not c.identical:     # verified, with a word on how (checks settled by the reference)
            out.print(f"[yellow]note[/] {escape(c.key)}: {escape(c.message)}")
    g = s.confirmed_general()
    if g is not None:
        verdict = ("[green]faster[/]" if test.improved else
                   f"[yellow]not a verified speedup[/] (the interval does not clear {test.threshold:.2f}x)")
        out.print(f"general configuration: [bold]{escape(g.key)}[/]  {fmt_interval(g.geomean)} geomean over the "
                  f"baseline (95% confidence interval): {verdict}")
    elif s.general is not None:
        out.print(f"general configuration: [bold]{escape(s.general.key)}[/]: not confirmed")
    out.print(f"memory checker: {escape(test.checker)}")
    for note in test.notes:
        out.print(f"[yellow]note[/]: {escape(note)}")
