"""`kerntune export traces`: the sequence of semantics-preserving rewrites of
each optimize run (SemRep-style: input kernel -> template that exposes the
execution strategy as parameters -> transformations -> the round's best
kernel), with the measurements of every step. One JSON object per run."""

from __future__ import annotations

from typing import Any, Optional

from kerntune import __version__
from kerntune.export.runs import Run, Skip
from kerntune.source.normalize import strip_header
from kerntune.results import Record

SCHEMA = "kerntune.trace/1"


class TraceShape(Record):
    label: str
    shape: dict[str, int]
    original_ms: Optional[float] = None        # tuning session's measurement of the original
    best_ms: Optional[float] = None            # the round's best configuration for this shape
    best_key: str = ""
    general_ms: Optional[float] = None         # the round's general configuration
    speedup: Optional[float] = None            # original / general configuration


class Confirmation(Record):
    """What the final tester said about a round's best kernel (absent when it was not among its candidates)."""
    verified: bool
    status: str = "ok"                         # how it ended (kerntune.results.Status)
    message: str = ""
    geomean_speedup: Optional[float] = None
    speedups: dict[str, float] = {}


class TraceStep(Record):
    round: int
    status: str                                # done, no-proposal, running
    source: str                                # who wrote the template: rules or llm
    parent_round: Optional[int] = None         # the round whose best kernel was this round's input (None: original)
    input_source: str = ""
    template: str = ""
    rationale: str = ""
    transformations: list[dict[str, Any]] = []
    rules_not_applied: list[list[str]] = []    # [rule, why] from the rule catalog
    strategy: str = ""
    space_size: int = 0
    measured: int = 0
    failed_by_status: dict[str, int] = {}
    best_key: str = ""
    best_config: dict[str, Any] = {}
    best_source: str = ""
    tuning_speedup: Optional[float] = None     # geomean over the original, in the tuning session
    shapes: list[TraceShape] = []
    confirmed: Optional[Confirmation] = None
    adopted: bool = False                      # a later round started from this round's best


class Trace(Record):
    format: str = SCHEMA
    run_id: str
    run_dir: str
    kernel: str
    language: str
    source_file: str
    device: dict[str, Any]
    generator: str
    spec: str
    original_source: str
    original_launch: dict[str, Any]
    baseline: list[dict[str, Any]] = []        # the original's timing per shape at the start of the run
    steps: list[TraceStep] = []
    improved: bool = False
    general_round: Optional[int] = None
    general_key: str = ""
    general_speedup: Optional[float] = None
    final_source: str = ""                     # best.<ext>: the general configuration, or the original
    per_shape: list[dict[str, Any]] = []
    stop_reason: str = ""
    kerntune_version: str = __version__

    def line(self) -> str:
        return self.model_dump_json()


def run_trace(run: Run) -> tuple[Optional[Trace], Optional[str]]:
    if run.unusable:
        return None, run.unusable
    m = run.manifest
    steps = []
    for rec in sorted(m.rounds, key=lambda x: x.round):
        r, lang = rec.round, m.lang
        prop = run.proposal(r)
        summary = run.summary(r)
        shapes = [TraceShape(label=s.label, shape=s.shape, original_ms=s.baseline_ms, best_ms=s.best_ms,
                             best_key=s.best_key, general_ms=s.general_ms, speedup=s.general_speedup)
                  for s in (summary.shapes if summary is not None else [])]
        cand = run.candidate(r, rec.best_key) if rec.best_key else None
        steps.append(TraceStep(
            round=r, status=rec.status.value, source=rec.source, parent_round=rec.parent_round,
            input_source=run.maybe(run.rd.input_rel(r, lang)), template=run.maybe(run.rd.template_rel(r, lang)),
            rationale=rec.rationale, transformations=[t.model_dump() for t in rec.transformations],
            rules_not_applied=[[x.rule, x.why] for x in (prop.skipped if prop is not None else [])],
            strategy=rec.plan.strategy if rec.plan is not None else "", space_size=rec.space_size,
            measured=rec.measured, failed_by_status=dict(summary.failed_by_status) if summary is not None else {},
            best_key=rec.best_key, best_config=rec.best_config, best_source=run.maybe(run.rd.best_rel(r, lang)),
            tuning_speedup=rec.best_speedup, shapes=shapes,
            confirmed=None if cand is None else Confirmation(verified=cand.verified, status=cand.status.value,
                                                              message=cand.message,
                                                              geomean_speedup=cand.geomean_speedup,
                                                              speedups=cand.speedups),
            adopted=r in run.adopted))
    test = run.test
    g = test.general if test is not None and test.improved else None
    base = run.baseline
    return Trace(
        run_id=run.run_id, run_dir=str(run.path), kernel=m.kernel_name, language=m.lang, source_file=m.kernel_path,
        device=run.device, generator=m.settings.generator, spec=run.spec_text,
        original_source=run.original_source, original_launch=run.original_launch(),
        baseline=[{"label": t.label, "shape": t.shape, "median_ms": t.stats.median_ms, "iqr_ms": t.stats.iqr_ms,
                   "runs": t.stats.n} for t in (base.timings if base is not None else [])],
        steps=steps, improved=g is not None, general_round=g.round if g else None, general_key=g.key if g else "",
        general_speedup=g.geomean_speedup if g else None,
        final_source=strip_header(run.maybe(f"best{run.ext}")),
        per_shape=[w.model_dump(mode="json") for w in (test.per_shape if test is not None else [])],
        stop_reason=m.stop_reason), None


def export_traces(runs: list[Run]) -> tuple[list[Trace], list[Skip]]:
    out, skipped, seen = [], [], set()
    for run in runs:
        t, why = run_trace(run)
        if t is None:
            skipped.append(Skip(run_dir=str(run.path), reason=why or ""))
        elif t.run_id not in seen:
            seen.add(t.run_id)
            out.append(t)
    return out, skipped
