"""report.html: one self-contained page (CSS inline, figures as base64 PNG,
no script, nothing fetched), readable on a phone and on a wide screen."""

from __future__ import annotations

import base64
import html
from typing import Optional

from kerntune import __version__
from kerntune.reporting import diff, tables
from kerntune.reporting.model import RunReport, headline
from kerntune.reporting.sections import TITLES, caption, file_items, llm_line, missing, plan_line, plot_ids, reproduce
from kerntune.reporting.style import CSS
from kerntune.reporting.tables import Code, Table


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def table(t: Table, cls: str = "") -> str:
    if not t.rows:
        return ""
    head = "".join(f'<th class="{"num" if i in t.numeric else ""}">{esc(h)}</th>' for i, h in enumerate(t.headers))
    body = []
    for row in t.rows:
        cells = []
        for i, c in enumerate(row):
            # configuration keys break after their commas, never inside a name=value
            inner = f"<code>{esc(c).replace(',', ',<wbr>')}</code>" if isinstance(c, Code) and str(c) else esc(c)
            cells.append(f'<td class="{"num" if i in t.numeric else ""}">{inner}</td>')
        total = ' class="total"' if row and row[0] == "geomean" else ""
        body.append(f"<tr{total}>{''.join(cells)}</tr>")
    return (f'<div class="table-wrap"><table class="{cls}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _tiles(r: RunReport) -> str:
    tiles: list[tuple[str, str, str]] = []
    if r.general_interval is not None:
        iv = r.general_interval
        tiles.append((f"{iv.ratio:.2f}x", f"general configuration, geomean (95% CI {iv.lo:.2f}–{iv.hi:.2f})", "hero"))
    elif r.general_speedup:
        tiles.append((f"{r.general_speedup:.2f}x", "general configuration, geomean (tuning estimate)", "hero"))
    if r.per_shape_speedup:
        tiles.append((f"{r.per_shape_speedup:.2f}x", "best per shape, geomean", ""))
    pcts = [s.best_pct for s in r.shapes if s.best_pct is not None]
    if pcts:
        tiles.append((f"{min(pcts):.0f}–{max(pcts):.0f}%", "of the measured copy (best)", ""))
    tiles.append((str(len(r.shapes)), "shapes", ""))
    tiles.append((str(r.measured), "evaluations measured" if r.kind == "optimize" else
                  f"of {r.space_size} configurations" if r.space_size else "evaluations", ""))
    if r.kind == "optimize":
        tiles.append((str(len(r.rounds)), "rounds", ""))
    if r.elapsed_s:
        tiles.append((f"{r.elapsed_s:.0f} s", "tuning time", ""))
    return "".join(f'<div class="tile {c}"><div class="big">{esc(v)}</div><div class="small">{esc(k)}</div></div>'
                   for v, k, c in tiles)


def _verdict(r: RunReport) -> tuple[str, str]:
    if r.record_problems:
        return "bad", "not trusted"
    if r.partial:
        return "partial", "partial run"
    if r.kind == "optimize":
        return ("good", "verified faster") if r.improved else ("neutral", "no improvement")
    if r.confirmed:
        return ("good", "verified faster") if r.improved else ("neutral", "no verified speedup")
    return ("good", "tuned") if (r.general_speedup or 0) > 1.0 else ("neutral", "no faster configuration")


def _header(r: RunReport) -> str:
    cls, word = _verdict(r)
    meta = " · ".join(esc(x) for x in (f"kerntune {r.kind}", r.device, r.method, r.kernel_path) if x)
    return (f'<header class="hero"><div class="wrap"><div class="eyebrow">{meta}</div>'
            f'<h1>{esc(r.kernel)} <span class="pill {cls}">{esc(word)}</span></h1>'
            f'<p class="headline">{esc(headline(r))}</p><div class="tiles">{_tiles(r)}</div></div></header>')


def _banner(r: RunReport) -> str:
    if r.record_problems:
        items = "".join(f"<li>{esc(p)}</li>" for p in r.record_problems)
        trust = (f'<div class="banner"><strong>Not trusted.</strong> The record does not hold together:<ul>{items}'
                 '</ul></div>')
        return trust + _banner(r.model_copy(update={"record_problems": []}))
    if not r.notes:
        return ""
    title = "<strong>Partial run.</strong> " if r.partial else ""
    items = "".join(f"<li>{esc(n)}</li>" for n in r.notes)
    return f'<div class="banner">{title}What is missing:<ul>{items}</ul></div>'


def _toc(ids: list[str]) -> str:
    links = "".join(f'<a href="#{i}">{esc(TITLES.get(i, i.title()))}</a>' for i in ids)
    return f'<nav class="toc">{links}</nav>'


def _figure(pid: str, r: RunReport, png: Optional[bytes]) -> str:
    if png is None:
        return f'<p class="missing">{esc(missing(pid, r))}</p>'
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img class="plot" id="plot-{pid}" alt="{esc(TITLES[pid])}" '
            f'src="data:image/png;base64,{data}"></figure>')


def _section(pid: str, title: str, body: str, cap: str = "") -> str:
    c = f'<p class="caption">{esc(cap)}</p>' if cap else ""
    return f'<section id="{pid}" class="card"><h2>{esc(title)}</h2>{c}{body}</section>'


