"""The tester role: the baseline measurement of the original kernel, and the
final word on candidates: full verification on every shape, the spec's
held-out shapes and fresh shapes no candidate saw, with fresh inputs; re-timing
with more repeats, interleaved with the original in the same session;
plausibility checks; the decision."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.results import EvalResult, Record, ShapeTiming, Status, geomean
from kerntune.spec.load import LoadedSpec
from kerntune.spec.model import Shape
from kerntune.spec.shapes import extra_holdouts, holdout_shapes, spec_shapes

IMPROVED = 1.02                 # a geometric-mean speedup below this is noise, not an improvement
TOO_GOOD_SPEEDUP = 10.0         # on a kernel already at a good fraction of the copy bandwidth
TOO_GOOD_BASE_PCT = 30.0
BEYOND_FLOOR_PCT = 110.0        # faster than a device-to-device copy of the same bytes allows


@dataclass(frozen=True)
class Candidate:
    round: int
    key: str
    config: dict[str, Any]
    instance: KernelInstance
    tuning_score: float


class CandidateResult(Record):
    round: int
    key: str
    config: dict[str, Any]
    verified: bool
    message: str = ""
    timings: list[ShapeTiming] = []
    speedups: dict[str, float] = {}          # shape label -> baseline / candidate
    geomean_speedup: Optional[float] = None
    flags: list[str] = []


class ShapeWinner(Record):
    label: str
    shape: dict[str, int]
    baseline_ms: float
    winner: str                              # candidate key, or "original"
    round: Optional[int] = None
    best_ms: float
    speedup: float
    pct_of_copy: Optional[float] = None


class TestReport(Record):
    __test__ = False   # not a pytest test class
    seed: int
    baseline: list[ShapeTiming] = []
    candidates: list[CandidateResult] = []
    general: Optional[CandidateResult] = None
    improved: bool = False
    per_shape: list[ShapeWinner] = []
    fresh_shapes: list[dict[str, int]] = []


class Tester:
    __test__ = False   # not a pytest test class

    def __init__(self, worker: DeviceWorker, loaded: LoadedSpec, original: KernelInstance, shape_set: str | None,
                 warmup: int, repeats: int, timeout_s: float, on_step: Callable[[str], None] = lambda s: None):
        self.worker = worker
        self.loaded = loaded
        self.original = original
        self.shape_set = shape_set
        self.warmup = warmup
        self.repeats = repeats
        self.timeout_s = timeout_s
        self.on_step = on_step
        self.shapes = tuple(spec_shapes(loaded.spec, shape_set))
        self.holdouts = tuple(holdout_shapes(loaded.spec, shape_set))

    def _request(self, inst: KernelInstance, seed: int, verify: tuple[Shape, ...], time: tuple[Shape, ...],
                 reference: KernelInstance | None, repeats: int | None = None) -> EvalRequest:
        timing = TimingOptions(warmup=self.warmup, repeats=repeats or self.repeats) if time else None
        return EvalRequest(candidate=inst, spec=self.loaded.spec, base_dir=str(self.loaded.base_dir),
                           verify_shapes=verify, time_shapes=time, seed=seed, reference=reference, timing=timing)

    def baseline(self, seed: int) -> EvalResult:
        """The original kernel: verified against the spec's NumPy reference (or itself), then timed."""
        self.on_step("measuring the original kernel")
        return self.worker.evaluate(self._request(self.original, seed, self.shapes + self.holdouts, self.shapes, None),
                                    self.timeout_s)

    def confirm(self, candidates: list[Candidate], seed: int, final_repeats: int) -> TestReport:
        spec = self.loaded.spec
        fresh = tuple(extra_holdouts(spec, self.shape_set, 2, seed))
        verify = self.shapes + self.holdouts + fresh
        results: list[CandidateResult] = []
        survivors: list[Candidate] = []
        for i, c in enumerate(candidates):
            self.on_step(f"verifying candidate {i + 1}/{len(candidates)} on {len(verify)} shapes ({len(fresh)} fresh)")
            r = self.worker.evaluate(self._request(c.instance, seed + 7919 * (i + 1), verify, (), self.original),
                                     self.timeout_s)
            ok = r.status is Status.OK
            results.append(CandidateResult(round=c.round, key=c.key, config=c.config, verified=ok,
                                           message="" if ok else f"{r.status.value}: {r.message}"))
            if ok:
                survivors.append(c)
        # re-time the original and the survivors shape by shape, interleaved, in one session
        base: dict[str, ShapeTiming] = {}
        per: dict[str, dict[str, ShapeTiming]] = {c.key: {} for c in survivors}
        rng = random.Random(seed)
        for sh in self.shapes:
            order = [None] + survivors
            rng.shuffle(order)
            for c in order:
                inst = self.original if c is None else c.instance
                label = "the original" if c is None else c.key
                self.on_step(f"re-timing {label} at {sh.label} ({final_repeats} runs)")
                r = self.worker.evaluate(self._request(inst, seed, (), (sh,), None, final_repeats), self.timeout_s)
                if r.status is not Status.OK or not r.timings:
                    if c is None:
                        raise RuntimeError(f"the original kernel failed while re-timing: {r.message}")
                    per[c.key]["__failed__"] = None  # type: ignore[assignment]
                    continue
                if c is None:
                    base[sh.key] = r.timings[0]
                else:
                    per[c.key][sh.key] = r.timings[0]
        for res in results:
            if not res.verified:
                continue
            timings = per[res.key]
            if "__failed__" in timings or len(timings) != len(self.shapes):
                results[results.index(res)] = res.model_copy(update={"verified": False,
                                                                     "message": "failed while re-timing"})
                continue
            speedups = {sh.label: base[sh.key].stats.median_ms / timings[sh.key].stats.median_ms for sh in self.shapes}
            flags = self._plausibility(base, timings)
            results[results.index(res)] = res.model_copy(update={
                "timings": [timings[sh.key] for sh in self.shapes], "speedups": speedups,
                "geomean_speedup": geomean(list(speedups.values())), "flags": flags})
        flagged = [r for r in results if r.verified and r.flags]
        for r in flagged:   # too good to be true: verify once more on other fresh shapes and inputs
            c = next(c for c in survivors if c.key == r.key)
            more = tuple(extra_holdouts(spec, self.shape_set, 3, seed + 1))
            self.on_step(f"re-verifying {c.key}: {r.flags[0]}")
            again = self.worker.evaluate(self._request(c.instance, seed + 104729, self.shapes + more, (), self.original),
                                         self.timeout_s)
            if again.status is not Status.OK:
                results[results.index(r)] = r.model_copy(update={
                    "verified": False, "message": f"failed re-verification: {again.message}"})
        good = [r for r in results if r.verified and r.geomean_speedup is not None]
        general = max(good, key=lambda r: r.geomean_speedup) if good else None
        winners = []
        for sh in self.shapes:
            b = base[sh.key]
            best = min(good, key=lambda r: next(t for t in r.timings if t.label == sh.label).stats.median_ms,
                       default=None)
            best_t = next(t for t in best.timings if t.label == sh.label) if best else None
            if best_t is None or best_t.stats.median_ms >= b.stats.median_ms:
                winners.append(ShapeWinner(label=sh.label, shape=sh.as_dict(), baseline_ms=b.stats.median_ms,
                                           winner="original", best_ms=b.stats.median_ms, speedup=1.0,
                                           pct_of_copy=b.pct_of_copy))
            else:
                winners.append(ShapeWinner(label=sh.label, shape=sh.as_dict(), baseline_ms=b.stats.median_ms,
                                           winner=best.key, round=best.round, best_ms=best_t.stats.median_ms,
                                           speedup=b.stats.median_ms / best_t.stats.median_ms,
                                           pct_of_copy=best_t.pct_of_copy))
        return TestReport(seed=seed, baseline=[base[sh.key] for sh in self.shapes], candidates=results,
                          general=general, improved=bool(general and general.geomean_speedup >= IMPROVED),
                          per_shape=winners, fresh_shapes=[s.as_dict() for s in fresh])

    @staticmethod
    def _plausibility(base: dict[str, ShapeTiming], timings: dict[str, ShapeTiming]) -> list[str]:
        flags = []
        for key, t in timings.items():
            b = base[key]
            if t.pct_of_copy is not None and t.pct_of_copy > BEYOND_FLOOR_PCT:
                flags.append(f"{t.label}: {t.pct_of_copy:.0f}% of the copy bandwidth, faster than the bytes it must "
                             "move allow")
            speed = b.stats.median_ms / t.stats.median_ms
            if speed > TOO_GOOD_SPEEDUP and (b.pct_of_copy or 0) >= TOO_GOOD_BASE_PCT:
                flags.append(f"{t.label}: {speed:.1f}x on a kernel already at {b.pct_of_copy:.0f}% of the copy "
                             "bandwidth")
        return flags


__all__ = ["Candidate", "CandidateResult", "ShapeWinner", "TestReport", "Tester", "replace"]
