"""An optimize run directory as a :class:`RunReport`, read through
:class:`kerntune.record.store.RunDir`. The tester's final numbers (test.json)
when the run got that far, else the rounds' tuning estimates; the winning
kernel's lineage follows the rounds' ``parent_round``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from kerntune.errors import KerntuneError
from kerntune.record.audit import audit
from kerntune.record.models import Manifest, ProposalRecord, RoundRecord, RoundStatus, RunStatus
from kerntune.record.outcome import TestReport
from kerntune.record.store import RunDir
from kerntune.reporting.model import Failures, RunReport, Source, Step, headline
from kerntune.reporting.rows import (NO_GENERAL, General, confirmed_rows, copy_gbs, failures, per_shape_geomean,
                                     series, shape_id, shape_row, test_failures, timing)
from kerntune.reporting.tuning import StoreData, read_store
from kerntune.results import EvalResult
from kerntune.tuner.kernel_files import EXT
from kerntune.tuner.store import DB_NAME
from kerntune.fmt import shell


@dataclass
class Round:
    rec: RoundRecord
    store: Optional[StoreData]
    proposal: Optional[ProposalRecord]


def load_optimize(path: Path, finishing: bool = False) -> RunReport:
    """``finishing``: the run's answer (results.json) is written and the run is writing its end (report.md,
    the headline, then run.json's "done"): it is reported as finished."""
    run = RunDir.open(path)
    m = run.manifest()
    if finishing and run.results() is not None:
        m = m.model_copy(update={"status": RunStatus.DONE})
    base, test, result = run.baseline(), run.test(), run.results()
    rounds = []
    for rec in m.rounds:
        d = run.file(run.round_rel(rec.round))
        store = read_store(d, run.summary(rec.round)) if (d / DB_NAME).exists() else None
        rounds.append(Round(rec=rec, store=store, proposal=run.proposal(rec.round)))
    notes = _notes(path, m, base, test, result, rounds, finishing)
    partial = bool(notes)
    said = list(test.notes) if test is not None else []         # the test's own notes (a busy host, a general
    said += list(result.notes) if result is not None else []     # kernel ahead of a shape's pick) and the run's
    for note in dict.fromkeys(said):
        notes.append(note[0].upper() + note[1:] + ("" if note.endswith(".") else "."))
    copy = copy_gbs(base)
    rows, general = confirmed_rows(test, copy) if test is not None else _estimated_rows(base, rounds, copy)
    g_round, g_key, g_config, g_speedup = general
    original = _original(run, m)
    report = RunReport(
        kind="optimize", run_dir=str(path), kernel=m.kernel_name, kernel_path=m.kernel_path, spec_path=m.spec_path,
        device=f"{m.device.name} ({m.device.id})", method=m.settings.generator, status=m.status.value,
        stop_reason=m.stop_reason, partial=partial, notes=notes, confirmed=test is not None,
        improved=test.improved if test is not None else None, general_key=g_key, general_round=g_round,
        general_interval=test.general.geomean if test is not None and test.general is not None else None,
        general_config=g_config, general_speedup=g_speedup, per_shape_speedup=per_shape_geomean(rows),
        copy_gbs=copy, measured=sum(r.rec.measured for r in rounds),
        elapsed_s=sum(r.rec.seconds for r in rounds) or None, shapes=rows,
        convergence=_convergence(rounds, base is not None), failures=_failures(rounds, test),
        trace=_trace(m, rounds, g_round, g_config), original=original,
        rounds=[r.rec for r in rounds], test=test, llm=m.llm, files=result.files if result else None)
    problems = audit(run)
    if result is not None and result.headline and result.headline != headline(report):
        problems.append(f"results.json's headline is not what its numbers say (they say: {headline(report)})")
    winner, note = _winner(run, m, report, rounds)
    return report.model_copy(update={"winner": winner, "winner_note": note, "record_problems": problems})


def _notes(path: Path, m: Manifest, base, test, result, rounds: list[Round], finishing: bool = False) -> list[str]:
    notes = []
    if m.status is not RunStatus.DONE or result is None:
        why = f" ({m.error})" if m.error else ""
        if result is not None:      # killed (or stopped) between its answer and its end
            notes.append(f"The run has not finished (run.json says {m.status.value!r}{why}): it stopped after its "
                         "answer (results.json) but before its end was written. Finish it with `kerntune optimize "
                         f"--resume {shell(path)}` (nothing is measured again).")
        else:
            notes.append(f"The run has not finished (run.json says {m.status.value!r}{why}): it was interrupted, "
                         f"failed, or is still running. Continue it with `kerntune optimize --resume {shell(path)}`.")
    elif not result.headline and not finishing:    # "done" before its end was written (an earlier kerntune)
        notes.append("The run has not finished: run.json says 'done', but results.json has no headline (the run "
                     "stopped before its end was written). Finish it with `kerntune optimize --resume "
                     f"{shell(path)}` (nothing is measured again).")
    if base is None:
        notes.append("The original kernel has not been measured yet (no baseline.json).")
    for r in rounds:
        if r.store is None and r.rec.measured:
            notes.append(f"Round {r.rec.round}'s search database (rounds/{r.rec.round:02d}/{DB_NAME}) is missing, so its "
                         f"{r.rec.measured} measured evaluations are not in the convergence and failures sections.")
        if r.rec.status is RoundStatus.RUNNING:
            n = r.store.summary.measured if r.store else 0
            notes.append(f"Round {r.rec.round} stopped before it finished ({n} evaluations measured).")
    finished_empty = m.status is RunStatus.DONE and result is not None and not any(r.rec.measured for r in rounds)
    if test is None and base is not None and not finished_empty:
        notes.append("No final test yet (no test.json): the speedups are tuning estimates, not yet re-verified "
                     "on fresh inputs and shapes nor re-timed beside the original.")
    return notes


