"""The tester role: the baseline measurement of the original kernel, and the
final word on candidates.

1. Every candidate is verified again against the original with fresh inputs
   from every input distribution, on every shape, the held-out shapes and
   fresh shapes none of them saw; then run under the memory and race checker.
   A candidate that is the original (same baked source, launch and options)
   is the original: exactly 1.0x, never timed, never a winner.
2. Screening: the original and the survivors are timed on each shape
   interleaved run by run (paired samples); the general configuration (best
   geometric mean) and each shape's best are picked from these numbers.
3. Confirmation: the picked kernels are timed against the original again in
   blocks (sessions), at least two in each of four new worker processes and
   more until twenty seconds have passed, so the estimate reported is not the one
   the pick was made on (no winner's curse) and holds in more than one process
   and over more time than a passing state of the machine. Each interval is the
   t-interval of the confirmation blocks' mean, with the block-to-block spread
   pooled over every pick and shape and the mean counted as one observation per
   process (blocks in one process share a state of the machine). A speedup is
   claimed only when its confidence interval clears the threshold
   (:mod:`kerntune.speedup`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from kerntune import fmt
from kerntune import speedup as sp
from kerntune.engine.checker import MemoryChecker, check_shapes, off_run_counts, off_run_shapes
from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.hostload import LoadMeter
from kerntune.engine.supervisor import DeviceWorker
from kerntune.engine.timed import CompareRequest
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.hardware import cache_floor
from kerntune.record.outcome import CandidateResult, ShapeWinner, TestReport
from kerntune.results import CheckReport, CheckStatus, EvalResult, ShapeTiming, Status, TimingStats, settled_summary
from kerntune.source.normalize import same_kernel
from kerntune.spec.load import LoadedSpec
from kerntune.spec.model import Shape
from kerntune.spec.shapes import extra_holdouts, holdout_shapes, spec_shapes

CONFIRM_PROCESSES = 4            # fresh worker processes the confirmation is split across
CONFIRM_BLOCKS = 2               # sessions (blocks) per process at least
CONFIRM_BLOCK_SHARE = 4          # a block times final_repeats // this many runs (at least CONFIRM_MIN_RUNS)
CONFIRM_MIN_RUNS = 6
CONFIRM_SPAN_S = 20.0            # the confirmation lasts at least this long: fast kernels get more blocks
CONFIRM_MAX_BLOCKS = 6           # ... at most this many per process
CONFIRM_SPAN_ENV = "KERNTUNE_CONFIRM_SECONDS"   # sets CONFIRM_SPAN_S for a run (confirm_span_s)
TOO_GOOD_SPEEDUP = 10.0         # on a kernel already at a good fraction of the copy bandwidth
TOO_GOOD_BASE_PCT = 30.0
BEYOND_FLOOR_PCT = 110.0        # faster than a device-to-device copy of the same bytes allows


def confirm_span_s() -> float:
    """How long the confirmation lasts at least: CONFIRM_SPAN_S, or $KERNTUNE_CONFIRM_SECONDS (0 gives
    every process its CONFIRM_BLOCKS blocks and no more; the test suite runs so, its own tests of the
    span set it back)."""
    text = os.environ.get(CONFIRM_SPAN_ENV, "").strip()
    if not text:
        return CONFIRM_SPAN_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise KerntuneError(ErrorCode.USAGE, f"{CONFIRM_SPAN_ENV}={text!r} is not a number of seconds from 0 to 3600",
                            hint=f"unset it for the default ({CONFIRM_SPAN_S:g} s), or set e.g. {CONFIRM_SPAN_ENV}=20")
    return value


@dataclass(frozen=True)
class Candidate:
    round: int
    key: str
    config: dict[str, Any]
    instance: KernelInstance
    baked: Optional[KernelInstance] = None     # the instance with its parameters baked in (for the identity check)
    searched: Optional[float] = None           # the search's geomean speedup for it (its own, unpaired measurement)


def _timings_by_shape(sessions: dict[str, Any], j: int) -> Optional[dict[str, ShapeTiming]]:
    out = {}
    for key, cmp in sessions.items():
        k = cmp.kernels[j]
        if k.status is not Status.OK or k.timing is None:
            return None
        out[key] = k.timing
    return out


def _over_blocks(t: ShapeTiming, samples: Optional[list[float]]) -> ShapeTiming:
    """One kernel's timing at one shape over every confirmation block: the statistics of all their runs
    pooled, and the bandwidth figures scaled to the pooled median (the same bytes; the copy bandwidth of
    the last block's process). A single block's medians can disagree with the speedup estimated over
    all of them (1.32x against 1.50x on a CPU); these agree with it up to the pairing."""
    if not samples:
        return t
    stats = TimingStats.from_samples(samples, t.stats.warmup, t.stats.l2_flushed, t.stats.stopped_early)
    f = t.stats.median_ms / stats.median_ms if stats.median_ms > 0 else 1.0
    return t.model_copy(update={"stats": stats, "achieved_gbs": t.achieved_gbs * f,
                                "pct_of_copy": None if t.pct_of_copy is None else t.pct_of_copy * f})


class Tester:
    __test__ = False   # not a pytest test class

    def __init__(self, worker: DeviceWorker, loaded: LoadedSpec, original: KernelInstance, shape_set: str | None,
                 warmup: int, repeats: int, timeout_s: float, on_step: Callable[[str], None] = lambda s: None,
                 checker: MemoryChecker | None = None, distributions: tuple[str, ...] | None = None):
        self.worker = worker
        self.loaded = loaded
        self.original = original
        self.shape_set = shape_set
        self.warmup = warmup
        self.repeats = repeats
        self.timeout_s = timeout_s
        self.on_step = on_step
        self.checker = checker
        self.distributions = distributions
        self.shapes = tuple(spec_shapes(loaded.spec, shape_set))
        self.holdouts = tuple(holdout_shapes(loaded.spec, shape_set))
        self.span_s = confirm_span_s()

    def _request(self, inst: KernelInstance, seed: int, verify: tuple[Shape, ...], time: tuple[Shape, ...],
                 reference: KernelInstance | None, repeats: int | None = None,
                 reach: tuple[Shape, ...] = ()) -> EvalRequest:
        """``reach``: shapes beyond the run's (:func:`reach_shapes`), verified on the spec's inputs only."""
        timing = TimingOptions(warmup=self.warmup, repeats=repeats or self.repeats) if time else None
        return EvalRequest(candidate=inst, spec=self.loaded.spec, base_dir=str(self.loaded.base_dir),
                           verify_shapes=verify, time_shapes=time, seed=seed, reference=reference, timing=timing,
                           distributions=self.distributions).reaching(reach)

    def baseline(self, seed: int) -> EvalResult:
        """The original kernel: verified against the spec's NumPy reference (or itself) on every
        input distribution, then timed. A distribution on which the original itself disagrees
        with the reference (an overflow the reference avoids, say) is left out of the whole
        run, and the verification says so; disagreeing on the spec's own inputs is an error."""
        self.on_step("measuring the original kernel")
        req = self._request(self.original, seed, self.shapes + self.holdouts, self.shapes, None)
        result = self.worker.evaluate(req, self.timeout_s)
        v = result.verification
        if result.status is Status.WRONG_RESULT and v is not None:
            bad = {s.distribution: s for s in v.shapes if not s.ok}
            if "spec" not in bad and len(bad) < len(v.distributions):
                keep = tuple(d for d in v.distributions if d not in bad)
                self.on_step(f"the original disagrees with the reference on {', '.join(bad)} inputs: "
                             "measuring it again without them")
                self.distributions = keep
                result = self.worker.evaluate(replace(req, distributions=keep), self.timeout_s)
                if result.verification is not None:
                    left = {d: _failure_of(s) for d, s in bad.items()}
                    result = result.model_copy(update={"verification": result.verification.model_copy(
                        update={"left_out": left})})
        return result

    def check(self, inst: KernelInstance, seed: int) -> Optional[CheckReport]:
        if self.checker is None:
            return None
        self.on_step(self.checker.step(inst.label))
        return self.checker.check(inst, self.loaded.spec, str(self.loaded.base_dir),
                                  check_shapes(self.loaded.spec, self.shape_set), seed)

    # --- timing sessions ---------------------------------------------------------------
    def _session(self, kernels: list[KernelInstance], seed: int, repeats: int, what: str) -> dict[str, Any]:
        """shape key -> Comparison of ``kernels`` (the original first), interleaved run by run."""
        out = {}
        for i, sh in enumerate(self.shapes):
            many = f"{len(kernels)} kernels at {sh.label}, interleaved ({repeats} runs each, " if len(kernels) > 1 \
                else f"1 kernel at {sh.label} ({repeats} runs, "
            self.on_step(f"{what}: {many}{i + 1}/{len(self.shapes)})")
            req = CompareRequest(kernels=tuple(kernels), spec=self.loaded.spec, base_dir=str(self.loaded.base_dir),
                                 shape=sh, seed=seed + i, timing=TimingOptions(warmup=self.warmup, repeats=repeats),
                                 reference=self.original)
            cmp = self.worker.compare(req, self.timeout_s * max(len(kernels), 1))
            base = cmp.kernels[0]
            if base.status is not Status.OK:
                raise KerntuneError(ErrorCode.WORKER, f"the original kernel failed while being timed at {sh.label}: "
                                                      f"{base.status.value}: {base.message}",
                                    hint="the run keeps what it measured: continue it with --resume once the "
                                         "device is healthy")
            out[sh.key] = cmp
        return out

    def _intervals(self, sessions: dict[str, Any], j: int) -> Optional[tuple[dict[str, sp.Interval], sp.Interval]]:
        per: dict[str, sp.Interval] = {}
        pairs = []
        for sh in self.shapes:
            cmp = sessions[sh.key]
            k = cmp.kernels[j]
            if k.status is not Status.OK:
                return None
            base = cmp.kernels[0].samples_ms
            per[sh.label] = sp.paired(base, k.samples_ms)
            pairs.append((base, k.samples_ms))
        return per, sp.geomean_interval(pairs)

    def _measured(self, res: CandidateResult, sessions: dict[str, Any], j: int, confirmed: bool,
                  process: int = 0) -> CandidateResult:
        """``res`` timed in ``sessions`` (in confirmation worker process ``process``, 0: the screening
        one); confirmed: its screening numbers (in ``res``) and these, the intervals over every
        session so far (:func:`kerntune.speedup.across_sessions`)."""
        timings = _timings_by_shape(sessions, j)
        iv = self._intervals(sessions, j)
        if timings is None or iv is None:
            bad = next(cmp.kernels[j] for cmp in sessions.values() if cmp.kernels[j].status is not Status.OK)
            return res.failed(bad.status, "timing", bad.message)
        per, g = iv
        screening, g_all, per_all = None, [g], {k: [v] for k, v in per.items()}
        processes = [process]
        if confirmed and res.geomean is not None:
            screening = res.screening or res.geomean
            g_all = (res.session_geomeans or [res.geomean]) + [g]
            processes = (res.session_processes or [0]) + [process]
            per_all = {k: (res.session_intervals.get(k) or [res.intervals[k]]) + [v] if k in res.intervals else [v]
                       for k, v in per.items()}
            per = {k: sp.across_sessions(v, estimate_from=1) for k, v in per_all.items()}
            g = sp.across_sessions(g_all, estimate_from=1)
        base = {sh.key: sessions[sh.key].kernels[0].timing for sh in self.shapes}
        return res.model_copy(update={
            "timings": [timings[sh.key] for sh in self.shapes], "intervals": per,
            "speedups": {k: v.ratio for k, v in per.items()}, "geomean": g, "geomean_speedup": g.ratio,
            "verdict": sp.decide(g), "confirmed": confirmed, "screening": screening,
            "session_geomeans": g_all, "session_intervals": per_all, "session_processes": processes,
            # a worker need not say what device it is (only evaluate and compare are asked of one): then the
            # floor of a device of unknown kind
            "flags": self._plausibility(base, timings, cache_floor(getattr(self.worker, "info", None)))})

    # --- the decision ---------------------------------------------------------------------
    def confirm(self, candidates: list[Candidate], seed: int, final_repeats: int) -> TestReport:
        spec = self.loaded.spec
        fresh = tuple(extra_holdouts(spec, self.shape_set, 2, seed))
        verify = self.shapes + self.holdouts + fresh
        reach = off_run_shapes(spec, self.shape_set, seed)
        results: list[CandidateResult] = []
        live: list[tuple[Candidate, int]] = []
        for i, c in enumerate(candidates):
            res = CandidateResult(round=c.round, key=c.key, config=c.config)
            if c.baked is not None and same_kernel(c.baked, self.original, spec, verify):
                results.append(res.model_copy(update={
                    "identical": True, "geomean": sp.identical(), "geomean_speedup": 1.0, "verdict": sp.Verdict.SAME,
                    "intervals": {sh.label: sp.identical() for sh in self.shapes},
                    "speedups": {sh.label: 1.0 for sh in self.shapes},
                    "message": "the original kernel itself (same source, options and launch)"}))
                # said, so that the steps do not jump from candidate 1/3 to 3/3 (an optimize run's progress)
                self.on_step(f"candidate {i + 1}/{len(candidates)} is the original kernel itself (same source, "
                             "options and launch): 1.00x, nothing to verify or time")
                continue
            self.on_step(f"verifying candidate {i + 1}/{len(candidates)} on {len(verify) + len(reach)} shapes "
                         f"({len(fresh)} fresh" + (f", {off_run_counts(reach)}" if reach else "")
                         + ")")
            r = self.worker.evaluate(self._request(c.instance, seed + 7919 * (i + 1), verify, (), self.original,
                                                   reach=reach), self.timeout_s * (2 if reach else 1))
            if r.status is not Status.OK:
                results.append(res.failed(r.status, "verify", r.message))
                continue
            report = self.check(c.instance, seed)
            if report is not None and report.failed:
                status = Status.MEMORY_ERROR if report.status is CheckStatus.MEMORY_ERROR else Status.WRONG_RESULT
                results.append(res.failed(status, "memcheck", f"{report.tool}: {report.message}", check=report))
                continue
            settled = r.verification.settled() if r.verification is not None else []
            note = settled_summary(settled) if settled else ""
            results.append(res.model_copy(update={"check": report, "message": note}))
            live.append((c, len(results) - 1))
        # screening: the original and every survivor, interleaved; the picks are made on these numbers
        general_i: Optional[int] = None
        shape_best: dict[str, int] = {}
        meter = LoadMeter().start()
        if live:
            kernels = [self.original] + [c.instance for c, _ in live]
            screen = self._session(kernels, seed + 31, final_repeats, "screening")
            for j, (c, at) in enumerate(live, start=1):
                results[at] = self._measured(results[at], screen, j, confirmed=False)
            results = self._recheck_flagged(results, live, seed)
            timed = [(c, at) for c, at in live if results[at].verified and results[at].geomean is not None]
            if timed:
                general_i = max(timed, key=lambda x: results[x[1]].geomean.ratio)[1]
                for sh in self.shapes:
                    shape_best[sh.key] = max(timed, key=lambda x: results[x[1]].intervals[sh.label].ratio)[1]
        # confirmation: the picks against the original again, in blocks spread over CONFIRM_PROCESSES
        # new worker processes (_blocks): on a CPU the same two kernels can compare 1.07x in one
        # process and 0.94x in the next (bench/proof/flat/README.md), so the interval counts one
        # observation per process (_pooled)
        picked = list(dict.fromkeys(([general_i] if general_i is not None else []) + list(shape_best.values())))
        base_timings: dict[str, ShapeTiming] = {}
        spread: Optional[sp.Spread] = None
        if picked:
            kernels = [self.original] + [next(c.instance for c, at in live if at == p) for p in picked]
            again: dict[str, Any] = {}
            runs: dict[tuple[int, str], list[float]] = {}   # (kernel in the block, shape key) -> every block's runs
            for process, again in self._blocks(kernels, seed, final_repeats):
                for key, cmp in again.items():
                    for j, k in enumerate(cmp.kernels):
                        runs.setdefault((j, key), []).extend(k.samples_ms or [])
                for j, p in enumerate(picked, start=1):
                    results[p] = self._measured(results[p], again, j, confirmed=True, process=process)
            base_timings = {k: _over_blocks(cmp.kernels[0].timing, runs.get((0, k))) for k, cmp in again.items()}
            for j, p in enumerate(picked, start=1):
                r = results[p]
                if r.verified and r.confirmed and len(r.timings) == len(self.shapes):
                    results[p] = r.model_copy(update={"timings": [
                        _over_blocks(t, runs.get((j, sh.key))) for t, sh in zip(r.timings, self.shapes)]})
            results, spread = self._pooled(results, picked)
        else:
            base_timings = self._time_original(seed, final_repeats)
        general = results[general_i] if general_i is not None and results[general_i].verified else None
        winners = [self._winner(sh, base_timings[sh.key], results, shape_best.get(sh.key)) for sh in self.shapes]
        checker = (self.checker.tool or self.checker.why_not) if self.checker is not None else "off"
        load = meter.stop()
        return TestReport(seed=seed, baseline=[base_timings[sh.key] for sh in self.shapes], candidates=results,
                          general=general, improved=bool(general and general.verdict is sp.Verdict.FASTER),
                          per_shape=winners, fresh_shapes=[s.as_dict() for s in fresh],
                          reach_shapes=[s.as_dict() for s in reach], checker=checker,
                          host_load=load, process_spread=spread,
                          notes=([load.note()] if load is not None and load.busy else []) +
                          _general_ahead(general, winners) + _medians_apart(winners) +
                          _search_apart(candidates, results))

    def _blocks(self, kernels: list[KernelInstance], seed: int, final_repeats: int):
        """The confirmation sessions (blocks), each timing every kernel on every shape: at least
        CONFIRM_BLOCKS in each of CONFIRM_PROCESSES new worker processes, and more (up to
        CONFIRM_MAX_BLOCKS) until CONFIRM_SPAN_S seconds (or $KERNTUNE_CONFIRM_SECONDS) have passed. On a CPU the same two kernels
        can compare 1.05x for a few seconds and 0.92x the next few, within one process
        (bench/proof/flat/README.md): blocks spread over a longer time than such a state lasts
        give the pooled spread a chance to see it. Each block times a quarter of the final repeats:
        blocks as long as two processes of two blocks had, in twice as many processes, so the
        process count that narrows the interval grows without the blocks getting noisier
        (docs/proof.md, "Four confirmation processes"). Yields (the process number from 1, the session);
        a worker that cannot start fresh processes runs every block in process 1."""
        repeats = max(CONFIRM_MIN_RUNS, final_repeats // CONFIRM_BLOCK_SHARE)
        started = time.monotonic()
        n = 0
        fresh = hasattr(self.worker, "fresh")
        for k in range(CONFIRM_PROCESSES):
            if fresh:
                self.worker.fresh()
            due = self.span_s * (k + 1) / CONFIRM_PROCESSES
            b = 0
            while b < CONFIRM_BLOCKS or (b < CONFIRM_MAX_BLOCKS and time.monotonic() - started < due):
                b += 1
                n += 1
                process = k + 1 if fresh else 1
                yield process, self._session(kernels, seed + 61 + 101 * n, repeats,
                                             f"confirming in a new process ({k + 1}/{CONFIRM_PROCESSES}), block {b}")

    @staticmethod
    def _pooled(results: list[CandidateResult], picked: list[int]) -> tuple[list[CandidateResult],
                                                                               Optional[sp.Spread]]:
        """Every pick's intervals again, with the process-to-process spread pooled over all of
        them (each pick's each shape: its confirmation sessions, the screening one left out as
        biased by the pick). Two sessions of one speedup that happen to agree say little about how
        much a speedup moves between processes on this device; every pick's sessions together say
        more. The geomean uses the per-shape spread too, the cautious choice: shapes that move
        together move their geomean as much, shapes that move apart move it less. Each worker
        process the confirmation ran in (``session_processes``) is one observation of the mean."""
        done = [p for p in picked if results[p].verified and results[p].confirmed]
        spread = sp.process_spread([v[1:] for p in done for v in results[p].session_intervals.values()])
        if spread is None:
            return results, None
        out = list(results)
        for p in done:
            r = out[p]
            processes = len(set(r.session_processes[1:]))
            per = {k: sp.across_sessions(v, spread, estimate_from=1, processes=processes)
                   for k, v in r.session_intervals.items()}
            g = sp.across_sessions(r.session_geomeans, spread, estimate_from=1, processes=processes)
            out[p] = r.model_copy(update={"intervals": per, "speedups": {k: v.ratio for k, v in per.items()},
                                          "geomean": g, "geomean_speedup": g.ratio, "verdict": sp.decide(g)})
        return out, spread

    def _time_original(self, seed: int, repeats: int) -> dict[str, ShapeTiming]:
        sessions = self._session([self.original], seed + 61, repeats, "timing the original")
        return {k: cmp.kernels[0].timing for k, cmp in sessions.items()}

    def _winner(self, sh: Shape, base: ShapeTiming, results: list[CandidateResult], best: Optional[int]) -> ShapeWinner:
        b = base.stats.median_ms
        r = results[best] if best is not None else None
        iv = r.intervals.get(sh.label) if r is not None and r.verified and r.confirmed else None
        if r is None or iv is None or sp.decide(iv) is not sp.Verdict.FASTER:
            return ShapeWinner(label=sh.label, shape=sh.as_dict(), baseline_ms=b, winner="original", best_ms=b,
                               speedup=1.0, interval=sp.identical(), pct_of_copy=base.pct_of_copy)
        t = next(t for t in r.timings if t.label == sh.label)
        return ShapeWinner(label=sh.label, shape=sh.as_dict(), baseline_ms=b, winner=r.key, round=r.round,
                           best_ms=t.stats.median_ms, speedup=iv.ratio, interval=iv, pct_of_copy=t.pct_of_copy)

    def _recheck_flagged(self, results: list[CandidateResult], live: list[tuple[Candidate, int]],
                         seed: int) -> list[CandidateResult]:
        """Too good to be true: verify once more on other fresh shapes and inputs."""
        for c, at in live:
            r = results[at]
            if not (r.verified and r.flags):
                continue
            more = tuple(extra_holdouts(self.loaded.spec, self.shape_set, 3, seed + 1))
            self.on_step(f"re-verifying {c.key}: {r.flags[0]}")
            again = self.worker.evaluate(self._request(c.instance, seed + 104729, self.shapes + more, (), self.original),
                                         self.timeout_s)
            if again.status is not Status.OK:
                results[at] = r.failed(again.status, "re-verify", again.message)
        return results

    @staticmethod
    def _plausibility(base: dict[str, ShapeTiming], timings: dict[str, ShapeTiming], floor: int) -> list[str]:
        """Too good to be true. Faster than the copy counts only on a shape that moves at least ``floor``
        bytes (:func:`kerntune.hardware.cache_floor`): the copy is measured on a buffer larger than the
        caches, which a small shape's bytes fit in (an honest float4 copy ran at 205% of it at 256 KiB)."""
        flags = []
        for key, t in timings.items():
            b = base[key]
            if t.pct_of_copy is not None and t.pct_of_copy > BEYOND_FLOOR_PCT and t.bytes_moved >= floor:
                flags.append(f"{t.label}: {t.pct_of_copy:.0f}% of the copy bandwidth, faster than the bytes it must "
                             "move allow")
            speed = b.stats.median_ms / t.stats.median_ms
            if speed > TOO_GOOD_SPEEDUP and (b.pct_of_copy or 0) >= TOO_GOOD_BASE_PCT:
                flags.append(f"{t.label}: {speed:.1f}x on a kernel already at {b.pct_of_copy:.0f}% of the copy "
                             "bandwidth")
        return flags


def _failure_of(check) -> str:
    bad = next((a for a in check.args if not a.ok), None)
    return f"{check.label}: {bad.name}: {bad.reason}" if bad else check.label


MEDIANS_APART = 1.1   # a shape's two medians' ratio this far (either way) from its paired speedup gets a note


def _medians_apart(winners: list[ShapeWinner]) -> list[str]:
    """A note for the shapes whose two medians (the original's and the winner's, each over every
    confirmation session's runs) give a ratio well away from the paired speedup shown beside them. The
    speedup compares each of the winner's runs with the original's runs of the same session; the medians
    pool sessions, so a host whose speed moved between sessions moves them apart (a user read 3.09 ms ->
    2.71 ms beside 1.66x and could not tell which to believe)."""
    apart = [w for w in winners if w.winner != "original" and w.interval is not None and w.best_ms > 0
             and max(r := w.baseline_ms / w.best_ms / w.interval.ratio, 1 / r) > MEDIANS_APART]
    if not apart:
        return []
    shown = "; ".join(f"{w.label}: {fmt.ms(w.baseline_ms)} -> {fmt.ms(w.best_ms)}, "
                      f"{w.baseline_ms / w.best_ms:.2f}x, beside {w.interval.text()}" for w in apart)
    return [f"on {len(apart)} shape{'s' if len(apart) > 1 else ''} the ratio of the two medians is far from the "
            f"speedup shown ({shown}). Believe the speedup: it compares each of the winner's runs with the "
            "original's run timed next to it, so the host's speed moving between timing sessions cancels out; each "
            "median pools the runs of every session, so that movement stays in them"]


SEARCH_APART = 1.25   # the search's speedup this far above the top of the final test's interval gets a note


def _search_apart(candidates: list[Candidate], results: list[CandidateResult]) -> list[str]:
    """A note for the candidates the search measured well above what the final test, timing them beside the
    original, found (above its interval's upper bound by over SEARCH_APART): a run's report shows the search's
    numbers too ("best (tuning)"), and a scatter-add's rounds read 1.61x and 1.81x where the final test found
    1.01x [1.00, 1.01]. The search times each configuration once, in its own evaluation, against the original
    timed at the run's start; the final test pairs every run with one of the original's."""
    far = [(c, r) for c, r in zip(candidates, results)
           if c.searched and r.verified and r.geomean is not None and r.geomean.hi > 0
           and c.searched / r.geomean.hi > SEARCH_APART]
    if not far:
        return []
    far.sort(key=lambda x: -x[0].searched)
    shown = "; ".join(f"{(f'round {c.round}: ' if c.round else '')}{c.key}: {c.searched:.2f}x in the search, "
                      f"{r.geomean.text()} in the final test" for c, r in far)
    return [f"the search measured {len(far)} candidate{'s' if len(far) > 1 else ''} well above what the final test "
            f"found ({shown}). Only the final test's speedups are claimed: it times each candidate beside the "
            "original, run for run, in several sessions and processes; the search timed each once, in its own "
            "evaluation, against the original timed at the run's start, and ranks candidates with that. A kernel "
            "whose speed depends on what else the host runs (atomics contending, a busy core) moves most between "
            "the two"]


def _general_ahead(general: Optional[CandidateResult], winners: list[ShapeWinner]) -> list[str]:
    """A note for the shapes where the general configuration's confirmed speedup is above the shape's own
    pick's: the picks are made on the screening numbers and reported with confirmation's (so the numbers shown
    are not the ones the pick favoured), and the two then disagree only within the noise."""
    if general is None or not general.confirmed:
        return []
    ahead, kept = [], []
    for w in winners:
        g = general.intervals.get(w.label)
        if g is None or (w.round, w.winner) == (general.round, general.key):
            continue
        if w.winner == "original":
            if g.ratio > 1:
                kept.append((w, g))
            continue
        if w.interval is None or g.ratio <= w.interval.ratio or g.text() == w.interval.text():
            continue     # not ahead, or not by a digit shown (a note comparing two equal figures said nothing)
        ahead.append((w, g))
    notes = []
    if kept:
        shown = "; ".join(f"{w.label}: general {g.text()}" for w, g in kept)
        notes.append(f"the per-shape kernel of {len(kept)} shape{'s' if len(kept) > 1 else ''} is the original "
                     f"although the general configuration measured faster there ({shown}): a shape takes a "
                     "candidate only when its interval clears the threshold, so there the general kernel is not "
                     "shown to be faster, nor slower")
    if not ahead:
        return notes
    overlap = all(g.lo <= w.interval.hi and w.interval.lo <= g.hi for w, g in ahead)
    shown = "; ".join(f"{w.label}: general {g.text()}, the shape's pick {w.interval.text()}" for w, g in ahead)
    return notes + [f"the general configuration measured faster in confirmation than the shape's own pick on "
            f"{len(ahead)} shape{'s' if len(ahead) > 1 else ''} ({shown}). Each shape's pick is made on the "
            "screening session and reported with the confirmation sessions' numbers, so that no number shown "
            "is the one a pick favoured; "
            + ("the intervals overlap: neither kernel is shown to be faster there." if overlap else
               "the intervals do not overlap: screening ranked them wrongly there.")]


__all__ = ["Candidate", "CandidateResult", "ShapeWinner", "TestReport", "Tester"]
