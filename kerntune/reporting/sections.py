"""The report's sections: titles, and the caption that says how to read each
figure (shared by the Markdown and HTML renderers)."""

from __future__ import annotations

from kerntune.record.models import LLMUsage, RoundRecord
from kerntune.record.outcome import OutputFiles
from kerntune.reporting.model import RunReport, copy_words
from kerntune.fmt import shell

TITLES = {
    "speedup": "Speedup per shape",
    "times": "Run time per shape",
    "convergence": "Search convergence",
    "bandwidth": "Achieved bandwidth",
    "failures": "Failures by reason",
    "trace": "Transformation trace",
    "params": "The winning configuration",
    "diff": "The winning kernel beside the original",
    "details": "Rounds, final test and files",
}


def plot_ids(r: RunReport) -> list[str]:
    """The figures this kind of run has, in order (a tuning run has no rounds to trace)."""
    ids = ["speedup", "times", "convergence", "bandwidth", "failures"]
    return ids + (["trace"] if r.kind == "optimize" else [])


def caption(pid: str, r: RunReport) -> str:
    tested = r.confirmed
    if pid == "speedup":
        from kerntune.agents.tester import CONFIRM_PROCESSES

        how = (f"picked on a screening session, then re-timed by the tester interleaved with the original in "
               f"blocks spread over {CONFIRM_PROCESSES} new worker processes" if tested else
               "tuning measurements, not yet re-timed by the final test" if r.kind == "optimize" else
               "measured while tuning")
        spread = (" Each interval's width comes from the block-to-block spread pooled over every pick and shape "
                  "(docs/proof.md, \"No winner's curse\"), so the intervals have about the same relative width on "
                  "every shape." if tested else "")
        return (f"Baseline time / candidate time per shape ({how}). The general configuration is one kernel for "
                "every shape; the per-shape best is the fastest verified kernel for each shape on its own." + spread)
    if pid == "times":
        words = copy_words(r)
        copy = f" ({words})" if words else ""
        return ("Median run time, log scale. The dashed line is the copy-speed floor: the bytes the kernel must "
                f"move divided by the bandwidth of a device-to-device copy measured in the same run{copy}; a "
                "shape's floor uses the copy of the session that timed its best kernel. A bar "
                "below the floor means caches served part of the traffic (small shapes, CPU caches).")
    if pid == "convergence":
        unit = "geometric-mean speedup over the baseline" if r.metric == "speedup" else "geometric-mean time"
        per = " One line per round: each round searches a new template." if r.kind == "optimize" else ""
        return (f"Every measured evaluation in order: dots are each configuration's {unit} across the tuning "
                f"shapes, the line is the best so far, crosses are failures.{per}")
    if pid == "bandwidth":
        words = copy_words(r)
        copy = f" ({words})" if words else ""
        return (f"Bytes moved / median time, as a percentage of the copy measured in the same run{copy}. Above 100% "
                "part of the data came from cache.")
    if pid == "failures":
        test = (" The final test re-verifies the top candidates on fresh inputs, the held-out shapes and shapes "
                "no candidate saw." if tested else "")
        return ("How every configuration the search tried ended: valid, failed (by the status that ended it), "
                "pruned before compiling (by the hardware limit or restriction it broke, or set_aside: it holds a "
                "parameter value that kept failing verification the same way; pruned ones do not count against the "
                "budget), or a duplicate of a kernel already measured." + test)
    if pid == "trace":
        return ("The rounds the winning kernel descends from: the semantics-preserving rewrites each round applied "
                "to the kernel before it, and the values the winning configuration chose for their parameters. "
                "Bars are each round's best tuning estimate.")
    if pid == "params":
        return "The template's parameters, their first values (the baseline) and the general configuration's."
    if pid == "diff":
        what = "The kernel to use" if r.kind == "tune" or r.improved else "The best candidate found"
        return f"{what}, beside the original kernel: lines added in green, removed in red, changes marked within lines."
    return ""


def missing(pid: str, r: RunReport) -> str:
    """Why a figure is not there."""
    if pid == "trace" and r.general_round is None:
        return "No round has produced a tuned kernel yet."
    if pid == "bandwidth":
        return "No achieved bandwidth was recorded (the run measured no copy bandwidth, or nothing yet)."
    return "Nothing measured for this yet."


def plan_line(rd: RoundRecord) -> str:
    p = rd.plan
    return "" if p is None else (f"Round {rd.round} plan: {p.why} (strategy {p.strategy}, budget {p.evaluations} "
                                 "evaluations)")


def llm_line(u: LLMUsage) -> str:
    return f"{u.calls} calls, {u.prompt_tokens} prompt tokens, {u.completion_tokens} completion tokens"


def file_items(f: OutputFiles) -> list[tuple[str, str]]:
    return [(k, v) for k, v in f.model_dump().items() if v]


def reproduce(r: RunReport) -> str:
    """The command that compares the kernel the run handed back with the original."""
    kernel = r.original.path if r.original and r.original.path else "original/<kernel>"
    best = r.files.best if r.files and r.files.best else "best"
    d = r.run_dir
    return f"kerntune bench {shell(f'{d}/{kernel}')} --against {shell(f'{d}/{best}')} --spec {shell(f'{d}/spec.yaml')}"


__all__ = ["TITLES", "caption", "file_items", "llm_line", "missing", "plan_line", "plot_ids", "reproduce"]
