"""`kerntune optimize`: the agent loop. The planner schedules rounds; each
round the generator proposes a template from the best kernel so far, the
tuner searches it on the device against the original, and the planner reads
the measurements to decide the next round or to stop; at the end the tester
confirms the top candidates on fresh inputs and shapes, re-times them beside
the original, and decides. Everything goes through the run directory
(:mod:`kerntune.record`) as it happens, so a run resumes where it stopped."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

from kerntune import speedup as sp
from kerntune.agents.bake import bake
from kerntune.agents.generator import GenerationRequest, Generator, Proposal, RoundNote
from kerntune.agents.original import keep_original
from kerntune.agents.outputs import write_outputs
from kerntune.agents.planner import Planner
from kerntune.agents.tester import Candidate, Tester
from kerntune.engine.checker import MemoryChecker
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.engine.supervisor import DeviceWorker
from kerntune.errors import KerntuneError
from kerntune.interrupts import as_interrupt
from kerntune.kernelfile import KernelFile
from kerntune.record.models import (LLMUsage, Manifest, OptimizeSettings, ProposalRecord, RoundPlan, RoundRecord,
                                    RoundStatus, RunStatus)
from kerntune.record.audit import untrusted
from kerntune.record.outcome import OptimizeResult, ShapeWinner, TestReport
from kerntune.record.store import ORIGINAL, REPORT, RunDir
from kerntune.results import EvalResult, Status
from kerntune.spec.model import LaunchSpec
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.crashed import write_crashed
from kerntune.tuner.evaluators import LiveEvaluator
from kerntune.tuner.kernel_files import resolve_launch_params
from kerntune.tuner.run import TuneSettings, Tuner
from kerntune.tuner.setaside import EARLIER_KEY
from kerntune.agents.proposal_checks import option_problem
from kerntune.tuner.space import Space
from kerntune.tuner.store import RunStore
from kerntune.tuner.summary import TuneSummary, prior_notes, summarize
from kerntune.tuner.template import Template, TemplateRenderError, check_against_spec, parse_template


class _Current:
    """The kernel the next round starts from: the original, or a round's best."""

    def __init__(self, kf: KernelFile):
        self.source = kf.source
        self.launch: LaunchSpec = kf.own_launch or kf.spec.launch
        self.kernel = kf.kernel_name
        self.speedup = 1.0
        self.round: Optional[int] = None

    def adopts(self, speedup: Optional[float]) -> bool:
        """A round's best leads the next round only when it clears the one improvement threshold."""
        return bool(speedup) and speedup > self.speedup * sp.THRESHOLD


