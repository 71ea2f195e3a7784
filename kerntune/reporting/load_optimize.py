"""An optimize run directory as a :class:`RunReport`. The tester's final
numbers (test.json) when the run got that far, else the rounds' tuning
estimates; the winning kernel's lineage is followed through the rounds'
input and best kernels, by their contents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from kerntune.agents.loop import EXT, OptimizeResult
from kerntune.agents.rundir import Manifest, RoundRecord, RunDir
from kerntune.agents.tester import CandidateResult, TestReport
from kerntune.errors import KerntuneError
from kerntune.results import EvalResult, Status
from kerntune.reporting.load import (StoreData, copy_gbs, failures, per_shape_geomean, read_json, read_model,
                                     read_store, read_text, series, shape_id, shape_row, timing)
from kerntune.reporting.model import Failures, RunReport, Source, Step
from kerntune.tuner.store import DB_NAME


@dataclass
class Round:
    rec: RoundRecord
    dir: Path
    store: Optional[StoreData]
    proposal: Optional[dict[str, Any]]


def load_optimize(path: Path) -> RunReport:
    run = RunDir.open(path)
    try:
        m = run.load_manifest()
    except KerntuneError as e:
        raise KerntuneError(e.code, e.message, hint="the run directory is damaged: restore run.json, or rerun") \
            from None
    base = read_model(path / "baseline.json", EvalResult)
    test = read_model(path / "test.json", TestReport)
    result = read_model(path / "results.json", OptimizeResult)
    rounds = []
    for rec in m.rounds:
        d = path / "rounds" / f"{rec.round:02d}"
        store = read_store(d) if (d / DB_NAME).exists() else None
        rounds.append(Round(rec=rec, dir=d, store=store, proposal=read_json(d / "proposal.json")))
    notes = _notes(path, m, base, test, result, rounds)
    copy = copy_gbs(base)
    rows, general = confirmed_rows(test, copy) if test is not None else _estimated_rows(base, rounds, copy)
    g_round, g_key, g_config, g_speedup = general
    ext = EXT.get(m.lang, "")
    original = _original(path, m)
    report = RunReport(
        kind="optimize", run_dir=str(path), kernel=m.kernel_name, kernel_path=m.kernel_path, spec_path=m.spec_path,
        device=f"{m.device.get('name', '?')} ({m.device.get('id', '?')})", method=str(m.settings.get("generator", "")),
        status=m.status, stop_reason=m.stop_reason, partial=bool(notes), notes=notes, confirmed=test is not None,
        improved=test.improved if test is not None else None, general_key=g_key, general_round=g_round,
        general_interval=test.general.geomean if test is not None and test.general is not None else None,
        general_config=g_config, general_speedup=g_speedup, per_shape_speedup=per_shape_geomean(rows),
        copy_gbs=copy, measured=sum(r.rec.measured for r in rounds),
        elapsed_s=sum(r.rec.seconds for r in rounds) or None, shapes=rows,
        convergence=_convergence(rounds, base is not None), failures=_failures(rounds, test),
        trace=_trace(path, ext, rounds, original, g_round, g_config), original=original,
        rounds=[r.rec for r in rounds], test=test, llm=dict(m.llm), files=dict(result.files) if result else {})
    winner, note = _winner(path, m, report, rounds)
    return report.model_copy(update={"winner": winner, "winner_note": note})


def _notes(path: Path, m: Manifest, base, test, result, rounds: list[Round]) -> list[str]:
    notes = []
    if m.status != "done" or result is None:
        notes.append(f"The run has not finished (run.json says {m.status!r}): it was interrupted, or is still "
                     f"running. Continue it with `kerntune optimize --resume {path}`.")
    if base is None:
        notes.append("The original kernel has not been measured yet (no baseline.json).")
    for r in rounds:
        if r.rec.status == "running":
            n = r.store.summary.measured if r.store else 0
            notes.append(f"Round {r.rec.round} stopped before it finished ({n} evaluations measured).")
    if test is None and base is not None:
        notes.append("No final test yet (no test.json): the speedups are tuning estimates, not yet re-verified "
                     "on fresh inputs and shapes nor re-timed beside the original.")
    return notes


def confirmed_rows(test: TestReport, copy: Optional[float]):
    g = test.general
    winners = {shape_id(w.shape): w for w in test.per_shape}
    rows = []
    for bt in test.baseline:
        w = winners.get(shape_id(bt.shape))
        best_t, known = None, {}
        if w is not None:
            cand = _candidate(test, w.winner, w.round)
            best_t = bt if w.winner == "original" else timing_of(cand, bt.shape)
            known = dict(best_ms=w.best_ms, best_speedup=w.speedup, best_pct=w.pct_of_copy, best_winner=w.winner,
                         best_round=w.round, best_interval=w.interval)
        gen_t = timing_of(g, bt.shape)
        if g is not None and bt.label in g.speedups:
            known["general_speedup"] = g.speedups[bt.label]
            known["general_interval"] = g.intervals.get(bt.label)
        rows.append(shape_row(bt.label, bt.shape, copy, bt, gen_t, best_t, **known))
    general = (g.round, g.key, g.config, g.geomean_speedup) if g is not None else (None, "", {}, None)
    return rows, general


def _candidate(test: TestReport, key: str, round_: Optional[int]) -> Optional[CandidateResult]:
    return next((c for c in test.candidates if c.key == key and c.round == round_), None)


def timing_of(c: Optional[CandidateResult], shape: dict[str, int]):
    if c is None:
        return None
    sid = shape_id(shape)
    return next((t for t in c.timings if shape_id(t.shape) == sid), None)


def _estimated_rows(base: Optional[EvalResult], rounds: list[Round], copy: Optional[float]):
    """Before the final test: each round's tuning measurements against the baseline."""
    if base is None:
        return [], (None, "", {}, None)
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
    general = (best_round.rec.round, g.key, g.config, g.geomean_speedup) if g else (None, "", {}, None)
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
        failed: dict[str, int] = {}
        for c in test.candidates:
            if not c.verified:
                why = c.message.split(":")[0].strip()
                why = why if why in {s.value for s in Status} else (c.message or "failed")[:40]
                failed[why] = failed.get(why, 0) + 1
        out.append(Failures(scope="final test", ok=sum(1 for c in test.candidates if c.verified), failed=failed))
    return out


