"""What a tuning run found: the best configuration per shape, the single
general configuration with the best geometric-mean speedup over the baseline
(and how far each shape's general result is from its specialized best), and
failures and prunings by reason. These are the search's own estimates (each
candidate timed in its own evaluation); the speedups to quote are the
tester's confirmation (``test``), paired and interleaved with the baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import ConfigDict, computed_field
from typing_extensions import TypedDict

from kerntune.errors import KerntuneError
from kerntune.fmt import interval as fmt_interval
from kerntune.record.outcome import CandidateResult, TestReport
from kerntune.results import EvalResult, Record, Status
from kerntune.speedup import Interval, geomean
from kerntune.tuner.crashed import Crashed, read_crashed
from kerntune.tuner.setaside import SetAside, SetAsideValue
from kerntune.spec.model import Shape
from kerntune.tuner.store import Evaluation, RunStore


class _Settings(TypedDict, total=False):
    """The settings meta entry as summarize reads it (the rest is TuneSettings'), checked on read."""
    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]
    strategy: str
    budget: Optional[int]


class _Prior(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]
    paths: list[str]
    used: int


class ShapeResult(Record):
    label: str
    shape: dict[str, int]
    baseline_ms: Optional[float] = None
    best_ms: Optional[float] = None
    best_key: str = ""
    best_config: dict[str, Any] = {}
    speedup: Optional[float] = None            # baseline / per-shape best
    general_ms: Optional[float] = None
    general_speedup: Optional[float] = None    # baseline / general configuration
    general_gap_pct: Optional[float] = None    # how much slower the general config is than the shape's best


class Ranked(Record):
    key: str
    config: dict[str, Any]
    geomean_ms: float                          # geometric mean of the shapes' median times
    geomean_speedup: Optional[float] = None    # over the baseline (None when the run has no baseline)


class HandedBack(Record):
    """The kernel `kerntune tune` hands back as best.<ext>, and the claim made about it: after a
    confirmation the tester's general configuration, with its confirmed interval and verdict;
    without one (a replay, no baseline) the search's pick, with the search's single-pass estimate."""

    file: str = ""                             # relative to the run directory ("": none written)
    key: str
    config: dict[str, Any]
    confirmed: bool = False                    # the tester re-verified and re-timed it against the baseline
    speedup: Optional[Interval] = None         # geomean over the baseline, 95% confidence interval (confirmed)
    faster: Optional[bool] = None              # the tester's verdict: verifiably faster (confirmed only)
    estimate: Optional[float] = None           # the search's own geomean speedup (not confirmed)


class PriorCheck(Record):
    """How one earlier run given with --prior ranked what this run measured (a second look at the prior)."""
    path: str
    common: int = 0                            # configurations measured in both
    rank_correlation: Optional[float] = None   # Spearman's over those (None below 3)
    missing: str = ""                          # why it could not be read again


class TuneSummary(Record):
    run_dir: str
    template: str
    spec: str
    device: str
    strategy: str
    space_size: int
    measured: int
    ok: int
    failed: int
    pruned: int
    duplicates: int
    budget: Optional[int] = None
    elapsed_s: float = 0.0
    stop_reason: str = ""
    failed_by_status: dict[str, int] = {}
    pruned_by_reason: dict[str, int] = {}
    baseline: str = ""
    shapes: list[ShapeResult] = []
    general: Optional[Ranked] = None
    per_shape_geomean_speedup: Optional[float] = None
    top: list[Ranked] = []
    kernels: list[str] = []                    # files `kerntune tune` wrote: best.<ext>, per_shape/*
    test: Optional[TestReport] = None          # the tester's confirmation (live runs): the speedups to quote
    set_aside: list[SetAsideValue] = []        # parameter values no longer measured: they kept failing verification
    prior_used: int = 0                        # earlier measurements (--prior) the search started from
    priors: list[PriorCheck] = []              # and how each earlier run ranked this one's measurements
    crashed: Optional[Crashed] = None          # the kernels of configurations that crashed their worker

    @computed_field      # type: ignore[prop-decorator]
    @property
    def best(self) -> Optional[HandedBack]:
        """What best.<ext> holds and the claim about it (``general`` is the search's pick, which the
        confirmation may not have kept)."""
        file = next((k for k in self.kernels if k.startswith("best")), "")
        g = self.confirmed_general()
        if g is not None:
            return HandedBack(file=file, key=g.key, config=g.config, confirmed=True, speedup=g.geomean,
                              faster=bool(self.test and self.test.improved))
        if self.general is not None:
            return HandedBack(file=file, key=self.general.key, config=self.general.config,
                              estimate=self.general.geomean_speedup)
        return None

    @computed_field      # type: ignore[prop-decorator]
    @property
    def headline(self) -> str:
        """The result of the run in one sentence."""
        name = self.template.rsplit("/", 1)[-1] or "the template"
        g = self.confirmed_general()
        if g is not None:
            if self.test is not None and self.test.improved:
                return (f"The general configuration {g.key} makes {name} {fmt_interval(g.geomean)} faster than "
                        f"{self.baseline} on {self.device} (geomean, 95% confidence interval, confirmed by the "
                        "tester).")
            return (f"No configuration of {name} is verifiably faster than {self.baseline} on {self.device}: the "
                    f"general configuration {g.key} measured {fmt_interval(g.geomean)} (95% confidence interval).")
        s = self.general
        if s is not None and s.geomean_speedup is not None:
            how = f"makes {name} {s.geomean_speedup:.3f}x faster than" if s.geomean_speedup >= 1 else \
                f"leaves {name} at {s.geomean_speedup:.3f}x the speed of"        # "0.73x faster" read as faster
            return (f"The general configuration {s.key} {how} {self.baseline} on {self.device} (geomean; the "
                    "search's own estimate, not confirmed).")
        if s is not None:
            why = ("imported from a Kernel Tuner cache, which holds no baseline measured by kerntune"
                   if self.baseline == IMPORTED_NO_BASELINE else "no baseline was measured")
            return f"The fastest configuration of {name} on {self.device} is {s.key} ({why})."
        return f"No configuration of {name} was timed on every shape on {self.device}."

    def confirmed_general(self) -> Optional[CandidateResult]:
        """The tester's general configuration once it has a confirmed interval: the one the headline,
        best.<ext> and the report are about (None before or without a confirmation)."""
        g = self.test.general if self.test is not None else None
        return g if g is not None and g.geomean is not None else None


