"""report.md: what the run did and found, for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kerntune.fmt import interval
from kerntune.fmt import ms as _ms

if TYPE_CHECKING:
    from kerntune.agents.loop import OptimizeResult
    from kerntune.agents.rundir import RunDir


def write_report(run: "RunDir", r: "OptimizeResult") -> None:
    lines = [f"# kerntune optimize: {r.kernel}", "",
             f"- device: {r.device}", f"- spec: {r.spec}", f"- generator: {r.generator}",
             f"- stopped: {r.stop_reason}", ""]
    from kerntune.reporting.markdown import result_line

    lines += [result_line(r.improved, r.general_interval, r.general_speedup, r.general_key, r.general_round,
                          r.files.get("best")), ""]
    lines += ["## Per shape (re-timed by the tester, interleaved with the original)", "",
              "| shape | original | best | speedup [95% CI] | % of copy | winner |",
              "| --- | --- | --- | --- | --- | --- |"]
    for w in r.per_shape:
        pct = f"{w.pct_of_copy:.0f}%" if w.pct_of_copy is not None else "-"
        lines.append(f"| {w.label} | {_ms(w.baseline_ms)} | {_ms(w.best_ms)} | {interval(w.interval)} | {pct} | "
                     f"{w.winner if w.winner == 'original' else f'round {w.round}: {w.winner}'} |")
    if r.test is not None and r.test.general is not None:
        g = r.test.general
        lines += ["", "General configuration per shape:", "", "| shape | speedup [95% CI] |", "| --- | --- |"]
        lines += [f"| {k} | {interval(v)} |" for k, v in g.intervals.items()]
    lines += ["", "## Rounds", "",
              "| round | source | space | measured | best (tuning) | transformations |",
              "| --- | --- | --- | --- | --- | --- |"]
    for rd in r.rounds:
        best = f"{rd.best_speedup:.3f}x" if rd.best_speedup else "-"
        tr = "; ".join(t.get("summary", "") for t in rd.transformations) or rd.message or "-"
        lines.append(f"| {rd.round} | {rd.source or '-'} | {rd.space_size} | {rd.measured} | {best} | {tr} |")
    for rd in r.rounds:
        if rd.plan:
            lines += ["", f"Round {rd.round} plan: {rd.plan.get('why', '')} (strategy {rd.plan.get('strategy')}, "
                          f"budget {rd.plan.get('evaluations')} evaluations)"]
        for v in rd.set_aside:
            lines += ["", f"Round {rd.round} set aside {v}; later proposals with it were answered without measuring."]
    if r.test is not None:
        lines += ["", "## Final test", "",
                  f"Every candidate was verified again with fresh inputs (seed {r.test.seed}) on every shape, the "
                  f"spec's held-out shapes and {len(r.test.fresh_shapes)} fresh shapes no candidate saw "
                  f"({', '.join(str(s) for s in r.test.fresh_shapes)}).", "",
                  "| round | configuration | verified | geomean speedup | flags |", "| --- | --- | --- | --- | --- |"]
        for c in r.test.candidates:
            sp = f"{c.geomean_speedup:.3f}x" if c.geomean_speedup else "-"
            flags = "; ".join(c.flags) or ("" if c.verified else c.message)
            lines.append(f"| {c.round} | `{c.key}` | {'yes' if c.verified else 'no'} | {sp} | {flags} |")
    if r.llm:
        lines += ["", "## LLM usage", "",
                  f"{r.llm.get('calls', 0)} calls, {r.llm.get('prompt_tokens', 0)} prompt tokens, "
                  f"{r.llm.get('completion_tokens', 0)} completion tokens"]
    lines += ["", "## Files", ""] + [f"- {k}: `{v}`" for k, v in r.files.items()]
    lines += ["", "Reproduce the comparison: `kerntune bench " + f"{r.run_dir}/original/<kernel> --against "
              f"{r.run_dir}/{r.files.get('best', 'best')} --spec {r.run_dir}/spec.yaml`", ""]
    run.write("report.md", "\n".join(lines))