def _skipped(r: RunReport) -> str:
    parts = []
    for s in r.trace:
        if s.rationale and s.source == "llm":
            parts.append(f"<p><strong>Round {s.round} rationale:</strong> {esc(s.rationale)}</p>")
        if s.skipped:
            items = "".join(f"<li><code>{esc(x.rule)}</code>: {esc(x.why)}</li>" for x in s.skipped)
            parts.append(f"<details><summary>Round {s.round}: rules that did not apply ({len(s.skipped)})"
                         f"</summary><ul>{items}</ul></details>")
    return "".join(parts)


def _code_cell(pieces: list[tuple[str, bool]], mark: str) -> str:
    return "".join(f"<{mark}>{esc(t)}</{mark}>" if changed else esc(t) for t, changed in pieces)


def _diff(r: RunReport) -> str:
    note = f'<p class="note">{esc(r.winner_note)}</p>' if r.winner_note else ""
    if r.original is None or r.winner is None:
        return note or '<p class="missing">No source to compare.</p>'
    removed, added = diff.counts(r.original.text, r.winner.text)
    rows = []
    for row in diff.side_by_side(r.original.text, r.winner.text):
        if row.kind == "fold":
            rows.append(f'<tr class="fold"><td colspan="4">⋯ {row.folded} unchanged lines ⋯</td></tr>')
            continue
        left, right = esc(row.left), esc(row.right)
        if row.kind == "replace":
            a, b = diff.segments(row.left, row.right)
            left, right = _code_cell(a, "del"), _code_cell(b, "ins")
        lcls = {"replace": "del", "delete": "del"}.get(row.kind, "")
        rcls = {"replace": "add", "insert": "add"}.get(row.kind, "")
        lcls = lcls if row.left_no is not None else "empty"
        rcls = rcls if row.right_no is not None else "empty"
        rows.append(f'<tr><td class="ln">{row.left_no or ""}</td><td class="code {lcls}">{left}</td>'
                    f'<td class="ln">{row.right_no or ""}</td><td class="code {rcls}">{right}</td></tr>')
    head = (f'<tr><th colspan="2">{esc(r.original.path or r.original.name)}<span>{esc(r.original.name)}</span></th>'
            f'<th colspan="2">{esc(r.winner.path or r.winner.name)}<span>{esc(r.winner.name)}</span></th></tr>')
    stats = f'<p class="diffstat"><span class="minus">−{removed}</span> <span class="plus">+{added}</span> lines</p>'
    return (f'{note}{stats}<div class="diff-wrap"><table class="diff"><colgroup><col class="ln"><col><col class="ln">'
            f'<col></colgroup><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table></div>')


def _details(r: RunReport) -> str:
    parts = ["<h3>Rounds</h3>", table(tables.rounds(r))]
    plans = [f"<li>{esc(plan_line(rd))}</li>" for rd in r.rounds if rd.plan]
    plans += [f"<li>{esc(f'Round {rd.round} set aside {v}; later proposals with it were answered without measuring.')}</li>"
              for rd in r.rounds for v in rd.set_aside]
    plans += [f"<li>{esc(f'Round {rd.round}: {n[0].lower()}{n[1:]}')}</li>" for rd in r.rounds for n in rd.priors]
    if plans:
        parts.append(f'<ul class="plans">{"".join(plans)}</ul>')
    if r.test is not None:
        fresh = ", ".join(str(s) for s in r.test.fresh_shapes)
        parts += ["<h3>Final test</h3>",
                  f"<p>Every candidate was verified again with fresh inputs (seed {r.test.seed}) on every shape, the "
                  f"spec's held-out shapes and {len(r.test.fresh_shapes)} fresh shapes no candidate saw "
                  f"({esc(fresh)}).</p>", table(tables.final_test(r))]
    if r.llm.calls or r.llm.failed_attempts:
        parts.append(f"<h3>LLM usage</h3><p>{esc(llm_line(r.llm))}</p>")
    if r.files:
        items = "".join(f"<li>{esc(k)}: <code>{esc(v)}</code></li>" for k, v in file_items(r.files))
        parts.append(f"<h3>Files</h3><ul>{items}</ul><p>Reproduce the comparison:</p><pre>{esc(reproduce(r))}</pre>")
    return "".join(parts)


def render(r: RunReport, pngs: dict[str, bytes]) -> str:
    """The whole page; ``pngs`` holds the figures by id."""
    ids = plot_ids(r)
    sections = []
    for pid in ids:
        body = _figure(pid, r, pngs.get(pid)) + table(tables.FOR_PLOT[pid](r), pid)
        if pid == "trace":
            body += _skipped(r)
        sections.append(_section(pid, TITLES[pid], body, caption(pid, r)))
    toc = list(ids)
    if r.params:
        sections.append(_section("params", TITLES["params"], table(tables.params(r)), caption("params", r)))
        toc.append("params")
    sections.append(_section("diff", TITLES["diff"], _diff(r), caption("diff", r)))
    toc.append("diff")
    if r.kind == "optimize":
        sections.append(_section("details", TITLES["details"], _details(r)))
        toc.append("details")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>kerntune report: {esc(r.kernel)}</title><style>{CSS}</style></head><body>"
            f"{_header(r)}<main class=\"wrap\">{_banner(r)}{_toc(toc)}{''.join(sections)}</main>"
            f'<footer class="wrap">kerntune {esc(__version__)} · <code>kerntune report {esc(r.run_dir)}</code>'
            f"</footer></body></html>\n")


__all__ = ["render"]