class Optimizer:
    def __init__(self, kernel: KernelFile, settings: OptimizeSettings, run: RunDir, worker: DeviceWorker,
                 generator: Generator, on_event: Callable[[str, dict[str, Any]], None] = lambda k, d: None):
        self.kf = kernel
        self.settings = settings
        self.run_dir = run
        self.worker = worker
        self.generator = generator
        self.on_event = on_event
        self.spec = kernel.spec
        self.original = kernel.instance(label="original")
        self.planner = Planner(settings.budget, patience=settings.patience, strategy=settings.strategy)
        self.manifest: Manifest | None = None
        self.checker = MemoryChecker(worker.info, enabled=settings.memcheck != "off", timeout_s=settings.timeout_s)
        self.distributions: tuple[str, ...] | None = None     # the spec's, less those the original fails on
        self.notes: list[str] = []
        self.templates: dict[int, Template] = {}
        self.summaries: dict[int, TuneSummary] = {}

    # --- helpers ----------------------------------------------------------------
    def event(self, kind: str, **data: Any) -> None:
        self.on_event(kind, data)

    def _save(self, **update: Any) -> None:
        assert self.manifest is not None
        self.manifest = self.manifest.model_copy(update={"llm": self._llm_usage(), **update})
        self.run_dir.save_manifest(self.manifest)

    def _validate(self, template_text: str) -> str | None:
        """Why a proposed template cannot be used (None when it can): it must parse, use only
        its parameters and the spec's sizes, render its baseline, and that baseline must
        compile and verify against the original kernel."""
        try:
            t = parse_template(template_text, self.kf.lang, "proposal").confined_to(self.kf.source)
            check_against_spec(t, self.spec)
            for option in t.decl.flags.get(self.kf.lang, {}):
                why = option_problem(option, self.kf.lang)
                if why:
                    return why
            inst = t.instance(t.baseline, self.spec, label="proposal baseline")
        except TemplateRenderError as e:
            return f"the baseline configuration does not render ({e.kind}): {e.message}"
        except KerntuneError as e:
            return e.message
        shapes = tuple(spec_shapes(self.spec, self.settings.shape_set))
        req = EvalRequest(candidate=inst, spec=self.spec, base_dir=str(self.kf.loaded.base_dir),
                          verify_shapes=shapes + tuple(holdout_shapes(self.spec, self.settings.shape_set)),
                          time_shapes=(), seed=self.settings.seed + 17, reference=self.original, timing=None,
                          distributions=self.distributions)
        r = self.worker.evaluate(req, self.settings.timeout_s)
        if r.status is not Status.OK:
            log = ("\n" + r.compile_log[-3000:]) if r.status is Status.COMPILE_ERROR and r.compile_log else ""
            return f"its baseline configuration failed: {r.status.value}: {r.message}{log}"
        return None

    @staticmethod
    def _measurements(result: EvalResult) -> str:
        lines = []
        for t in result.timings:
            pct = f", {t.pct_of_copy:.0f}% of the measured copy bandwidth" if t.pct_of_copy is not None else ""
            lines.append(f"{t.label}: median {t.stats.median_ms * 1e3:.1f} us, {t.achieved_gbs:.1f} GB/s{pct}")
        res = result.resources
        if res is not None:
            lines.append("resources: " + ", ".join(f"{k}={v}" for k, v in res.model_dump().items()
                                                  if v not in (None, 0, "") and k != "source"))
        return "\n".join(lines)

    # --- the run ----------------------------------------------------------------
    def start(self) -> None:
        if not RunDir.is_run(self.run_dir.path):
            name = keep_original(self.run_dir, self.kf)
            from kerntune.record.audit import file_digests

            kept = sorted(str(p.relative_to(self.run_dir.path)) for p in (self.run_dir.path / ORIGINAL).rglob("*")
                          if p.is_file())
            self.manifest = Manifest(created=time.time(), kernel_path=str(Path(self.kf.path).resolve()),
                                     kernel_file=name, kernel_name=self.spec.kernel, lang=self.kf.lang,
                                     spec_path=str(Path(self.kf.loaded.origin).resolve()), device=self.worker.info,
                                     settings=self.settings, digests=True,
                                     original_digests=file_digests(self.run_dir, kept))
        else:
            self.manifest = self.run_dir.manifest()
        self._save(status=RunStatus.RUNNING, error="")

    def baseline(self) -> EvalResult:
        """The original, measured (and checked) once per run: the input distributions it
        passes are the run's, and a checker finding on the original turns the checker off
        for the run (candidates would be compared with a kernel that is itself unsafe)."""
        result = self.run_dir.baseline()
        if result is None:
            tester = self._tester()
            result = tester.baseline(self.settings.seed)
            if result.status is not Status.OK:
                raise KerntuneError(result.status.error_code,
                                    f"the original kernel fails: {result.status.value}: {result.message}",
                                    hint="fix it first: `kerntune bench` on it shows the details",
                                    detail=(result.compile_log or None)
                                    if result.status is Status.COMPILE_ERROR else None)
            result = result.model_copy(update={"check": tester.check(self.original, self.settings.seed)})
            self.run_dir.save_baseline(result)
        v = result.verification
        if v is not None:
            self.distributions = tuple(v.distributions) or None
            for d, why in v.left_out.items():
                self.notes.append(f"inputs '{d}' left out: the original itself disagrees with the reference there "
                                  f"({why})")
        if result.check is not None and result.check.failed:
            why = f"the original kernel itself fails the memory check ({result.check.message})"
            self.checker.disable(why + "; candidates are not checked")
            self.notes.append(why)
        return result

    def _tester(self) -> Tester:
        s = self.settings
        return Tester(self.worker, self.kf.loaded, self.original, s.shape_set, s.warmup, s.repeats, s.timeout_s,
                      on_step=lambda text: self.event("step", text=text), checker=self.checker,
                      distributions=self.distributions)

    def run(self) -> OptimizeResult:
        """The whole run. However it ends, run.json says how: done, interrupted (Ctrl-C or a
        termination signal) or failed (with the error), and --resume continues it. A finished
        run is not run again: its result is returned as it was recorded."""
        answered = None
        if RunDir.is_run(self.run_dir.path):
            self.manifest = self.run_dir.manifest()
            answered = self.run_dir.results()
            if answered is not None:     # the run's answer is written (results.json): nothing is measured again
                from kerntune.reporting.load_optimize import load_optimize   # the audit, and the headline again

                error = untrusted(str(self.run_dir.path),
                                  load_optimize(self.run_dir.path, finishing=True).record_problems)
                if error is not None:
                    raise error
                # where the run is now: a copied run folder's results.json names the folder it was made in
                answered = answered.model_copy(update={"run_dir": str(self.run_dir.path)})
                if self.manifest.status is RunStatus.DONE and answered.headline and self.run_dir.has(REPORT):
                    return answered
                # killed (or stopped) after its answer but before its end: report.md, the headline, "done"
        try:
            result = self._conclude(answered if answered is not None else self._run())
        except BaseException as caught:
            e = as_interrupt(caught)        # a library may have wrapped the interrupt in an error of its own
            if isinstance(e, KeyboardInterrupt):    # Ctrl-C, or a termination signal (interrupts.Terminated)
                self._stopped(RunStatus.INTERRUPTED, f"stopped by {e.name}" if hasattr(e, "name") else "")
            elif isinstance(e, KerntuneError):
                self._stopped(RunStatus.FAILED, e.message)
            else:
                self._stopped(RunStatus.FAILED, f"{type(e).__name__}: {e}")
            if e is caught:
                raise
            raise e from caught
        return result

    def _conclude(self, result: OptimizeResult) -> OptimizeResult:
        """The run's end, from its answer (results.json): report.md, the headline in results.json, and
        last of all run.json's "done", so that a run killed on its way here is not taken for a finished
        one (its --resume comes back here, and measures nothing again)."""
        from kerntune.reporting.build import write_report     # reporting owns report.md

        report = write_report(self.run_dir.path, finishing=True)
        result = result.model_copy(update={"headline": report.headline})
        self.run_dir.save_results(result)
        self._save(status=RunStatus.DONE, stop_reason=result.stop_reason, error="")
        return result

    def _stopped(self, status: RunStatus, error: str) -> None:
        if self.manifest is not None:
            try:
                self._save(status=status, error=error)
            except BaseException:
                pass          # the original problem is the one to report

    def _run(self) -> OptimizeResult:
        self.start()
        assert self.manifest is not None
        base = self.baseline()
        self.event("baseline", result=base)
        current = _Current(self.kf)
        last_eval: EvalResult = base
        rounds = list(self.manifest.rounds)
        for rec in rounds:        # finished rounds (resume): what they did, as the planner saw it
            if rec.status is RoundStatus.RUNNING:
                continue
            self.planner.record_round(rec.measured, rec.llm_calls, rec.best_speedup or 1.0,
                                      [f"round {rec.round}: {v}" for v in rec.set_aside])
            if rec.status is RoundStatus.DONE:
                self._load_round(rec.round)
                if current.adopts(rec.best_speedup):
                    self._adopt(current, rec.round, rec.best_config, rec.best_speedup)
        r = len([rec for rec in rounds if rec.status is not RoundStatus.RUNNING]) + 1
        while True:
            decision = self.planner.decide(r, last_eval, last_eval.resources, self.kf.lang)
            if decision.stop:
                stop_reason = decision.reason
                break
            assert decision.plan is not None
            best = self._round(r, decision.plan, current, base, last_eval, rounds)
            if best is not None:
                last_eval = self._round_best_eval(r, best) or last_eval
            r += 1
        report = self._test()
        return self._finish(rounds, base, report, stop_reason)

    # --- rounds -------------------------------------------------------------------
    def _round(self, r: int, plan: RoundPlan, current: _Current, base: EvalResult, last: EvalResult,
               rounds: list[RoundRecord]) -> Optional[str]:
        """One round: propose, tune, record. Returns the key of its best configuration when the
        next round starts from it."""
        rec = next((x for x in rounds if x.round == r), None) or RoundRecord(round=r)
        rec = rec.model_copy(update={"parent_round": current.round})
        t0 = time.monotonic()
        calls_before = self._llm_calls()
        self.event("round", round=r, plan=plan)
        proposal = self._proposal(r, plan, current, last, rounds)
        if proposal is None:
            rec = rec.model_copy(update={"status": RoundStatus.NO_PROPOSAL, "plan": plan,
                                         "message": "the generator had nothing to propose",
                                         "llm_calls": self._llm_calls() - calls_before})
            self._put(rounds, rec)
            self.planner.record_round(0, rec.llm_calls, current.speedup)
            return None
        template = parse_template(proposal.template, self.kf.lang, str(self.run_dir.file(
            self.run_dir.template_rel(r, self.kf.lang)))).confined_to(self.kf.source)
        self.templates[r] = template
        space_size = Space.of(template).size
        plan = plan.model_copy(update={"strategy": self.planner.strategy_for(space_size, plan.evaluations)})
        rec = rec.model_copy(update={
            "source": proposal.source, "plan": plan, "template": self.run_dir.template_rel(r, self.kf.lang),
            "space_size": space_size, "transformations": list(proposal.transformations),
            "rationale": proposal.rationale})
        self._put(rounds, rec)
        summary = self._tune(r, template, plan, base)
        self.summaries[r] = summary
        best = summary.general
        speedup = best.geomean_speedup if best and best.geomean_speedup else None
        rec = rec.model_copy(update={
            "set_aside": [v.describe() for v in summary.set_aside],
            "priors": prior_notes(summary),
            "status": RoundStatus.DONE, "measured": summary.measured, "tuner_stop": summary.stop_reason,
            "best_key": best.key if best else "", "best_config": best.config if best else {},
            "best_speedup": speedup, "seconds": time.monotonic() - t0,
            "llm_calls": self._llm_calls() - calls_before})
        self._put(rounds, rec)
        self.planner.record_round(summary.measured, rec.llm_calls, max(speedup or 1.0, current.speedup),
                                  [f"round {r}: {v}" for v in rec.set_aside])
        self.event("round_done", round=r, summary=summary)
        if best is not None and current.adopts(speedup):
            self._adopt(current, r, best.config, speedup)
            return best.key
        return None

    def _adopt(self, current: _Current, r: int, config: dict[str, Any], speedup: Optional[float]) -> None:
        current.source, current.launch, current.kernel = self._round_best_kernel(r, config)
        current.speedup, current.round = speedup or current.speedup, r

    def _put(self, rounds: list[RoundRecord], rec: RoundRecord) -> None:
        for i, x in enumerate(rounds):
            if x.round == rec.round:
                rounds[i] = rec
                break
        else:
            rounds.append(rec)
        self._save(rounds=list(rounds))

    def _llm_calls_left(self) -> Optional[int]:
        limit = self.settings.budget.llm_calls
        return None if limit is None else max(0, limit - self._llm_calls())

    def _llm_calls(self) -> int:
        return self._llm_usage().calls

    def _llm_usage(self) -> LLMUsage:
        usage = getattr(self.generator, "usage", None)
        return usage() if callable(usage) else LLMUsage()

    def _proposal(self, r: int, plan: RoundPlan, current: _Current, last: EvalResult,
                  rounds: list[RoundRecord]) -> Proposal | None:
        run, lang = self.run_dir, self.kf.lang
        stored, template = run.proposal(r), run.text(run.template_rel(r, lang))
        if stored is not None and template is not None:        # resuming a round that already has its template
            return Proposal(template=template, source=stored.source, rationale=stored.rationale,
                            transformations=tuple(stored.transformations), skipped=tuple(stored.skipped),
                            attempts=stored.attempts)
        run.write(run.input_rel(r, lang), current.source)
        history = tuple(RoundNote(round=x.round, source=x.source, description=x.rationale, space_size=x.space_size,
                                  measured=x.measured, best_speedup=x.best_speedup,
                                  failures=self._failures(x.round), best_config=x.best_config,
                                  set_aside=tuple(x.set_aside))
                        for x in rounds if x.status is RoundStatus.DONE)
        req = GenerationRequest(round=r, lang=lang, kernel_source=current.source, original_source=self.kf.source,
                                launch=current.launch, spec=self.spec, spec_text=self.kf.loaded.text,
                                device=self.worker.info, directions=tuple(plan.directions),
                                measurements=self._measurements(last), history=history,
                                llm_calls_left=self._llm_calls_left(), kernel=current.kernel)
        self.event("step", text=f"round {r}: the {self.generator.name} generator is writing a template")
        proposal = self.generator.propose(req, self._validate)
        if proposal is None:
            return None
        run.save_proposal(r, lang, proposal.template, ProposalRecord(
            source=proposal.source, rationale=proposal.rationale, attempts=proposal.attempts,
            transformations=list(proposal.transformations), skipped=list(proposal.skipped), plan=plan))
        return proposal

    def _set_aside_earlier(self, r: int) -> list[dict[str, Any]]:
        """Values earlier rounds set aside, for this round's tuner (it confirms them with one failure)."""
        out = {}
        for rr, s in sorted(self.summaries.items()):
            if rr < r:
                for v in s.set_aside:
                    out[(v.param, repr(v.value), repr(v.also), v.reason)] = {
                        "param": v.param, "value": v.value, "reason": v.reason, "also": v.also}
        return list(out.values())

    def _failures(self, r: int) -> dict[str, int]:
        s = self.summaries.get(r)
        return dict(s.failed_by_status) if s else {}

    def _tune(self, r: int, template: Template, plan: RoundPlan, base: EvalResult) -> TuneSummary:
        d = self.run_dir.round_dir(r)
        create = not (d / "tuning.db").exists()
        store = RunStore.in_dir(d, create=create)
        try:
            if create:
                store.set(EARLIER_KEY, self._set_aside_earlier(r))
            if store.get("baseline") is None:
                store.set("baseline", base.model_dump(mode="json"))
            s = self.settings
            settings = TuneSettings(strategy=plan.strategy, budget=plan.evaluations, time_limit_s=plan.time_s,
                                    seed=s.seed + r, warmup=s.warmup, repeats=s.repeats, precision=s.precision,
                                    timeout_s=s.timeout_s,
                                    shape_set=s.shape_set, distributions=self.distributions,
                                    memcheck="all" if s.memcheck == "all" else "best")
            if create and s.priors:
                settings = replace(settings, priors=self._round_priors(r, template, plan.strategy))
            if not create:
                settings = TuneSettings.from_meta(store.get("settings", {}), budget=plan.evaluations)
            tuner = Tuner(template, self.kf.loaded, LiveEvaluator(self.worker), store, settings, self.original,
                          on_progress=lambda p: self.event("tuning", round=r, progress=p), checker=self.checker)
            reason = tuner.run()
            store.set("stop_reason", reason)
            # each crashed configuration's kernel, parameters baked in as in the run's other kernel files
            write_crashed(d, store, template, self.kf.loaded, self.worker.info.id, s.shape_set,
                          finish=lambda src: bake(src, self.kf.lang))
            summary = summarize(store, str(d), reason)
        finally:
            store.close()
        self.run_dir.save_summary(r, summary)
        if summary.general is not None:
            self._round_best_kernel(r, summary.general.config)   # writes rounds/NN/best.<ext>
        return summary

    def _round_priors(self, r: int, template: Template, strategy: str) -> tuple[str, ...]:
        """The earlier runs of --prior this round's template starts from: their rounds (or runs) whose template
        declares the same parameters and values; an event says what was found."""
        from kerntune.tuner.priors import load_priors, matching
        from kerntune.tuner.strategies import strategy_class

        if not strategy_class(strategy).learns:
            self.event("prior", round=r, used=0, sources=[], why=f"strategy {strategy} cannot use them")
            return ()
        space = Space.of(template)
        found, problems = matching([Path(p) for p in self.settings.priors], space)
        used = sum(map(len, load_priors(found, space))) if found else 0
        self.event("prior", round=r, used=used, sources=[str(p) for p in found], why="; ".join(problems))
        return tuple(str(p) for p in found)

    def _load_round(self, r: int) -> None:
        text = self.run_dir.text(self.run_dir.template_rel(r, self.kf.lang))
        if text is not None:
            self.templates[r] = parse_template(text, self.kf.lang, str(self.run_dir.file(
                self.run_dir.template_rel(r, self.kf.lang)))).confined_to(self.kf.source)
        summary = self.run_dir.summary(r)
        if summary is not None:
            self.summaries[r] = summary

    def _instance(self, r: int, config: dict[str, Any], label: str) -> KernelInstance:
        return self.templates[r].instance(config, self.spec, label=label)

    def _round_best_kernel(self, r: int, config: dict[str, Any]) -> tuple[str, LaunchSpec, str]:
        """A round's best kernel: source (parameters baked in), launch and entry point (a templated
        kernel's instantiation may be one of the parameters)."""
        t = self.templates[r]
        src = bake(t.render(config, self.spec), self.kf.lang)
        launch = resolve_launch_params(t.decl.launch, config)
        self.run_dir.write(self.run_dir.best_rel(r, self.kf.lang), src)
        return src, launch, t.kernel_name(self.spec, config)

    def _round_best_eval(self, r: int, key: str) -> EvalResult | None:
        store = RunStore.in_dir(self.run_dir.round_dir(r))
        try:
            return next((e.result for e in store.evaluations() if e.key == key and e.result is not None), None)
        finally:
            store.close()

    # --- testing and outputs ------------------------------------------------------
    def _candidates(self) -> list[Candidate]:
        seen, out = set(), []
        ranked = []
        for r, s in self.summaries.items():
            searched = {rank.key: rank.geomean_speedup for rank in s.top}
            for rank in s.top[: self.settings.top_k]:
                if rank.geomean_speedup:
                    ranked.append((rank.geomean_speedup, r, rank.key, rank.config, searched.get(rank.key)))
            for row in s.shapes:   # per-shape bests join the final test too
                if row.best_key and row.speedup:
                    ranked.append((row.speedup * 0.5, r, row.best_key, row.best_config, searched.get(row.best_key)))
        ranked.sort(key=lambda x: -x[0])
        for _, r, key, config, searched_speedup in ranked:
            if (r, key) in seen or r not in self.templates:
                continue
            seen.add((r, key))
            inst = self._instance(r, config, f"round {r}: {key}")
            baked = replace(inst, source=bake(self.templates[r].render(config, self.spec), self.kf.lang))
            out.append(Candidate(round=r, key=key, config=config, instance=inst, baked=baked,
                                 searched=searched_speedup))
            if len(out) >= self.settings.top_k + len(spec_shapes(self.spec, self.settings.shape_set)):
                break
        return out

    def _test(self) -> TestReport | None:
        cands = self._candidates()
        if not cands:
            return None
        kept = self.run_dir.test()      # a resumed run killed after its final test: the test is not run again
        if kept is not None and [(c.round, c.key) for c in kept.candidates] == [(c.round, c.key) for c in cands]:
            self.notes += [n for n in kept.notes if n not in self.notes]
            return kept
        self.event("testing", count=len(cands))
        report = self._tester().confirm(cands, self.settings.seed + 1000, self.settings.final_repeats)
        self.notes += [n for n in report.notes if n not in self.notes]     # the test's own (a busy machine)
        report = report.model_copy(update={"notes": list(self.notes)})
        self.run_dir.save_test(report)
        return report

    def _crash_note(self) -> list[str]:
        """Once per run: the first round whose search had configurations crash the worker, where their
        kernels are and the command that runs the first under the memory checker."""
        for r in sorted(self.summaries):
            c = self.summaries[r].crashed
            if c is not None:
                return [f"round {r}: " + c.hint(self.run_dir.path / self.run_dir.round_rel(r))]
        return []

    @staticmethod
    def _original_rows(base: EvalResult) -> list[ShapeWinner]:
        """With no candidate to test, every shape's winner is the original, as measured."""
        return [ShapeWinner(label=t.label, shape=t.shape, baseline_ms=t.stats.median_ms, winner="original",
                            best_ms=t.stats.median_ms, speedup=1.0, interval=sp.identical(), pct_of_copy=t.pct_of_copy)
                for t in base.timings]

    def _finish(self, rounds: list[RoundRecord], base: EvalResult, report: TestReport | None,
                stop_reason: str) -> OptimizeResult:
        assert self.manifest is not None
        files = write_outputs(self.run_dir, self.kf, self.templates, report)
        g = report.general if report is not None and report.improved else None
        result = OptimizeResult(
            run_dir=str(self.run_dir.path), kernel=self.manifest.kernel_path, spec=self.manifest.spec_path,
            device=f"{self.worker.info.name} ({self.worker.info.id})", generator=self.generator.name,
            status=RunStatus.DONE, stop_reason=stop_reason, baseline=base.timings, rounds=rounds, test=report,
            improved=g is not None, general_round=g.round if g else None, general_key=g.key if g else "",
            general_config=g.config if g else {}, general_speedup=g.geomean_speedup if g else None,
            general_interval=g.geomean if g else None,
            per_shape=report.per_shape if report else self._original_rows(base), llm=self._llm_usage(), files=files,
            checker=self.checker.tool if self.checker.available else self.checker.why_not,
            notes=list(self.notes) + self._crash_note())
        self._save(stop_reason=stop_reason)       # "done" once the run's end is written (:meth:`_conclude`)
        self.run_dir.save_results(result)
        return result


__all__ = ["OptimizeResult", "OptimizeSettings", "Optimizer"]