def _original(path: Path, m: Manifest) -> Optional[Source]:
    name = Path(m.kernel_path).name
    text = read_text(path / "original" / name)
    return Source(name=f"{name}: the original", path=f"original/{name}", text=text) if text is not None else None


def _lineage(path: Path, ext: str, rounds: list[Round], original: Optional[Source], last: int) -> list[int]:
    """The rounds whose kernels the winning round's template descends from, oldest first: a round's input
    kernel is the best kernel of the round before it in the lineage (or the original)."""
    chain = [last]
    while True:
        inp = read_text(path / "rounds" / f"{chain[0]:02d}" / f"input{ext}")
        if inp is None or (original is not None and inp == original.text):
            return chain
        parent = next((r.rec.round for r in reversed(rounds) if r.rec.round < chain[0]
                       and read_text(r.dir / f"best{ext}") == inp), None)
        if parent is None:
            return chain
        chain.insert(0, parent)


def _trace(path: Path, ext: str, rounds: list[Round], original: Optional[Source], g_round: Optional[int],
           g_config: dict[str, Any]) -> list[Step]:
    if g_round is None:
        return []
    by_round = {r.rec.round: r for r in rounds}
    steps = []
    for n in _lineage(path, ext, rounds, original, g_round):
        r = by_round.get(n)
        if r is None:
            continue
        p = r.proposal or {}
        transformations = list(p.get("transformations") or r.rec.transformations)
        config = g_config if n == g_round else r.rec.best_config
        params = [q for t in transformations for q in t.get("params", [])]
        steps.append(Step(round=n, source=r.rec.source or str(p.get("source", "")), transformations=transformations,
                          chosen={q: config[q] for q in params if q in config}, speedup=r.rec.best_speedup,
                          rationale=str(p.get("rationale") or r.rec.rationale),
                          skipped=[list(map(str, x)) for x in p.get("skipped", [])]))
    return steps


def _render(path: Path, lang: str, round_: int, config: dict[str, Any]) -> Optional[str]:
    """The baked kernel of one configuration of a round's template, as the loop writes it."""
    from kerntune.agents.bake import bake
    from kerntune.spec.load import parse
    from kerntune.tuner.template import TemplateRenderError, parse_template

    ext = EXT.get(lang, "")
    tfile = path / "rounds" / f"{round_:02d}" / f"template{ext}.j2"
    sfile = path / "original" / "spec.yaml"
    try:
        template = parse_template(tfile.read_text(), lang, str(tfile))
        spec = parse(sfile.read_text(), origin=sfile, base_dir=sfile.parent).spec
        return bake(template.render(config, spec), lang)
    except (OSError, KerntuneError, TemplateRenderError):
        return None


def _winner(path: Path, m: Manifest, r: RunReport, rounds: list[Round]) -> tuple[Optional[Source], str]:
    ext = EXT.get(m.lang, "")
    best = path / f"best{ext}"
    if r.improved and best.exists():
        return Source(name=f"best{ext}: the general configuration (round {r.general_round})", path=f"best{ext}",
                      text=best.read_text()), ""
    if r.general_round is None:
        return None, "No candidate has been tuned yet: there is no kernel to compare with the original."
    text = _render(path, m.lang, r.general_round, r.general_config)
    rec = next((x.rec for x in rounds if x.rec.round == r.general_round), None)
    if text is None and rec is not None and rec.best_key == r.general_key:
        text = read_text(path / "rounds" / f"{r.general_round:02d}" / f"best{ext}")
    if text is None:
        return None, f"The template of round {r.general_round} could not be rendered again."
    speed = f", {r.general_speedup:.2f}x" if r.general_speedup else ""
    source = Source(name=f"round {r.general_round}: {r.general_key}", text=text,
                    path=f"rounds/{r.general_round:02d}/template{ext}.j2")
    if r.confirmed:
        return source, (f"No candidate beat the original by the required margin, so best{ext} is the original; "
                        f"this is the closest candidate (round {r.general_round}{speed}), not adopted.")
    return source, (f"A tuning estimate: round {r.general_round}'s best configuration{speed}, not yet confirmed by "
                    "the final test.")


__all__ = ["load_optimize"]
