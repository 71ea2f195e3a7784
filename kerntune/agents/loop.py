"""`kerntune optimize`: the agent loop. The planner schedules rounds; each
round the generator proposes a template from the best kernel so far, the
tuner searches it on the device against the original, and the planner reads
the measurements to decide the next round or to stop; at the end the tester
confirms the top candidates on fresh inputs and shapes, re-times them beside
the original, and decides."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from typing import Any, Callable, Optional

from kerntune.agents.bake import bake
from kerntune.agents.generator import Generator, GenerationRequest, Proposal, RoundNote
from kerntune.agents.planner import Budget, Planner
from kerntune.agents.rundir import Manifest, RoundRecord, RunDir, now
from kerntune.agents.tester import Candidate, TestReport, Tester, ShapeWinner
from kerntune import speedup as sp
from kerntune.engine.checker import MemoryChecker
from kerntune.engine.evaluate import EvalRequest, KernelInstance
from kerntune.engine.supervisor import DeviceWorker
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.kernelfile import KernelFile
from kerntune.results import EvalResult, Record, ShapeTiming, Status
from kerntune.spec.model import LaunchSpec
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.evaluators import LiveEvaluator
from kerntune.tuner.kernel_files import EXT, resolve_launch_params
from kerntune.tuner.run import TuneSettings, Tuner
from kerntune.tuner.setaside import EARLIER_KEY
from kerntune.tuner.space import Space
from kerntune.tuner.store import RunStore
from kerntune.tuner.summary import TuneSummary, summarize
from kerntune.tuner.template import Template, TemplateRenderError, check_against_spec, parse_template



class OptimizeSettings(Record):
    budget: Budget = Budget()
    shape_set: Optional[str] = None
    seed: int = 0
    warmup: int = 20
    repeats: int = 100
    final_repeats: int = 200
    timeout_s: float = 300.0
    top_k: int = 3
    min_gain: float = sp.THRESHOLD - 1       # a round must gain this much over the best so far to lead the next
    patience: int = 1
    memcheck: str = "best"                   # the checker runs: best (would-be bests + final candidates), all, off
    strategy: Optional[str] = None           # the tuner's search strategy (None: its default)
    generator: str = "rules"                 # "rules" or "llm"
    llm: dict[str, Any] = {}                 # provider settings (no secrets: the key is read from the environment)


class OptimizeResult(Record):
    run_dir: str
    kernel: str
    spec: str
    device: str
    generator: str
    status: str
    stop_reason: str
    baseline: list[ShapeTiming] = []
    rounds: list[RoundRecord] = []
    test: Optional[TestReport] = None
    improved: bool = False
    general_round: Optional[int] = None
    general_key: str = ""
    general_config: dict[str, Any] = {}
    general_speedup: Optional[float] = None
    general_interval: Optional[sp.Interval] = None
    per_shape: list[ShapeWinner] = []
    checker: str = ""                        # the memory checker used, or why none was
    notes: list[str] = []
    llm: dict[str, Any] = {}
    files: dict[str, str] = {}


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
        self.planner = Planner(settings.budget, min_gain=settings.min_gain, patience=settings.patience,
                               strategy=settings.strategy)
        self.manifest: Manifest | None = None
        self.checker = MemoryChecker(worker.info, enabled=settings.memcheck != "off", timeout_s=settings.timeout_s)
        self.distributions: tuple[str, ...] | None = None     # the spec's, less those the original fails on
        self.notes: list[str] = []
        self.templates: dict[int, Template] = {}
        self.summaries: dict[int, TuneSummary] = {}

    # --- helpers ----------------------------------------------------------------
    def event(self, kind: str, **data: Any) -> None:
        self.on_event(kind, data)

    def _save(self) -> None:
        self.run_dir.save_manifest(self.manifest)

    def _validate(self, template_text: str) -> str | None:
        """Why a proposed template cannot be used (None when it can): it must parse, use only
        its parameters and the spec's sizes, render its baseline, and that baseline must
        compile and verify against the original kernel."""
        try:
            t = parse_template(template_text, self.kf.lang, "proposal")
            check_against_spec(t, self.spec)
            inst = t.instance(t.baseline, self.spec, label="proposal baseline")
        except KerntuneError as e:
            return e.message
        except TemplateRenderError as e:
            return f"the baseline configuration does not render ({e.kind}): {e.message}"
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

    def _measurements(self, result: EvalResult) -> str:
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
        m = self.run_dir.read_json("run.json")
        if m is None:
            if self.kf.extraction is not None:     # an extension source: its device code is what runs
                self.run_dir.write(f"original/{self.kf.path.name}", self.kf.source)
            else:
                shutil.copy(self.kf.path, self.run_dir.path / "original" / self.kf.path.name)
            self.run_dir.write("original/spec.yaml", self.kf.loaded.text)
            self.manifest = Manifest(created=now(), kernel_path=str(self.kf.path), kernel_name=self.spec.kernel,
                                     lang=self.kf.lang, spec_path=str(self.kf.loaded.origin),
                                     device=self.worker.info.model_dump(mode="json"),
                                     settings=self.settings.model_dump(mode="json"))
            self._save()
        else:
            self.manifest = self.run_dir.load_manifest()
            self.manifest = self.manifest.model_copy(update={"status": "running"})

    def baseline(self) -> EvalResult:
        """The original, measured (and checked) once per run: the input distributions it
        passes are the run's, and a checker finding on the original turns the checker off
        for the run (candidates would be compared with a kernel that is itself unsafe)."""
        stored = self.run_dir.read_json("baseline.json")
        if stored is not None:
            result = EvalResult.model_validate(stored)
        else:
            tester = self._tester()
            result = tester.baseline(self.settings.seed)
            if result.status is not Status.OK:
                raise KerntuneError(ErrorCode.VERIFY, f"the original kernel fails: {result.status.value}: "
                                                      f"{result.message}",
                                    hint="fix it first: `kerntune bench` on it shows the details",
                                    detail=result.compile_log or None)
            result = result.model_copy(update={"check": tester.check(self.original, self.settings.seed)})
            self.run_dir.write_json("baseline.json", result)
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
        self.start()
        base = self.baseline()
        self.event("baseline", result=base)
        current_src, current_launch, current_speedup = self.kf.source, self.spec.launches.get(self.kf.stem) \
            or self.spec.launch, 1.0
        current_kernel = self.kf.kernel_name
        last_eval: EvalResult = base
        stop_reason = ""
        rounds = list(self.manifest.rounds)
        # replay finished rounds (resume)
        for rec in rounds:
            if rec.status != "running":
                self.planner.record_round(rec.measured, int(rec.plan.get("llm_calls", 0) or 0),
                                          rec.best_speedup or 1.0, [f"round {rec.round}: {v}" for v in rec.set_aside])
                if rec.status == "done":
                    self._load_round(rec.round)
                    if rec.best_speedup and rec.best_speedup > current_speedup * (1 + self.settings.min_gain):
                        current_src, current_launch, current_kernel = self._round_best_kernel(rec.round,
                                                                                              rec.best_config)
                        current_speedup = rec.best_speedup
        r = len([rec for rec in rounds if rec.status != "running"]) + 1
        while True:
            decision = self.planner.decide(r, last_eval, last_eval.resources, self.kf.lang)
            if decision.stop:
                stop_reason = decision.reason
                break
            plan = decision.plan
            rec = next((x for x in rounds if x.round == r), None) or RoundRecord(round=r)
            t0 = time.monotonic()
            calls_before = self._llm_calls()
            self.event("round", round=r, plan=plan)
            proposal = self._proposal(r, plan, current_src, current_launch, base, last_eval, rounds, current_kernel)
            if proposal is None:
                rec = rec.model_copy(update={"status": "no-proposal", "message": "the generator had nothing to propose",
                                             "plan": plan.model_dump() | {"llm_calls": self._llm_calls() - calls_before}})
                self._put(rounds, rec)
                self.planner.record_round(0, self._llm_calls() - calls_before, current_speedup)
                r += 1
                continue
            template = parse_template(proposal.template, self.kf.lang, str(self.run_dir.round_dir(r) / "template"))
            self.templates[r] = template
            space_size = Space.of(template).size
            strategy = self.planner.strategy_for(space_size, plan.evaluations)
            plan = plan.model_copy(update={"strategy": strategy})
            rec = rec.model_copy(update={
                "source": proposal.source, "plan": plan.model_dump(),
                "template": f"rounds/{r:02d}/template{EXT[self.kf.lang]}.j2",
                "space_size": space_size, "transformations": list(proposal.transformations),
                "rationale": proposal.rationale})
            self._put(rounds, rec)
            summary = self._tune(r, template, plan, base)
            self.summaries[r] = summary
            best = summary.general
            speedup = best.geomean_speedup if best and best.geomean_speedup else None
            rec = rec.model_copy(update={
                "set_aside": [v.describe() for v in summary.set_aside],
                "status": "done", "measured": summary.measured, "tuner_stop": summary.stop_reason,
                "best_key": best.key if best else "", "best_config": best.config if best else {},
                "best_speedup": speedup, "seconds": time.monotonic() - t0,
                "plan": plan.model_dump() | {"llm_calls": self._llm_calls() - calls_before}})
            self._put(rounds, rec)
            self.planner.record_round(summary.measured, self._llm_calls() - calls_before,
                                      max(speedup or 1.0, current_speedup), [f"round {r}: {v}" for v in rec.set_aside])
            self.event("round_done", round=r, summary=summary)
            if best is not None and speedup and speedup > current_speedup * (1 + self.settings.min_gain):
                current_src, current_launch, current_kernel = self._round_best_kernel(r, best.config)
                current_speedup = speedup
                last_eval = self._round_best_eval(r, best.key) or last_eval
            r += 1
        report = self._test(rounds, base)
        result = self._finish(rounds, base, report, stop_reason)
        return result

    # --- rounds -------------------------------------------------------------------
    def _put(self, rounds: list[RoundRecord], rec: RoundRecord) -> None:
        for i, x in enumerate(rounds):
            if x.round == rec.round:
                rounds[i] = rec
                break
        else:
            rounds.append(rec)
        self.manifest = self.manifest.model_copy(update={"rounds": list(rounds), "llm": self._llm_usage()})
        self._save()

    def _llm_calls_left(self) -> Optional[int]:
        limit = self.settings.budget.llm_calls
        return None if limit is None else max(0, limit - self._llm_calls())

    def _llm_calls(self) -> int:
        return int(self._llm_usage().get("calls", 0))

    def _llm_usage(self) -> dict[str, Any]:
        usage = getattr(self.generator, "usage", None)
        return usage() if callable(usage) else {}

    def _proposal(self, r: int, plan, src: str, launch: LaunchSpec, base: EvalResult, last: EvalResult,
                  rounds: list[RoundRecord], kernel: str | None = None) -> Proposal | None:
        d = self.run_dir.round_dir(r)
        tfile = d / f"template{EXT[self.kf.lang]}.j2"
        pfile = d / "proposal.json"
        if tfile.exists() and pfile.exists():          # resuming a round that already has its template
            data = self.run_dir.read_json(f"rounds/{r:02d}/proposal.json")
            return Proposal(template=tfile.read_text(), source=data["source"], rationale=data["rationale"],
                            transformations=tuple(data["transformations"]),
                            skipped=tuple(tuple(x) for x in data.get("skipped", [])))
        self.run_dir.write(f"rounds/{r:02d}/input{EXT[self.kf.lang]}", src)
        history = tuple(RoundNote(round=x.round, source=x.source, description=x.rationale, space_size=x.space_size,
                                  measured=x.measured, best_speedup=x.best_speedup,
                                  failures=self._failures(x.round), best_config=x.best_config,
                                  set_aside=tuple(x.set_aside))
                        for x in rounds if x.status == "done")
        req = GenerationRequest(round=r, lang=self.kf.lang, kernel_source=src, original_source=self.kf.source,
                                launch=launch, spec=self.spec, spec_text=self.kf.loaded.text, device=self.worker.info,
                                directions=tuple(plan.directions), measurements=self._measurements(last),
                                history=history, llm_calls_left=self._llm_calls_left(), kernel=kernel)
        self.event("step", text=f"round {r}: the {self.generator.name} generator is writing a template")
        proposal = self.generator.propose(req, self._validate)
        if proposal is None:
            return None
        self.run_dir.write(f"rounds/{r:02d}/template{EXT[self.kf.lang]}.j2", proposal.template)
        self.run_dir.write_json(f"rounds/{r:02d}/proposal.json", {
            "source": proposal.source, "rationale": proposal.rationale, "attempts": proposal.attempts,
            "transformations": list(proposal.transformations), "skipped": [list(x) for x in proposal.skipped],
            "plan": plan.model_dump()})
        return proposal

    def _set_aside_earlier(self, r: int) -> list[dict[str, Any]]:
        """Values earlier rounds set aside, for this round's tuner (it confirms them with one failure)."""
        out = {}
        for rr, s in sorted(self.summaries.items()):
            if rr < r:
                for v in s.set_aside:
                    out[(v.param, repr(v.value), v.reason)] = {"param": v.param, "value": v.value, "reason": v.reason}
        return list(out.values())

    def _failures(self, r: int) -> dict[str, int]:
        s = self.summaries.get(r)
        return dict(s.failed_by_status) if s else {}

    def _tune(self, r: int, template: Template, plan, base: EvalResult) -> TuneSummary:
        d = self.run_dir.round_dir(r)
        create = not (d / "tuning.db").exists()
        store = RunStore.in_dir(d, create=create)
        if create:
            store.set(EARLIER_KEY, self._set_aside_earlier(r))
        if store.get("baseline") is None:
            store.set("baseline", base.model_dump(mode="json"))
        s = self.settings
        settings = TuneSettings(strategy=plan.strategy, budget=plan.evaluations, time_limit_s=plan.time_s,
                                seed=s.seed + r, warmup=s.warmup, repeats=s.repeats, timeout_s=s.timeout_s,
                                shape_set=s.shape_set, distributions=self.distributions,
                                memcheck="all" if s.memcheck == "all" else "best")
        if not create:
            settings = TuneSettings.from_meta(store.get("settings", {}), budget=plan.evaluations)
        evaluator = LiveEvaluator(self.worker)
        tuner = Tuner(template, self.kf.loaded, evaluator, store, settings, self.original,
                      on_progress=lambda p: self.event("tuning", round=r, progress=p), checker=self.checker)
        reason = tuner.run()
        store.set("stop_reason", reason)
        summary = summarize(store, str(d), reason)
        self.run_dir.write_json(f"rounds/{r:02d}/summary.json", summary)
        if summary.general is not None:
            self._round_best_kernel(r, summary.general.config)   # writes rounds/NN/best.<ext>
        store.close()
        return summary

    def _load_round(self, r: int) -> None:
        d = self.run_dir.round_dir(r)
        tfile = d / f"template{EXT[self.kf.lang]}.j2"
        if tfile.exists():
            self.templates[r] = parse_template(tfile.read_text(), self.kf.lang, str(tfile))
        data = self.run_dir.read_json(f"rounds/{r:02d}/summary.json")
        if data is not None:
            self.summaries[r] = TuneSummary.model_validate(data)

    def _instance(self, r: int, config: dict[str, Any], label: str) -> KernelInstance:
        return self.templates[r].instance(config, self.spec, label=label)

    def _round_best_kernel(self, r: int, config: dict[str, Any]) -> tuple[str, LaunchSpec, str]:
        """A round's best kernel: source (parameters baked in), launch and entry point (a templated
        kernel's instantiation may be one of the parameters)."""
        t = self.templates[r]
        src = bake(t.render(config, self.spec), self.kf.lang)
        launch = resolve_launch_params(t.decl.launch, config)
        self.run_dir.write(f"rounds/{r:02d}/best{EXT[self.kf.lang]}", src)
        return src, launch, t.kernel_name(self.spec, config)

    def _round_best_eval(self, r: int, key: str) -> EvalResult | None:
        store = RunStore.in_dir(self.run_dir.round_dir(r))
        found = next((e.result for e in store.evaluations() if e.key == key and e.result is not None), None)
        store.close()
        return found

    # --- testing and outputs ------------------------------------------------------
    def _candidates(self) -> list[Candidate]:
        seen, out = set(), []
        ranked = []
        for r, s in self.summaries.items():
            for rank in s.top[: self.settings.top_k]:
                if rank.geomean_speedup:
                    ranked.append((rank.geomean_speedup, r, rank.key, rank.config))
            for row in s.shapes:   # per-shape bests join the final test too
                if row.best_key and row.speedup:
                    ranked.append((row.speedup * 0.5, r, row.best_key, row.best_config))
        ranked.sort(key=lambda x: -x[0])
        for score, r, key, config in ranked:
            if (r, key) in seen or r not in self.templates:
                continue
            seen.add((r, key))
            inst = self._instance(r, config, f"round {r}: {key}")
            baked = replace(inst, source=bake(self.templates[r].render(config, self.spec), self.kf.lang))
            out.append(Candidate(round=r, key=key, config=config, instance=inst, tuning_score=score, baked=baked))
            if len(out) >= self.settings.top_k + len(spec_shapes(self.spec, self.settings.shape_set)):
                break
        return out

    def _test(self, rounds: list[RoundRecord], base: EvalResult) -> TestReport | None:
        cands = self._candidates()
        if not cands:
            return None
        self.event("testing", count=len(cands))
        report = self._tester().confirm(cands, self.settings.seed + 1000, self.settings.final_repeats)
        report = report.model_copy(update={"notes": list(self.notes)})
        self.run_dir.write_json("test.json", report)
        return report

    @staticmethod
    def _original_rows(base: EvalResult) -> list[ShapeWinner]:
        """With no candidate to test, every shape's winner is the original, as measured."""
        return [ShapeWinner(label=t.label, shape=t.shape, baseline_ms=t.stats.median_ms, winner="original",
                            best_ms=t.stats.median_ms, speedup=1.0, interval=sp.identical(), pct_of_copy=t.pct_of_copy)
                for t in base.timings]

    def _finish(self, rounds: list[RoundRecord], base: EvalResult, report: TestReport | None,
                stop_reason: str) -> OptimizeResult:
        from kerntune.agents.outputs import write_outputs

        files = write_outputs(self, report)
        g = report.general if report is not None and report.improved else None
        result = OptimizeResult(
            run_dir=str(self.run_dir.path), kernel=str(self.kf.path), spec=str(self.kf.loaded.origin),
            device=f"{self.worker.info.name} ({self.worker.info.id})", generator=self.generator.name, status="done",
            stop_reason=stop_reason, baseline=base.timings, rounds=rounds, test=report,
            improved=g is not None, general_round=g.round if g else None, general_key=g.key if g else "",
            general_config=g.config if g else {}, general_speedup=g.geomean_speedup if g else None,
            general_interval=g.geomean if g else None,
            per_shape=report.per_shape if report else self._original_rows(base), llm=self._llm_usage(), files=files,
            checker=self.checker.tool if self.checker.available else self.checker.why_not, notes=list(self.notes))
        self.run_dir.write_json("results.json", result)
        from kerntune.agents.report import write_report

        write_report(self.run_dir, result)
        self.manifest = self.manifest.model_copy(update={"status": "done", "stop_reason": stop_reason,
                                                         "llm": self._llm_usage()})
        self._save()
        return result


__all__ = ["OptimizeResult", "OptimizeSettings", "Optimizer", "resolve_launch_params"]
