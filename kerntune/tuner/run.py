"""The tuning loop: ask the strategy, prune, render, deduplicate, compile
ahead, verify and time, record, tell. Budget and time limit are enforced
here, for every strategy alike."""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional
from typing_extensions import TypedDict

from kerntune import __version__
from kerntune.engine.checker import MemoryChecker, check_shapes
from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions, resolve_launch
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import CheckStatus, EvalResult, Status
from kerntune.speedup import geomean
from kerntune.spec.load import LoadedSpec
from kerntune.spec.model import Shape
from kerntune.spec.shapes import holdout_shapes, spec_shapes
from kerntune.tuner.evaluators import Evaluator
from kerntune.tuner.feasibility import before_compile
from kerntune.tuner.setaside import EARLIER_KEY, REASON as SET_ASIDE_REASON, SetAside
from kerntune.tuner.space import Config, Space
from kerntune.tuner.store import Evaluation, RunStore
from kerntune.tuner.strategies import DEFAULT_STRATEGY, make_strategy
from kerntune.tuner.template import Template, TemplateRenderError, config_key


# repeated proposals in a row after which the tuner hands the strategy an unproposed configuration
REPEATS_BEFORE_FALLBACK = 20


@dataclass(frozen=True)
class TuneSettings:
    strategy: str = DEFAULT_STRATEGY
    options: dict[str, Any] = field(default_factory=dict)
    budget: Optional[int] = None            # measured evaluations (pruned and duplicates do not count)
    time_limit_s: Optional[float] = None    # wall time; the evaluation in flight finishes
    seed: int = 0
    warmup: int = 20
    repeats: int = 100
    flush_l2: bool = True
    timeout_s: float = 300.0                # per evaluation (hung kernels are killed)
    reject_spills: bool = False
    shape_set: Optional[str] = None
    stop_factor: float = 3.0                # stop timing a shape once a candidate is this much slower than the best
    precision: float = 0.02                 # stop timing a shape once its median's 95% interval is within +-2%
    race_margin: float = 1.05               # or once that interval lies above the best median so far x this (0: off)
    lookahead: int = 0                      # configurations compiled ahead (needs compile workers)
    distributions: Optional[tuple[str, ...]] = None   # input distributions (None: the spec's)
    memcheck: str = "best"                  # which verified candidates the checker runs: best (would-be bests), all
    priors: tuple[str, ...] = ()            # earlier runs or Kernel Tuner caches the strategy starts from

    def to_meta(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_meta(cls, data: dict[str, Any], **overrides: Any) -> "TuneSettings":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known.update({k: v for k, v in overrides.items() if v is not None})
        for k in ("distributions", "priors"):
            if known.get(k) is not None:
                known[k] = tuple(known[k])
        return cls(**known)


@dataclass
class Progress:
    """What the live display shows; passed to the progress callback."""

    measured: int = 0
    budget: Optional[int] = None
    ok: int = 0
    failed: int = 0
    pruned: int = 0
    duplicates: int = 0
    best_score: float = math.inf     # geomean of time / baseline time, or of plain times (ms) with no baseline
    best_key: str = ""
    relative: bool = True            # whether best_score is relative to a measured baseline
    last_key: str = ""
    last_status: str = ""
    elapsed_s: float = 0.0
    time_limit_s: Optional[float] = None
    phase: str = "starting"
    space: int = 0                   # configurations in the space (what a run with no budget counts against)


def instance_hash(inst: KernelInstance, launches: list[tuple]) -> str:
    """Identity of what actually runs: rendered source, options and launch per shape."""
    return hashlib.sha256((inst.digest + json.dumps(launches)).encode()).hexdigest()[:20]


class Tuner:
    def __init__(self, template: Template, loaded: LoadedSpec, evaluator: Evaluator, store: RunStore,
                 settings: TuneSettings, original: KernelInstance | None = None,
                 on_progress: Callable[[Progress], None] = lambda p: None, checker: MemoryChecker | None = None):
        self.template = template
        self.loaded = loaded
        self.spec = loaded.spec
        self.evaluator = evaluator
        self.store = store
        self.settings = settings
        self.original = original
        self.on_progress = on_progress
        self.checker = checker                 # every candidate that becomes a best so far is checked
        self.space = Space.of(template)
        self.time_shapes = tuple(spec_shapes(self.spec, settings.shape_set))
        self.verify_shapes = self.time_shapes + tuple(holdout_shapes(self.spec, settings.shape_set))
        if getattr(evaluator, "replays", False):
            evaluator.require_shapes(self.time_shapes)
        # every input distribution on the held-out shapes and the smallest listed one; the spec's own
        # inputs on the others (the final test verifies everything everywhere)
        smallest = min(self.time_shapes, key=lambda sh: math.prod(v for _, v in sh.sizes))
        self.all_distributions_on = tuple(sh.key for sh in self.verify_shapes if sh.holdout) + (smallest.key,)
        self.progress = Progress(budget=settings.budget, time_limit_s=settings.time_limit_s, space=self.space.size)
        self.known: dict[str, Evaluation] = {}
        # parameter values that failed verification the same way too often (see tuner.setaside)
        self.set_aside = SetAside(self.space.params, store.get(EARLIER_KEY, []) or [])
        self.by_instance: dict[str, int] = {}
        self.best_ms: dict[str, float] = {}
        self.baseline_ms: dict[str, float] = {}
        self._t0 = time.monotonic()

    # --- setup ----------------------------------------------------------------
    def _helpers(self) -> dict[str, dict[str, str]]:
        """The spec's helper files (reference, input generator), each with the SHA-256 of what it holds now
        ("" when it is not there)."""
        out = {}
        for name in ("reference", "inputs"):
            ref = getattr(self.loaded.spec, name, None)
            if ref is None or ref.file is None:
                continue
            path = (Path(self.loaded.base_dir) / ref.file).absolute()
            out[name] = {"file": str(path),
                         "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""}
        return out

    def _check_helpers(self) -> None:
        """A resumed run verifies against the reference its measured candidates were verified against: the
        spec's text is recorded, but its reference is read from disk, and a reference.py edited between a
        run and its --resume was used for the new candidates without a word (adversarial tour)."""
        recorded = self.store.get(HELPERS_KEY, None, dict[str, dict[str, str]])
        if recorded is None or getattr(self.evaluator, "replays", False):    # runs from before, and replays
            return
        now = self._helpers()
        for name, was in recorded.items():
            is_ = now.get(name, {"file": was.get("file", "?"), "sha256": ""})
            if is_["file"] != was.get("file") and is_["sha256"] != was.get("sha256"):
                raise KerntuneError(ErrorCode.FILE, f"the spec's {name} file was {was.get('file')}; from here the "
                                                    f"resumed run would read {is_['file']}",
                                    hint="the run names its spec by a relative path: continue it from the folder "
                                         "it was started in")
            if is_["sha256"] != was.get("sha256"):
                how = "is gone" if not is_["sha256"] else "changed"
                raise KerntuneError(ErrorCode.FILE, f"the spec's {name} file {is_['file']} {how} since the run "
                                                    "started: its candidates so far were verified against what "
                                                    "it held then",
                                    hint="restore that file to continue the run, or start a new run with the file "
                                         "as it is now")

    def _record_meta(self) -> None:
        s = self.store
        if s.get("created") is not None:
            self._check_helpers()
        else:
            s.set(HELPERS_KEY, self._helpers())
            s.set("created", time.time())
            s.set("kerntune_version", __version__)
            s.set("template_path", self.template.origin)
            s.set("template_text", self.template.text)
            s.set("template_lang", self.template.lang)
            s.set("spec_path", str(self.loaded.origin))
            s.set("spec_text", self.loaded.text)
            s.set("spec_inline", self.loaded.inline)
            s.set("original", None if self.original is None else
                  {"label": self.original.label, "source": self.original.source, "name": self.original.name,
                   "lang": self.original.lang, "options": list(self.original.options)})
            s.set("shapes", [sh.as_dict() | {"label": sh.label} for sh in self.time_shapes])
        s.set("settings", self.settings.to_meta())
        s.set("test", None)          # a confirmation from before this search no longer speaks for it
        s.set("device", self.evaluator.device.model_dump(mode="json"))
        s.set("space_size", self.space.size)

    def _load_known(self) -> None:
        for e in self.store.evaluations():
            self.known[e.key] = e
            if e.source_hash and e.duplicate_of is None and e.status not in (Status.PRUNED.value,):
                self.by_instance.setdefault(e.source_hash, e.id)
            self._count(e)
            self._update_best(e)
            self.set_aside.observe(e)

    def _count(self, e: Evaluation) -> None:
        p = self.progress
        if e.status == Status.PRUNED.value:
            p.pruned += 1
        elif e.duplicate_of is not None:
            p.duplicates += 1
        elif e.status == Status.OK.value:
            p.ok += 1
        else:
            p.failed += 1
        if e.counted:
            p.measured += 1
        if e.score is not None and e.score < p.best_score:
            p.best_score, p.best_key = e.score, e.key

    def _update_best(self, e: Evaluation) -> None:
        if e.result is None or e.result.status is not Status.OK:
            return
        for t in e.result.timings:
            key = Shape.of(t.shape).key
            if not t.stats.stopped_early:
                self.best_ms[key] = min(self.best_ms.get(key, math.inf), t.stats.median_ms)

    def _request(self, inst: KernelInstance, key: str, reference: KernelInstance | None) -> EvalRequest:
        seed = int.from_bytes(hashlib.sha256(f"{self.settings.seed}:{key}".encode()).digest()[:4], "little")
        stop = tuple((k, ms * self.settings.stop_factor) for k, ms in self.best_ms.items()) \
            if self.settings.stop_factor > 0 else ()
        race = tuple((k, ms * self.settings.race_margin) for k, ms in self.best_ms.items()) \
            if self.settings.race_margin > 0 else ()
        timing = TimingOptions(warmup=self.settings.warmup, repeats=self.settings.repeats,
                               flush_l2=self.settings.flush_l2, stop_after_ms=stop, race_ms=race,
                               precision=self.settings.precision)
        return EvalRequest(candidate=inst, spec=self.spec, base_dir=str(self.loaded.base_dir),
                           verify_shapes=self.verify_shapes, time_shapes=self.time_shapes, seed=seed,
                           reference=reference, timing=timing, distributions=self.settings.distributions,
                           all_distributions_on=self.all_distributions_on)

    def _baseline(self) -> None:
        """Time the original kernel (or the template's baseline configuration)."""
        stored = self.store.get("baseline", None, EvalResult)
        replays = getattr(self.evaluator, "replays", False)
        if stored is not None:
            result = stored
        else:
            self.progress.phase = "looking up the baseline in the replayed run" if replays else "measuring the baseline"
            self.on_progress(self.progress)
            if self.original is not None:
                inst = self.original
            else:
                inst = self.template.instance(self.space.baseline(), self.spec, label="baseline")
            result = self.evaluator.evaluate(self._request(inst, "__baseline__", None), self.settings.timeout_s,
                                             "__baseline__")
            if result.status is not Status.OK and replays:
                self.progress.relative = False
                return  # a replayed run with no recorded baseline: scores are plain times
            if result.status is not Status.OK:
                what = "the original kernel" if self.original is not None else "the template's baseline configuration"
                raise KerntuneError(ErrorCode.VERIFY, f"{what} failed: {result.status.value}: {result.message}",
                                    detail=(result.compile_log or None)
                                    if result.status is Status.COMPILE_ERROR else None)
            self.store.set("baseline", result.model_dump(mode="json"))
        for t in result.timings:
            self.baseline_ms[Shape.of(t.shape).key] = t.stats.median_ms
        self.progress.relative = bool(self.baseline_ms)
        if stored is None and self.original is None and not replays:
            self._baseline_evaluation(inst, result)

    def _baseline_evaluation(self, inst: KernelInstance, result: EvalResult) -> None:
        """With no original kernel the baseline is the template's baseline configuration, measured like
        a candidate: record it as that configuration's evaluation (counted in the budget, as every
        configuration measured is), so that the search, which usually proposes it first, is answered from
        the record instead of measuring it a second time."""
        config = self.space.baseline()
        key = config_key(config)
        kind, payload = self._prepare(config)
        if key in self.known or kind != "ready":
            return
        ih = payload[1]
        result = self._checked(inst, result)
        e = self._record(key, config, result.status.value, True, source_hash=ih, reason=result.reason,
                         message=result.message, score=self.score(result), result=result)
        self.by_instance[ih] = e.id

    def score(self, result: EvalResult) -> float | None:
        """Geometric mean over tuning shapes of candidate time / baseline time (lower is better)."""
        if result.status is not Status.OK or not result.timings:
            return None
        ratios = []
        for t in result.timings:
            base = self.baseline_ms.get(Shape.of(t.shape).key)
            ratios.append(t.stats.median_ms / base if base else t.stats.median_ms)
        return geomean(ratios)

    def _improves(self, result: EvalResult) -> bool:
        """Whether a verified result would become the best so far, overall or on some shape."""
        if result.status is not Status.OK:
            return False
        score = self.score(result)
        if score is not None and score < self.progress.best_score:
            return True
        return any(not t.stats.stopped_early and t.stats.median_ms < self.best_ms.get(Shape.of(t.shape).key, math.inf)
                   for t in result.timings)

    def _checked(self, inst: KernelInstance, result: EvalResult) -> EvalResult:
        """A would-be best under the memory and race checker: a finding makes it a failure."""
        if self.checker is None or result.status is not Status.OK:
            return result
        if self.settings.memcheck != "all" and not self._improves(result):
            return result
        self.progress.phase = self.checker.step(inst.label)
        self.on_progress(self.progress)
        report = self.checker.check(inst, self.spec, str(self.loaded.base_dir),
                                    check_shapes(self.spec, self.settings.shape_set), self.settings.seed)
        self.progress.phase = "searching"
        update: dict[str, Any] = {"check": report}
        if report.status is CheckStatus.MEMORY_ERROR:
            update.update(status=Status.MEMORY_ERROR, message=f"{report.tool}: {report.message}")
        elif report.status is CheckStatus.WRONG_RESULT:
            update.update(status=Status.WRONG_RESULT, message=report.message)
        return result.model_copy(update=update)

    # --- the loop -------------------------------------------------------------
    def _done(self) -> str | None:
        s, p = self.settings, self.progress
        if s.budget is not None and p.measured >= s.budget:
            return "budget spent"
        if s.time_limit_s is not None and time.monotonic() - self._t0 >= s.time_limit_s:
            return "time limit reached"
        if len(self.known) >= self.space.size:
            return "space exhausted"
        return None

    def _record(self, key: str, config: Config, status: str, counted: bool, **kw: Any) -> Evaluation:
        row_id = self.store.add(key, config, status, counted, **kw)
        e = Evaluation(id=row_id, key=key, config=config, source_hash=kw.get("source_hash", ""), status=status,
                       reason=kw.get("reason", ""), message=kw.get("message", ""), counted=counted,
                       duplicate_of=kw.get("duplicate_of"), score=kw.get("score"), result=kw.get("result"),
                       started=kw.get("started") or time.time(), finished=time.time())
        self.known[key] = e
        self._count(e)
        self._update_best(e)
        self.set_aside.observe(e)
        p = self.progress
        p.last_key, p.last_status = key, (status if e.duplicate_of is None else "duplicate")
        p.elapsed_s = time.monotonic() - self._t0
        self.on_progress(p)
        return e

    def _prepare(self, config: Config) -> tuple[str, Any]:
        """('pruned'|'render_error'|'duplicate'|'ready', payload) for a fresh configuration."""
        key = config_key(config)
        rejected = before_compile(self.template, self.space, config, self.spec, self.verify_shapes,
                                  self.evaluator.device)
        if rejected:
            return "pruned", rejected
        try:
            inst = self.template.instance(config, self.spec, label=key)
        except TemplateRenderError as e:
            return "render_error", e
        launches = [resolve_launch(self.spec, inst, sh) for sh in self.verify_shapes]
        ih = instance_hash(inst, launches)
        if ih in self.by_instance:
            return "duplicate", (ih, self.by_instance[ih])
        return "ready", (inst, ih)

    def _learn(self, strategy) -> None:
        """Give the strategy the earlier measurements of --prior (a resumed run whose priors are gone goes on
        without them: what it measured stands, only what it proposes next changes)."""
        if not self.settings.priors:
            return
        from kerntune.tuner.priors import load_priors

        try:
            sources = load_priors([Path(p) for p in self.settings.priors], self.space)
        except KerntuneError as e:
            if not self.known:
                raise
            self.store.set("prior", {"paths": list(self.settings.priors), "used": 0, "missing": e.message})
            return
        self.store.set("prior", {"paths": list(self.settings.priors), "used": strategy.learn(sources)})

    def _probe(self, proposed: set[str]) -> Optional[Config]:
        """The set-aside record's next configuration to try, when it has one not yet seen."""
        while (config := self.set_aside.probe()) is not None:
            if self.space.contains(config) and config_key(config) not in proposed and config_key(config) not in self.known:
                return config
        return None

    def _unproposed(self, proposed: set[str], rng: random.Random) -> Optional[Config]:
        """A configuration not in ``proposed``: random draws first, then the first in space order."""
        for _ in range(200):
            config = self.space.random_config(rng)
            if config_key(config) not in proposed:
                return config
        return next((c for c in self.space.configs() if config_key(c) not in proposed), None)

    def run(self) -> str:
        """Tune until the budget, the time limit or the strategy ends; returns why it stopped."""
        self._record_meta()
        self._load_known()
        self._baseline()
        reference = self.original
        if reference is None and self.spec.reference is None:
            # no original and no NumPy reference: the template's baseline configuration is the reference
            reference = self.template.instance(self.space.baseline(), self.spec, label="baseline")
        strategy = make_strategy(self.settings.strategy, self.space, self.settings.seed, self.settings.options)
        self._learn(strategy)
        self.progress.phase = "searching"
        queue: list[tuple[Config, str, Any]] = []
        exhausted = False
        proposed: set[str] = set()         # configurations this strategy has proposed (or been given) so far
        repeats = 0                        # its proposals in a row that it had already made
        fallback = random.Random(f"{self.settings.seed}:fallback")
        excluded: set[tuple[str, str]] = set()     # set-aside values the strategy has been told of
        while True:
            why = self._done()
            if why:
                return why
            for k, v in self.set_aside.aside.items():
                if k not in excluded:
                    excluded.add(k)
                    strategy.exclude(v.param, v.value)
            while not exhausted and len(queue) <= self.settings.lookahead:
                # a value that keeps failing beside other untried values is tried alone first (tuner.setaside)
                if self.settings.budget is not None:     # what the budget still allows, the queued taken off
                    queued = sum(1 for _, kind, _ in queue if kind == "ready")
                    strategy.budget(max(0, self.settings.budget - self.progress.measured - queued),
                                    self.settings.budget)
                config = self._probe(proposed) or strategy.ask()
                if config is None:
                    exhausted = True
                    break
                key = config_key(config)
                if key in proposed:            # a repeated proposal (a converged model, a revisited neighbour)
                    if key in self.known:
                        e = self.known[key]
                        strategy.tell(config, e.score if e.score is not None else math.inf)
                    repeats += 1
                    if repeats < REPEATS_BEFORE_FALLBACK:
                        continue
                    # the strategy keeps proposing what it has seen: spend the next evaluation on a
                    # configuration it has not proposed (told to it like any other), so every
                    # strategy reaches its budget
                    config = self._unproposed(proposed, fallback)
                    if config is None:
                        exhausted = True
                        break
                    key = config_key(config)
                repeats = 0
                proposed.add(key)
                if key in self.known:          # a resumed run: answer from the record
                    e = self.known[key]
                    strategy.tell(config, e.score if e.score is not None else math.inf)
                    continue
                aside = self.set_aside.blocks(config)
                kind, payload = ("set_aside", aside) if aside is not None else self._prepare(config)
                if kind == "ready":
                    self.evaluator.prefetch(payload[0])
                queue.append((config, kind, payload))
            if not queue:
                return "strategy finished"
            config, kind, payload = queue.pop(0)
            key = config_key(config)
            if kind == "ready" and self.set_aside.blocks(config) is not None:   # set aside while queued
                kind, payload = "set_aside", self.set_aside.blocks(config)
            if kind == "set_aside":            # answered with the recorded failure, not measured
                self._record(key, config, Status.PRUNED.value, False, reason=SET_ASIDE_REASON,
                             message=f"set aside: {payload.describe()}")
                strategy.tell(config, math.inf)
            elif kind == "pruned":
                self._record(key, config, Status.PRUNED.value, False, reason=payload.reason, message=payload.message)
                strategy.tell(config, math.inf)
            elif kind == "render_error":
                self._record(key, config, Status.ERROR.value, False, reason=f"render_{payload.kind}",
                             message=payload.message)
                strategy.tell(config, math.inf)
            elif kind == "duplicate":
                ih, first = payload
                original = next(e for e in self.known.values() if e.id == first)
                self._record(key, config, original.status, False, source_hash=ih, duplicate_of=first,
                             score=original.score, reason=original.reason,
                             message=f"renders to the same kernel and launch as {original.key}")
                strategy.tell(config, original.score if original.score is not None else math.inf)
            else:
                inst, ih = payload
                started = time.time()
                result = self.evaluator.evaluate(self._request(inst, key, reference), self.settings.timeout_s, key)
                result = self._checked(inst, result)
                if result.status is Status.RESOURCE_LIMIT:   # found after compiling: pruned, not measured
                    self.by_instance[ih] = self._record(key, config, Status.PRUNED.value, False, source_hash=ih,
                                                        reason=result.reason or "resources", message=result.message,
                                                        result=result, started=started).id
                    strategy.tell(config, math.inf)
                    continue
                if self.settings.reject_spills and result.resources is not None and result.resources.spills:
                    self.by_instance[ih] = self._record(key, config, Status.PRUNED.value, False, source_hash=ih,
                                                        reason="spills", message="spills registers", result=result,
                                                        started=started).id
                    strategy.tell(config, math.inf)
                    continue
                score = self.score(result)
                e = self._record(key, config, result.status.value, True, source_hash=ih, reason=result.reason,
                                 message=result.message, score=score, result=result, started=started)
                self.by_instance[ih] = e.id
                strategy.tell(config, score if score is not None else math.inf)


HELPERS_KEY = "spec_helpers"      # meta: the spec's reference and input files, with their digests at the start


def template_from_store(store: RunStore) -> tuple[Template, LoadedSpec]:
    """The exact template and spec a recorded run used (for resume and replay)."""
    from kerntune.spec.load import parse
    from kerntune.tuner.template import stored_template

    spec_text, spec_path = store.get("spec_text"), store.get("spec_path")
    template = stored_template(store)
    if template is None or not spec_text:
        raise KerntuneError(ErrorCode.RUN, f"{store.path} does not record its template and spec")
    spec_origin = Path(spec_path)   # spec_text is the YAML itself, also for an inline spec
    loaded = parse(spec_text, origin=spec_origin, base_dir=spec_origin.parent, inline=bool(store.get("spec_inline")))
    return template, loaded


class _Original(TypedDict):
    """The original kernel as a run records it (meta entry ``original``), checked on read."""
    source: str
    name: str
    lang: str
    options: list[str]
    label: str


def original_from_store(store: RunStore) -> KernelInstance | None:
    data = store.get("original", None, _Original)
    if not data:
        return None
    return KernelInstance(source=data["source"], name=data["name"], lang=data["lang"],
                          options=tuple(data["options"]), label=data["label"])


__all__ = ["Progress", "TuneSettings", "Tuner", "instance_hash", "original_from_store", "template_from_store"]