def _timings(e: Evaluation) -> dict[str, float]:
    if e.result is None or e.result.status is not Status.OK:
        return {}
    return {Shape.of(t.shape).key: t.stats.median_ms for t in e.result.timings}


def _where_now(path: str, run_dir: str) -> str:
    """A recorded path inside a run directory that has since been moved or copied: the same file where
    the run is now (an optimize round's template was named in the folder it was made in)."""
    from pathlib import Path

    if not path or not run_dir:
        return path
    p, here = Path(path), Path(run_dir) / Path(path).name
    return str(here) if p.parent.resolve() != Path(run_dir).resolve() and here.is_file() else path


def summarize(store: RunStore, run_dir: str = "", stop_reason: str = "") -> TuneSummary:
    evals = list(store.evaluations())
    settings = store.get("settings", {}, _Settings)
    base = store.get("baseline", None, EvalResult)
    shapes = [Shape.of({k: v for k, v in s.items() if k != "label"}, label=s.get("label", ""))
              for s in store.get("shapes", [], list[dict[str, Any]])]
    base_ms = {Shape.of(t.shape).key: t.stats.median_ms for t in (base.timings if base else [])}
    real = [e for e in evals if e.duplicate_of is None]
    failed: dict[str, int] = {}
    pruned: dict[str, int] = {}
    for e in real:
        if e.status == Status.PRUNED.value:
            pruned[e.reason or "unknown"] = pruned.get(e.reason or "unknown", 0) + 1
        elif e.status != Status.OK.value:
            label = e.status + (f" ({e.reason})" if e.reason and e.status == Status.ERROR.value else "")
            failed[label] = failed.get(label, 0) + 1
    timed = [(e, _timings(e)) for e in real]
    timed = [(e, t) for e, t in timed if t]
    # the general configuration: the best geometric-mean speedup over all shapes
    ranked = []
    for e, t in timed:
        if all(s.key in t for s in shapes):
            sp = geomean([base_ms[s.key] / t[s.key] for s in shapes]) if all(s.key in base_ms for s in shapes) \
                else None
            ranked.append(Ranked(key=e.key, config=e.config, geomean_ms=geomean([t[s.key] for s in shapes]),
                                 geomean_speedup=sp))
    ranked.sort(key=lambda r: -r.geomean_speedup if r.geomean_speedup is not None else r.geomean_ms)
    general = ranked[0] if ranked else None
    general_t = next((t for e, t in timed if general and e.key == general.key), {})
    rows = []
    for s in shapes:
        best = min(((t[s.key], e) for e, t in timed if s.key in t), key=lambda x: x[0], default=None)
        b = base_ms.get(s.key)
        g = general_t.get(s.key)
        rows.append(ShapeResult(
            label=s.label, shape=s.as_dict(), baseline_ms=b,
            best_ms=best[0] if best else None, best_key=best[1].key if best else "",
            best_config=best[1].config if best else {},
            speedup=b / best[0] if b and best else None,
            general_ms=g, general_speedup=b / g if b and g else None,
            general_gap_pct=100.0 * (g / best[0] - 1) if g and best else None))
    per_shape = [r.speedup for r in rows if r.speedup]
    device = store.get("device", None, dict[str, Any]) or {}
    elapsed = max((e.finished for e in evals), default=0.0) - (store.get("created", None, float) or 0.0) \
        if evals else 0.0
    return TuneSummary(
        run_dir=run_dir, template=_where_now(store.get("template_path", "", str), run_dir), spec=store.get("spec_path", "", str),
        device=f"{device.get('name', '?')} ({device.get('id', '?')})", strategy=settings.get("strategy", ""),
        space_size=store.get("space_size", 0, int), measured=sum(1 for e in evals if e.counted),
        ok=sum(1 for e in real if e.status == Status.OK.value),
        failed=sum(failed.values()), pruned=sum(pruned.values()),
        duplicates=sum(1 for e in evals if e.duplicate_of is not None), budget=settings.get("budget"),
        elapsed_s=max(elapsed, 0.0), stop_reason=stop_reason or store.get("stop_reason", "", str),
        failed_by_status=failed, pruned_by_reason=pruned,
        baseline=_baseline_label(store, base, settings),
        shapes=rows, general=general,
        per_shape_geomean_speedup=geomean(per_shape) if per_shape else None,
        top=ranked[:10], test=_test(store), set_aside=_set_aside(store),
        prior_used=(store.get("prior", None, _Prior) or {}).get("used", 0), priors=_priors(store, real),
        crashed=read_crashed(store))


