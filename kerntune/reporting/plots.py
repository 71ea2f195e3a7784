"""The report's figures, drawn with matplotlib's object API on the Agg canvas
(no pyplot, no display): each function takes a :class:`RunReport` and returns
PNG bytes, or None when the run has nothing to draw for it yet."""

from __future__ import annotations

import io
import textwrap
from typing import Callable, Optional

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter
from matplotlib.transforms import blended_transform_factory

from kerntune.reporting.model import RunReport, ShapeRow, copy_span, steady

BASELINE, GENERAL, BEST, FLOOR = "#a0aec0", "#2b6cb0", "#dd6b20", "#2f855a"
SERIES = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#b7791f", "#4a5568"]
FAILURE = {"compile_error": "#e53e3e", "wrong_result": "#9b2c2c", "resource_limit": "#d69e2e",
           "launch_failure": "#dd6b20", "crash": "#702459", "timeout": "#6b46c1", "error": "#4a5568"}
DPI = 150
WIDTH = 8.4


def _figure(height: float = 3.9) -> tuple[Figure, object]:
    fig = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(labelsize=9)
    ax.grid(axis="y", color="#e2e8f0", linewidth=0.8)
    ax.set_axisbelow(True)
    return fig, ax


def _legend_below(fig: Figure, handles, labels) -> None:
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8, frameon=False)


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buf.getvalue()


def _shape_axis(ax, rows: list[ShapeRow], extra: list[str] = ()) -> list[float]:
    labels = [r.label for r in rows] + list(extra)
    xs = list(range(len(labels)))
    ax.set_xticks(xs)
    long = max((len(s) for s in labels), default=0) * len(labels) > 90
    ax.set_xticklabels(labels, rotation=25 if long else 0, ha="right" if long else "center", fontsize=9)
    return [float(x) for x in xs]


def _bars(ax, xs: list[float], series: list[tuple[str, str, list[Optional[float]]]], fmt: Callable[[float], str],
) -> None:
    n = len(series)
    width = 0.8 / n
    texts = [fmt(v) for _, _, values in series for v in values if v is not None]
    crowded = len(xs) * n > 10 and max((len(t) for t in texts), default=0) > 5   # labels wider than their bars
    for i, (label, color, values) in enumerate(series):
        pos = [x - 0.4 + width * (i + 0.5) for x in xs]
        hs = [v if v is not None else float("nan") for v in values]     # no bar where there is no value
        bars = ax.bar(pos, hs, width * 0.92, color=color, label=label)
        for b, v in zip(bars, values):
            if v is not None and len(xs) * n <= 36:
                ax.annotate(fmt(v), (b.get_x() + b.get_width() / 2, b.get_height()), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom", fontsize=7, color="#2d3748",
                            rotation=90 if crowded else 0)


def speedup(r: RunReport) -> Optional[bytes]:
    rows = [s for s in r.shapes if s.general_speedup or s.best_speedup]
    if not rows:
        return None
    fig, ax = _figure()
    extra = ["geomean"] if len(rows) > 1 else []
    xs = _shape_axis(ax, rows, extra)
    gen = [s.general_speedup for s in rows] + ([r.general_speedup] if extra else [])
    best = [s.best_speedup for s in rows] + ([r.per_shape_speedup] if extra else [])
    _bars(ax, xs, [("general configuration", GENERAL, gen), ("best per shape", BEST, best)], lambda v: f"{v:.2f}x")
    ax.axhline(1.0, color="#1a202c", linewidth=1, linestyle="--", label=f"baseline: {r.baseline_label}")
    if extra:
        ax.axvline(xs[-1] - 0.5, color="#cbd5e0", linewidth=1)
    top = max([v for v in gen + best if v] + [1.0])
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("speedup over the baseline (x)")
    ax.set_title("Speedup per shape" + ("" if r.confirmed or r.kind == "tune" else " (tuning estimates)"),
                 fontsize=11, loc="left")
    _legend_below(fig, *ax.get_legend_handles_labels())
    return _png(fig)