def _estimated_rows(base: Optional[EvalResult], rounds: list[Round], copy: Optional[float]):
    """Before the final test: each round's tuning measurements against the baseline."""
    if base is None:
        return [], NO_GENERAL
    tuned = [r for r in rounds if r.store is not None and r.store.summary.general is not None]
    best_round = max(tuned, key=lambda r: r.store.summary.general.geomean_speedup or 0.0, default=None)
    g = best_round.store.summary.general if best_round else None
    g_result = best_round.store.result(g.key) if g else None
    rows = []
    for bt in base.timings:
        sid = shape_id(bt.shape)
        best = None                      # (ms, round, key)
        for r in tuned:
            row = next((x for x in r.store.summary.shapes if shape_id(x.shape) == sid), None)
            if row is not None and row.best_ms is not None and (best is None or row.best_ms < best[0]):
                best = (row.best_ms, r, row.best_key)
        best_t = timing(best[1].store.result(best[2]), bt.shape) if best else None
        known = dict(best_winner=best[2], best_round=best[1].rec.round) if best else {}
        rows.append(shape_row(bt.label, bt.shape, copy, bt, timing(g_result, bt.shape), best_t, **known))
    general: General = (best_round.rec.round, g.key, g.config, g.geomean_speedup) if g else NO_GENERAL
    return rows, general


def _convergence(rounds: list[Round], speedup: bool):
    out, n = [], 0
    for r in rounds:
        if r.store is None or not r.store.evals:
            continue
        s = series(f"round {r.rec.round}", r.rec.round, r.store.evals, n, speedup)
        out.append(s)
        n = s.points[-1].n if s.points else n
    return out


def _failures(rounds: list[Round], test: Optional[TestReport]) -> list[Failures]:
    out = [failures(f"round {r.rec.round}", r.store.summary) for r in rounds if r.store is not None and r.store.evals]
    if test is not None and test.candidates:
        out.append(test_failures(test))
    return out


def _original(run: RunDir, m: Manifest) -> Optional[Source]:
    rel = run.original(m)
    text = run.text(rel)
    return Source(name=f"{m.kernel_file}: the original", path=rel, text=text) if text is not None else None


def _trace(m: Manifest, rounds: list[Round], g_round: Optional[int], g_config: dict[str, Any]) -> list[Step]:
    """The rounds the winning round's kernel descends from, oldest first, with what each applied."""
    if g_round is None:
        return []
    by_round = {r.rec.round: r for r in rounds}
    steps = []
    for n in m.lineage(g_round):
        r = by_round.get(n)
        if r is None:
            continue
        p = r.proposal
        transformations = list(p.transformations) if p is not None else list(r.rec.transformations)
        config = g_config if n == g_round else r.rec.best_config
        params = [q for t in transformations for q in t.params]
        steps.append(Step(round=n, source=r.rec.source or (p.source if p else ""), transformations=transformations,
                          chosen={q: config[q] for q in params if q in config}, speedup=r.rec.best_speedup,
                          rationale=(p.rationale if p else "") or r.rec.rationale,
                          skipped=list(p.skipped) if p else []))
    return steps


def _render(run: RunDir, m: Manifest, round_: int, config: dict[str, Any]) -> Optional[str]:
    """The baked kernel of one configuration of a round's template, as the loop writes it."""
    from kerntune.agents.bake import bake
    from kerntune.spec.load import parse
    from kerntune.tuner.template import TemplateRenderError, parse_template

    text, spec_text = run.text(run.template_rel(round_, m.lang)), run.text(run.original_spec)
    if text is None or spec_text is None:
        return None
    spec_file = run.file(run.original_spec)
    try:
        template = parse_template(text, m.lang, str(run.file(run.template_rel(round_, m.lang))))
        spec = parse(spec_text, origin=spec_file, base_dir=spec_file.parent).spec
        return bake(template.render(config, spec), m.lang)
    except (KerntuneError, TemplateRenderError):
        return None


def _winner(run: RunDir, m: Manifest, r: RunReport, rounds: list[Round]) -> tuple[Optional[Source], str]:
    ext = EXT.get(m.lang, "")
    best = run.text(f"best{ext}")
    if r.improved and best is not None:
        return Source(name=f"best{ext}: the general configuration (round {r.general_round})", path=f"best{ext}",
                      text=best), ""
    if r.general_round is None:
        return None, "No candidate has been tuned yet: there is no kernel to compare with the original."
    text = _render(run, m, r.general_round, r.general_config)
    rec = next((x.rec for x in rounds if x.rec.round == r.general_round), None)
    if text is None and rec is not None and rec.best_key == r.general_key:
        text = run.text(run.best_rel(r.general_round, m.lang))
    if text is None:
        return None, f"The template of round {r.general_round} could not be rendered again."
    speed = f", {r.general_speedup:.2f}x" if r.general_speedup else ""
    source = Source(name=f"round {r.general_round}: {r.general_key}", text=text,
                    path=run.template_rel(r.general_round, m.lang))
    if r.confirmed:
        return source, (f"No candidate beat the original by the required margin, so best{ext} is the original; "
                        f"this is the closest candidate (round {r.general_round}{speed}), not adopted.")
    return source, (f"A tuning estimate: round {r.general_round}'s best configuration{speed}, not yet confirmed by "
                    "the final test.")


__all__ = ["load_optimize"]