# what a run imported with `kerntune kt-cache import` (strategy "imported"), or a replay of one, says
# in place of a baseline: the cache holds Kernel Tuner's timings of the configurations, none of a baseline
IMPORTED_NO_BASELINE = ("none: a Kernel Tuner cache holds no baseline measured by kerntune, so these are times, "
                        "not speedups")


def _baseline_label(store: RunStore, base: Optional[EvalResult], settings: dict) -> str:
    """What the run's speedups are over, or why it has none ("template baseline configuration" was
    printed for an imported Kernel Tuner cache, which has no baseline at all)."""
    original = store.get("original", None, dict[str, Any]) or {}
    if original.get("label"):
        return original["label"]
    if base is not None:
        return "template baseline configuration"
    replayed = store.get("replay_of", None, str)
    if settings.get("strategy") == "imported" or (replayed and _imported(replayed)):
        return IMPORTED_NO_BASELINE
    return "none measured, so these are times, not speedups"


def _imported(run_dir: str) -> bool:
    try:
        return (RunStore.in_dir(Path(run_dir), readonly=True).get("settings", None, dict[str, Any]) or {}).get("strategy") == "imported"
    except (KerntuneError, OSError):      # the replayed run is gone or unreadable: nothing more to say of it
        return False


def _priors(store: RunStore, real: list[Evaluation]) -> list[PriorCheck]:
    """For each --prior of the run: how its scores rank this run's measured configurations."""
    from kerntune.tuner.priors import agreement

    here = [(dict(e.config), float(e.score)) for e in real if e.score is not None and e.score > 0]
    out = []
    for path in (store.get("prior", None, _Prior) or {}).get("paths", []):
        try:
            common, rho = agreement(Path(path), here)
        except KerntuneError as e:
            out.append(PriorCheck(path=path, missing=e.message))
            continue
        out.append(PriorCheck(path=path, common=common, rank_correlation=rho))
    return out


def _test(store: RunStore) -> Optional[TestReport]:
    """The tester's confirmation, when it belongs to the search as recorded (it is written
    after the search stops and cleared when a search starts)."""
    data = store.get("test", None, TestReport)
    return data if data and store.get("stop_reason") else None


def _set_aside(store: RunStore) -> list[SetAsideValue]:
    """The values the tuner set aside, re-derived from the run database as the tuner derives them."""
    from kerntune.tuner.template import stored_template

    try:
        template = stored_template(store, "recorded template")
    except KerntuneError:
        return []
    if template is None:
        return []
    return SetAside.from_store({k: tuple(v) for k, v in template.decl.params.items()}, store).entries()


def prior_notes(s: TuneSummary) -> list[str]:
    """What the search started from (--prior) and how each earlier run ranked this one's measurements."""
    if not s.priors:
        return []
    out = [f"The search started from {s.prior_used} earlier measurements (`--prior`)."]
    for p in s.priors:
        if p.missing:
            out.append(f"Prior {p.path}: not read again ({p.missing}).")
        elif p.rank_correlation is None:
            out.append(f"Prior {p.path}: {p.common} configuration(s) measured in both, too few to say how well it "
                       "ranked this run.")
        else:
            out.append(f"Prior {p.path}: {p.common} configurations measured in both, rank correlation "
                       f"{p.rank_correlation:.2f} with this run's scores (1: the same order, 0: unrelated, below 0: "
                       "reversed).")
    return out


__all__ = ["PriorCheck", "Ranked", "ShapeResult", "TuneSummary", "prior_notes", "summarize"]
