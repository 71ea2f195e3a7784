"""report.md: the same sections as the HTML report, with the figures as PNG
files beside it. For an optimize run it keeps everything the loop's own
report.md says (result, per shape, rounds and plans, final test, LLM usage,
files, the command that reproduces the comparison)."""

from __future__ import annotations

from kerntune.reporting import diff, tables
from kerntune.reporting.model import RunReport, headline
from kerntune.reporting.sections import (TITLES, caption, file_items, llm_line, missing, plan_line, plot_ids,
                                         reproduce)
from kerntune.reporting.tables import Code, Table


def _cell(c: str) -> str:
    text = str(c).replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if isinstance(c, Code) and "`" not in text and text else text


def table(t: Table) -> list[str]:
    if not t.rows:
        return []
    align = ["---:" if i in t.numeric else "---" for i in range(len(t.headers))]
    return (["| " + " | ".join(t.headers) + " |", "| " + " | ".join(align) + " |"]
            + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows] + [""])


def _facts(r: RunReport) -> list[str]:
    lines = [f"- device: {r.device or '-'}", f"- spec: {r.spec_path or '-'}"]
    if r.kind == "optimize":
        lines += [f"- generator: {r.method or '-'}", f"- stopped: {r.stop_reason or '(not yet)'}",
                  f"- rounds: {len(r.rounds)}, {r.measured} evaluations measured"]
    else:
        lines += [f"- template: {r.kernel_path or '-'}", f"- baseline: {r.baseline_label}",
                  f"- strategy: {r.method or '-'}", f"- stopped: {r.stop_reason or '(not yet)'}",
                  f"- measured: {r.measured} of {r.space_size or '?'} configurations"]
    if r.elapsed_s:      # the searches' time, as the HTML tile says; the baseline and the final test add to it
        lines.append(f"- tuning time: {r.elapsed_s:.0f} s" + (" (the rounds' searches; the baseline and the final "
                                                               "test come on top)" if r.kind == "optimize" else ""))
    return lines + [""]


def result_line(improved: bool, interval, speedup, key: str, round_, best_file) -> str:
    """The one-sentence result of an optimize run (report.md, both writers)."""
    if not improved:
        return "**Result: no candidate beat the original** by the required margin; `best` is the original kernel."
    from kerntune.fmt import interval as fmt_interval

    speed = fmt_interval(interval) if interval is not None else f"{speedup:.3f}x"
    return (f"**Result: {speed}** geometric-mean speedup (95% confidence interval) over the original with the general "
            f"configuration `{key}` (round {round_}), written to `best` ({best_file}).")


def _result_line(r: RunReport) -> list[str]:
    if r.kind != "optimize" or not r.confirmed:
        return []
    return [result_line(bool(r.improved), r.general_interval, r.general_speedup, r.general_key, r.general_round,
                        r.files.best if r.files else "best"), ""]


def _diff(r: RunReport) -> list[str]:
    lines = [f"## {TITLES['diff']}", ""]
    if r.winner_note:
        lines += [r.winner_note, ""]
    if r.original is None or r.winner is None:
        return lines + ["No source to compare." if not r.winner_note else "", ""]
    removed, added = diff.counts(r.original.text, r.winner.text)
    lines += [f"`{r.winner.path or r.winner.name}` ({r.winner.name}) against `{r.original.path or r.original.name}`: "
              f"{removed} lines removed, {added} added.", "", "```diff",
              diff.unified(r.original.text, r.winner.text, r.original.path or "original", r.winner.path or "winner"),
              "```", ""]
    return lines


def _trace_extra(r: RunReport) -> list[str]:
    lines = []
    for s in r.trace:
        if s.rationale and s.source == "llm":
            lines += [f"Round {s.round} rationale (LLM): {s.rationale}", ""]
        if s.skipped:
            lines += [f"Round {s.round}: rules that did not apply: "
                      + "; ".join(f"{x.rule} ({x.why})" for x in s.skipped), ""]
    return lines


def _details(r: RunReport) -> list[str]:
    lines = ["## Rounds", ""] + (table(tables.rounds(r)) or ["*No round has started yet.*", ""])
    for rd in r.rounds:
        if rd.plan:
            lines += [plan_line(rd), ""]
        for v in rd.set_aside:
            lines += [f"Round {rd.round} set aside {v}; later proposals with it were answered without measuring.", ""]
        lines += [line for note in rd.priors for line in (f"Round {rd.round}: {note[0].lower()}{note[1:]}", "")]
    if r.test is not None:
        fresh = ", ".join(str(s) for s in r.test.fresh_shapes)
        lines += ["## Final test", "",
                  f"Every candidate was verified again with fresh inputs (seed {r.test.seed}) on every shape, the "
                  f"spec's held-out shapes and {len(r.test.fresh_shapes)} fresh shapes no candidate saw ({fresh})"
                  + (", and on the spec's inputs at " + ", ".join(str(s) for s in r.test.reach_shapes)
                     + ", beyond, between and below the run's shapes" if r.test.reach_shapes else "") + ".",
                  ""] + table(tables.final_test(r))
    if r.llm.calls or r.llm.failed_attempts:
        lines += ["## LLM usage", "", llm_line(r.llm), ""]
    if r.files:
        lines += ["## Files", ""] + [f"- {k}: `{v}`" for k, v in file_items(r.files)] + [""]
        lines += [f"Reproduce the comparison: `{reproduce(r)}`", ""]
    return lines


def render(r: RunReport, images: dict[str, str]) -> str:
    """The Markdown report; ``images`` maps figure ids to paths relative to the report."""
    what = r.kernel_path or r.kernel
    lines = [f"# kerntune {r.kind}: {what}", "", f"> **{headline(r)}**", ""]
    if r.record_problems:
        lines += ["> **Not trusted.** The record does not hold together: " + "; ".join(r.record_problems) + ".", ""]
    if r.partial:
        lines += ["> **Partial run.** " + " ".join(r.notes), ""]
    elif r.notes:
        lines += ["> " + " ".join(r.notes), ""]
    lines += _facts(r) + _result_line(r)
    for pid in plot_ids(r):
        title = f"Per shape: speedup over {r.baseline_label}" if pid == "speedup" else TITLES[pid]
        lines += [f"## {title}", "", caption(pid, r), ""]
        if pid in images:
            lines += [f"![{TITLES[pid]}]({images[pid]})", ""]
        else:
            lines += [f"*{missing(pid, r)}*", ""]
        lines += table(tables.FOR_PLOT[pid](r))
        if pid == "trace":
            lines += _trace_extra(r)
    if r.params:
        lines += [f"## {TITLES['params']}", "", caption("params", r), ""] + table(tables.params(r))
    lines += _diff(r)
    if r.kind == "optimize":
        lines += _details(r)
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["render", "table"]