def times(r: RunReport) -> Optional[bytes]:
    rows = [s for s in r.shapes if s.baseline_ms or s.general_ms or s.best_ms]
    if not rows:
        return None
    fig, ax = _figure()
    xs = _shape_axis(ax, rows)
    ax.set_yscale("log")
    ax.grid(axis="y", which="minor", color="#f1f5f9", linewidth=0.5)
    _bars(ax, xs, [("baseline", BASELINE, [s.baseline_ms for s in rows]),
                   ("general configuration", GENERAL, [s.general_ms for s in rows]),
                   ("best per shape", BEST, [s.best_ms for s in rows])], _ms)
    handles, labels = ax.get_legend_handles_labels()
    floors = [(x, s.floor_ms) for x, s in zip(xs, rows) if s.floor_ms]
    for x, f in floors:
        ax.hlines(f, x - 0.46, x + 0.46, colors=FLOOR, linewidth=2, linestyles="--")
    if floors:
        handles.append(Line2D([], [], color=FLOOR, linewidth=2, linestyle="--"))
        span = copy_span(r)
        labels.append("copy-speed floor" + ("" if span is None else
                                            f" (bytes / {span[1]:.0f} GB/s measured copy)" if steady(span)
                                            else f" (bytes / measured copy, {span[0]:.0f}-{span[1]:.0f} GB/s)"))
    values = [v for s in rows for v in (s.baseline_ms, s.general_ms, s.best_ms, s.floor_ms) if v]
    ax.set_ylim(min(values) / 2.5, max(values) * 3)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _ms(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("median run time (log scale)")
    ax.set_title("Run time per shape", fontsize=11, loc="left")
    _legend_below(fig, handles, labels)
    return _png(fig)


def bandwidth(r: RunReport) -> Optional[bytes]:
    rows = [s for s in r.shapes if s.baseline_pct is not None or s.best_pct is not None]
    if not rows:
        return None
    fig, ax = _figure()
    xs = _shape_axis(ax, rows)
    _bars(ax, xs, [("baseline", BASELINE, [s.baseline_pct for s in rows]),
                   ("general configuration", GENERAL, [s.general_pct for s in rows]),
                   ("best per shape", BEST, [s.best_pct for s in rows])], lambda v: f"{v:.0f}%")
    ax.axhline(100, color=FLOOR, linewidth=1.5, linestyle="--")
    ax.text(1.0, 100, " measured copy", transform=blended_transform_factory(ax.transAxes, ax.transData),
            fontsize=8, va="bottom", ha="right", color=FLOOR)
    top = max([v for s in rows for v in (s.baseline_pct, s.general_pct, s.best_pct) if v is not None] + [100])
    ax.set_ylim(0, top * 1.18)
    ax.set_ylabel("achieved bandwidth, % of copy")
    ax.set_title("Achieved bandwidth as a fraction of a copy measured in the same run", fontsize=11, loc="left")
    _legend_below(fig, *ax.get_legend_handles_labels())
    return _png(fig)


def convergence(r: RunReport) -> Optional[bytes]:
    if not any(s.points for s in r.convergence):
        return None
    fig, ax = _figure()
    failed_x = []
    for i, s in enumerate(r.convergence):
        color = SERIES[i % len(SERIES)]
        ok = [(p.n, p.value) for p in s.points if p.value is not None]
        if ok:
            ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=14, color=color, alpha=0.35, linewidths=0)
        best = [(p.n, p.best) for p in s.points if p.best is not None]
        if best:
            ax.step([p[0] for p in best], [p[1] for p in best], where="post", color=color, linewidth=2,
                    label=f"{s.name}: best {_value(r, best[-1][1])}")
        failed_x += [p.n for p in s.points if p.value is None]
    if failed_x:
        ax.scatter(failed_x, [0.02] * len(failed_x), marker="x", s=18, color=FAILURE["compile_error"],
                   transform=blended_transform_factory(ax.transData, ax.transAxes), label="failed", clip_on=False)
    if r.metric == "speedup":
        ax.axhline(1.0, color="#1a202c", linewidth=1, linestyle="--")
        ax.set_ylabel("geomean speedup over the baseline (x)")
    else:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _ms(v)))
        ax.set_ylabel("geomean run time")
    ax.set_xlabel("measured evaluations, in order")
    ax.set_title("Search convergence: the best configuration so far", fontsize=11, loc="left")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def failures(r: RunReport) -> Optional[bytes]:
    scopes = [f for f in r.failures if f.ok or f.failed or f.pruned or f.duplicates]
    if not scopes:
        return None
    cats: list[tuple[str, str]] = [("ok", "#38a169")]
    for f in scopes:
        for k in f.failed:
            if k not in [c[0] for c in cats]:
                cats.append((k, FAILURE.get(k.split(" ")[0], "#c53030")))
    greys = ["#718096", "#a0aec0", "#4a5568", "#cbd5e0"]
    pruned = sorted({k for f in scopes for k in f.pruned})
    cats += [(f"pruned: {k}", greys[i % len(greys)]) for i, k in enumerate(pruned)]
    cats.append(("duplicate", "#bee3f8"))
    fig, ax = _figure(max(2.2, 0.55 * len(scopes) + 1.5))
    ax.grid(axis="y", visible=False)
    ax.grid(axis="x", color="#e2e8f0", linewidth=0.8)
    ys = list(range(len(scopes)))[::-1]
    left = [0] * len(scopes)
    for name, color in cats:
        vals = [f.ok if name == "ok" else f.duplicates if name == "duplicate" else
                f.pruned.get(name[len("pruned: "):], 0) if name.startswith("pruned: ") else f.failed.get(name, 0)
                for f in scopes]
        if not any(vals):
            continue
        bars = ax.barh(ys, vals, left=left, color=color, label=name, height=0.6)
        for b, v in zip(bars, vals):
            if v:
                ax.text(b.get_x() + b.get_width() / 2, b.get_y() + b.get_height() / 2, str(v), ha="center",
                        va="center", fontsize=7, color="white" if name != "duplicate" else "#2a4365")
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(ys)
    ax.set_yticklabels([f.scope for f in scopes], fontsize=9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("evaluations")
    ax.set_title("How the evaluations ended", fontsize=11, loc="left")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def trace(r: RunReport) -> Optional[bytes]:
    if not r.trace:
        return None
    steps = [("original", 1.0, "")]
    for s in r.trace:
        rules = ", ".join(t.rule for t in s.transformations)
        steps.append((f"round {s.round} ({s.source or 'rewrite'})", s.speedup, rules))
    if r.confirmed and r.general_speedup:
        steps.append(("final test", r.general_speedup, "re-verified, re-timed beside the original"))
    fig, ax = _figure(max(2.2, 0.6 * len(steps) + 1.2))
    ax.grid(axis="y", visible=False)
    ax.grid(axis="x", color="#e2e8f0", linewidth=0.8)
    ys = list(range(len(steps)))[::-1]
    colors = [BASELINE] + [SERIES[0]] * len(r.trace) + ([BEST] if len(steps) > len(r.trace) + 1 else [])
    vals = [v or 0.0 for _, v, _ in steps]
    ax.barh(ys, vals, color=colors, height=0.6)
    top = max(vals + [1.0])
    for y, (name, v, note) in zip(ys, steps):
        text = (f"{v:.2f}x" if v else "not tuned") + (f"   {note}" if note else "")
        ax.text((v or 0) + top * 0.01, y, "\n".join(textwrap.wrap(text, 60)), va="center", fontsize=8,
                color="#2d3748")
    ax.axvline(1.0, color="#1a202c", linewidth=1, linestyle="--")
    ax.set_xlim(0, top * 2.3)
    ax.set_yticks(ys)
    ax.set_yticklabels([s[0] for s in steps], fontsize=9)
    ax.set_xlabel("geomean speedup over the original (x): tuning estimate per round")
    ax.set_title("The winning kernel's lineage", fontsize=11, loc="left")
    return _png(fig)


def _ms(v: float) -> str:
    if v < 1e-3:
        return f"{v * 1e6:.3g} ns"
    if v < 1:
        return f"{v * 1e3:.3g} µs"
    return f"{v:.3g} ms" if v < 1000 else f"{v / 1e3:.3g} s"


def _value(r: RunReport, v: float) -> str:
    return f"{v:.2f}x" if r.metric == "speedup" else _ms(v)


# (id, title, function): the order the report shows them in
PLOTS: list[tuple[str, str, Callable[[RunReport], Optional[bytes]]]] = [
    ("speedup", "Speedup per shape", speedup),
    ("times", "Run time per shape", times),
    ("convergence", "Search convergence", convergence),
    ("bandwidth", "Achieved bandwidth", bandwidth),
    ("failures", "Failures by reason", failures),
    ("trace", "Transformation trace", trace),
]


def draw_all(r: RunReport) -> dict[str, bytes]:
    """Every figure the run has data for, by id."""
    out = {}
    for pid, _, fn in PLOTS:
        png = fn(r)
        if png is not None:
            out[pid] = png
    return out


__all__ = ["PLOTS", "draw_all"]
