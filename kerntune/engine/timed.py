"""Timing, with the outputs of timed runs checked.

Before every run (warm-up and timed, outside the timer) in-place arguments
are restored and outputs are overwritten with a finite poison chosen at
random (once per session), so a kernel that skips its work when the output
already looks right leaves the poison and fails. The outputs of the last
timed run and of a few timed runs chosen at random are checked against the
reference; after timing,
fresh inputs are written into the *same* buffers and one more run is checked
(a kernel that caches results by pointer fails). In a comparison, a kernel
faster than the baseline is timed again with its inputs changed before every
run (:meth:`Timer._probe`, whose runs' outputs are checked too): one fast only because the inputs
repeat fails.

:meth:`Timer.compare` times several kernels on one shape interleaved run by
run, on the same buffers, so run ``i`` of each kernel forms a pair measured
under the same conditions: the input of :func:`kerntune.speedup.paired`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection

import numpy as np

from kerntune.backends.base import Backend, CompileFailed, LaunchFailed
from kerntune.dtypes import filled
from kerntune.engine.inputs import HostArgs, bytes_moved
from kerntune.engine.judge import Expected, Poison, judge_single
from kerntune.engine.verify import same_bits
from kerntune.results import (
    ArgCheck, Comparison, CopyBandwidth, ShapeCheck, ShapeTiming, Status, TimedKernel, TimingStats,
)
from kerntune.spec.model import KernelSpec, Shape

if TYPE_CHECKING:
    from kerntune.engine.evaluate import EvalRequest, Evaluator, KernelInstance, TimingOptions

# timed runs before a timing may stop at its precision (TimingOptions.precision)
PRECISION_AFTER = 20
CHANGED_ELEMENTS = 8         # elements of each input array changed for a run after timing (Timer._changed)
# a compare times a kernel that looks faster than the first (the baseline) PROBE_RUNS more times with
# its inputs changed before every run (Timer._probe): one whose fastest such run takes PROBE_FACTOR times
# its timed runs' median, relative to the baseline's own change, was fast because its inputs repeated
PROBE_RUNS = 5
# rounds of warm-up before them (at most the timed runs' own): the first run after the checks' host work
# was slow on PoCL (1.5-1.8x at the median of 30 comparisons; 1.0-1.1x with one round)
PROBE_WARMUP = 1
PROBE_FACTOR = 2.0
PROBE_FASTER = 0.95          # probed: a kernel whose median is below this share of the baseline's


@dataclass(frozen=True)
class CompareRequest:
    """Time ``kernels`` (the first is the baseline) on one shape, interleaved."""

    kernels: tuple["KernelInstance", ...]
    spec: KernelSpec
    base_dir: str
    shape: Shape
    seed: int
    timing: "TimingOptions"
    reference: "KernelInstance | None" = None     # what outputs are checked against (default: numpy or kernels[0])
    use_numpy_reference: bool = True


@dataclass
class _Session:
    """Buffers on the device for one shape, and how to reset them before a run."""

    spec: KernelSpec
    shape: Shape
    host: HostArgs
    bufs: dict[str, Any]
    args: list[Any]
    poison: Poison
    prepare: Callable[[], None] | None
    failures: dict[int, ShapeCheck] = field(default_factory=dict)
    # the last run judged in this session, and its checks: a run that leaves bit-identical
    # buffers (same inputs, poison and expected values) gets the same checks without a comparison
    judged: tuple[Expected, dict[str, np.ndarray], list[ArgCheck]] | None = None


class Timer:
    def __init__(self, evaluator: "Evaluator"):
        self.ev = evaluator
        self._copy: CopyBandwidth | None = None

    # --- the device copy, measured once per worker ------------------------------
    def copy_bandwidth(self, opts: "TimingOptions") -> CopyBandwidth:
        if self._copy is not None:
            return self._copy
        be = self.ev.backend
        info = be.info()
        cache = info.l2_bytes or 32 * 2**20
        if info.kind == "gpu":
            nbytes = min(max(4 * cache, 256 * 2**20), max(info.global_mem_bytes // 8, 2**20))
        else:
            nbytes = min(max(4 * cache, 64 * 2**20), 256 * 2**20)
        src, dst = be.alloc(nbytes), be.alloc(nbytes)
        be.upload(src, np.ones(nbytes // 4, dtype=np.uint32))
        warmup, repeats = min(opts.warmup, 5), max(min(opts.repeats, 30), 3)
        # the faster of the copy command and the backend's copy kernel: what the device can move
        ways = [be.copy] if type(be).bandwidth_copy is Backend.bandwidth_copy else [be.copy, be.bandwidth_copy]
        best: list[float] | None = None
        for way in ways:
            samples, _ = be.measure(lambda: way(dst, src, nbytes), warmup, repeats, flush=opts.flush_l2)
            if best is None or float(np.median(samples)) < float(np.median(best)):
                best = samples
        self._copy = CopyBandwidth(bytes_per_copy=nbytes, stats=TimingStats.from_samples(best, warmup, opts.flush_l2))
        return self._copy

    # --- buffers -----------------------------------------------------------------
    def _session(self, spec: KernelSpec, shape: Shape, host: HostArgs, rng: np.random.Generator) -> _Session:
        from kerntune.engine.evaluate import random_poison

        ev, be = self.ev, self.ev.backend
        poison = random_poison(spec, rng)
        bufs, args = ev.upload(spec, host, poison)
        resets = []                                   # (device buffer, pristine device copy, bytes)
        for a in spec.arrays:
            if a.intent == "in":
                continue
            arr = host.arrays[a.name]
            if not arr.nbytes:
                continue
            keep = be.alloc(arr.nbytes)
            be.upload(keep, arr if a.intent == "inout" else filled(a.dt, arr.shape, poison[a.name]))
            resets.append((bufs[a.name], keep, arr.nbytes))
        prepare = (lambda: [be.copy(dst, src, n) for dst, src, n in resets]) if resets else None
        return _Session(spec, shape, host, bufs, args, poison, prepare)

    def _inspect(self, s: _Session, expected: Expected, j: int, label: str, stage: str) -> None:
        """Check what is in the buffers now (after kernel ``j``'s run); keep the first failure."""
        if j in s.failures:
            return
        got = self.ev.download(s.spec, s.host, s.bufs)
        if s.judged is not None and s.judged[0] is expected and not got.outside \
                and got.keys() == s.judged[1].keys() \
                and all(same_bits(v, s.judged[1][k]) for k, v in got.items()):
            checks = s.judged[2]
        else:
            checks = judge_single(s.spec, s.host.arrays, got, s.poison, expected)
            s.judged = (expected, got, checks)
        if not all(c.ok for c in checks):
            s.failures[j] = ShapeCheck(shape=s.shape.as_dict(), label=label, holdout=s.shape.holdout,
                                       seed=s.host.seed, ok=False, args=checks, stage=stage)

    def _expected(self, req: "EvalRequest", kernel: Any, launch: tuple, shape: Shape, host: HostArgs) -> Expected:
        """The reference's outputs, or (with no reference) the kernel's own untimed run."""
        from kerntune.engine.evaluate import nan_poison

        expected = self.ev.expected(req, shape, host)
        if expected.values is None:
            own = self.ev.run_once(req.spec, kernel, launch, host, nan_poison(req.spec))
            expected = Expected({a.name: own[a.name] for a in req.spec.outputs}, True)
        return expected

    @staticmethod
    def _changed(spec: KernelSpec, host: HostArgs, seed: int) -> HostArgs | None:
        """The timed inputs with CHANGED_ELEMENTS elements of each input array changed to values taken from
        other places of the same array (so every value stays one the inputs hold: an index stays a valid
        index); None when no input can be changed. Arrays the spec's inputs function made are left
        alone (their structure, a CSR row pointer, say, is not the elements' own)."""
        rng = np.random.default_rng(seed)
        arrays, changed = dict(host.arrays), False
        for a in spec.arrays:
            arr = host.arrays[a.name]
            if a.intent == "out" or a.name in host.generated or arr.size < 2:
                continue
            new = np.array(arr, copy=True)
            flat = new.reshape(-1)
            at = rng.choice(flat.size, size=min(CHANGED_ELEMENTS, flat.size), replace=False)
            flat[at] = flat[rng.integers(0, flat.size, at.size)]
            arrays[a.name], changed = new, True
        return HostArgs(arrays=arrays, scalars=host.scalars, seed=host.seed, generated=host.generated) \
            if changed else None

    def _changed_expected(self, req: "EvalRequest", kernel: Any, launch: tuple, shape: Shape, host: HostArgs,
                          seed: int) -> tuple[HostArgs, Expected] | None:
        """:meth:`_changed` of the timed inputs and the outputs expected on them (None: nothing to change)."""
        changed = self._changed(req.spec, host, seed ^ 0xC4A6)
        return (changed, self._expected(req, kernel, launch, shape, changed)) if changed is not None else None

    def _changed_inputs(self, req: "EvalRequest", s: _Session, kernel: Any, launch: tuple, shape: Shape, j: int,
                        changed: tuple[HostArgs, Expected] | None) -> None:
        """The timed inputs with a few elements changed (``changed``: :meth:`_changed` and the expected
        outputs), in the same buffers, one run, checked, right after the timed runs: a kernel that keeps
        results between launches keyed on a sample of its inputs (in memory the state scan cannot see,
        uninitialized __local memory a runtime hands the next launch) returns the old ones, wrong where
        the changed elements count (a second adversarial tour)."""
        from kerntune.engine.evaluate import random_poison

        if j in s.failures or changed is None:
            return
        host, expected = changed
        ev, be = self.ev, self.ev.backend
        poison = random_poison(req.spec, np.random.default_rng(host.seed ^ 0xC4A6))
        ev.upload(req.spec, host, poison, bufs=s.bufs)
        grid, block, shared = launch
        ev.guard(lambda: (be.launch(kernel, grid, block, s.args, shared), be.synchronize()))
        run = _Session(req.spec, shape, host, s.bufs, s.args, poison, None)
        self._inspect(run, expected, j, f"{shape.label} (the timed inputs with {CHANGED_ELEMENTS} elements changed, "
                                        "after timing)", "changed inputs")
        if j in run.failures:
            s.failures[j] = run.failures[j]

    def _fresh_inputs(self, req: "EvalRequest", s: _Session, kernel: Any, launch: tuple, shape: Shape,
                      j: int) -> None:
        """New inputs written into the same buffers, one run, checked: results cached by
        pointer, or stale buffers, fail here."""
        from kerntune.engine.evaluate import random_poison, shape_seed

        if j in s.failures:
            return
        ev, be = self.ev, self.ev.backend
        seed = shape_seed(req.seed ^ 0xF5E5, shape)
        host = ev.host_args(req.spec, Path(req.base_dir), shape, seed)
        expected = self._expected(req, kernel, launch, shape, host)
        poison = random_poison(req.spec, np.random.default_rng(seed))
        ev.upload(req.spec, host, poison, bufs=s.bufs)
        grid, block, shared = launch
        ev.guard(lambda: (be.launch(kernel, grid, block, s.args, shared), be.synchronize()))
        fresh = _Session(req.spec, shape, host, s.bufs, s.args, poison, None)
        self._inspect(fresh, expected, j, f"{shape.label} (fresh inputs in the same buffers after timing)",
                      "fresh inputs")
        if j in fresh.failures:
            s.failures[j] = fresh.failures[j]

    def _probe(self, req: CompareRequest, s: _Session, runs: list[Callable[[], Any]], host: HostArgs,
               seed: int, check: "Callable[[int, int, HostArgs, Poison], None] | None" = None,
               checked: Collection[int] = ()) -> list[list[float]]:
        """Each of ``runs`` timed PROBE_RUNS more times, interleaved, with the timed inputs changed before
        every run (CHANGED_ELEMENTS elements of each input, a new draw each time; where every input is
        made by the spec's ``inputs`` function, which :meth:`_changed` leaves alone, new inputs from it
        with another seed) and a new poison in the outputs: what a run costs when its inputs did not
        just repeat, after a warm-up as the timed runs have (PROBE_WARMUP rounds, on changed inputs too).
        (A tour's spmv, all of whose inputs a spec function makes, kept its results keyed on the output's
        poison and was never probed: 35x.) What each timed run of the kernels ``checked`` (indices into
        ``runs``) wrote is passed to ``check`` (the run's index, the probe run's, its inputs and poison):
        a kernel that kept state between launches computed the two checked runs after timing and wrote
        nothing in the probe's, unchecked until then: called correct and 5.5x faster on PoCL (a tour)."""
        from kerntune.engine.evaluate import random_poison
        from kerntune.engine.inputs import make_host_args

        spec = req.spec
        rng = np.random.default_rng(seed ^ 0x9B0E)
        draws = iter(range(1, 1 << 30))

        current: list[tuple[HostArgs, Poison]] = []

        def prepare() -> None:
            k = next(draws)
            changed = self._changed(spec, host, seed ^ (0x9B0E + k)) or \
                make_host_args(spec, Path(req.base_dir), req.shape, (seed ^ 0x9B0E) + k)
            poison = random_poison(spec, rng)
            self.ev.upload(spec, changed, poison, bufs=s.bufs)
            current[:] = [(changed, poison)]

        def inspect(j: int, i: int) -> None:
            if check is not None and j in checked:
                check(j, i, *current[0])

        samples, _ = self.ev.guard(lambda: self.ev.backend.measure_many(
            runs, min(req.timing.warmup, PROBE_WARMUP), PROBE_RUNS, req.timing.flush_l2, prepare=prepare,
            inspect=range(PROBE_RUNS) if check is not None and checked else (), on_inspect=inspect))
        return samples

    def _repeated_inputs(self, req: CompareRequest, s: _Session, runs: list[Callable[[], Any]], live: list[int],
                         samples: list[list[float]], host: HostArgs, seed: int,
                         expect: Callable[[HostArgs], Expected],
                         retime: Callable[[], list[list[float]]]) -> list[list[float]]:
        """A kernel faster than the baseline only because the timed runs repeat the same inputs (results
        kept between launches keyed on all of them, in memory the state scan cannot see, or on what the
        output held before the run) fails: timed again on inputs changed before every run
        (:meth:`_probe`), its runs take PROBE_FACTOR times what they took, relative to the baseline's
        own change, twice in a row: even the fastest of those runs, so that a burst of load on the host
        (which only adds time) cannot make an honest kernel look so. A tour's sgemm caching tiles in
        __local memory was called 2.9x faster (1.1x on new inputs), a row_sum keyed on its output's
        poison 8x. The second time is measured against a timing done again just before it (``retime``:
        the timed runs' regime once more, the same inputs repeated), whose samples are returned in place
        of ``samples``: an honest histogram on a 2-core host running other jobs was called WRONG when
        both probes fell into a slower share of the cores than its 3 timed runs (fastest probe run 2.5x
        their median, twice) while its baseline, bound by contended atomics, did not slow down; a kernel
        that behaves differently once it has been probed is then measured as it behaves."""
        shape = req.shape
        med = [float(np.median(x)) if x else 0.0 for x in samples]
        if len(live) < 2 or med[0] <= 0:
            return samples
        # every session, though the kernel passed before: one probed once per worker and shape was honest in
        # that session and kept its results keyed on the poison in the next (the final test's later
        # confirmation blocks in the same process), 48x faster there (a tour)
        todo = [n for n in range(1, len(live)) if live[n] not in s.failures and med[n] < PROBE_FASTER * med[0]]
        suspects = {n: 0.0 for n in todo}

        def check(n: int, i: int, changed: HostArgs, poison: Poison) -> None:
            run = _Session(req.spec, shape, changed, s.bufs, s.args, poison, None)
            self._inspect(run, expect(changed), live[n], f"{shape.label} (timed again with its inputs changed, "
                                                         f"probe run {i + 1})", "repeated inputs")
            if live[n] in run.failures:
                s.failures.setdefault(live[n], run.failures[live[n]])

        for attempt in range(2):
            if not suspects:
                return samples
            if attempt:
                samples = retime()
                med = [float(np.median(x)) if x else 0.0 for x in samples]
                for n in [n for n in suspects if live[n] in s.failures]:
                    del suspects[n]
                if med[0] <= 0 or not suspects:
                    return samples
            probe = self._probe(req, s, runs, host, seed ^ (0x51D0 * (attempt + 1)), check, set(suspects))
            for n in [n for n in suspects if live[n] in s.failures]:
                del suspects[n]
            # the fastest probe run: load on the host only ever adds time, so a fast run says the kernel can
            # be fast on new inputs (the median of 5 rejected an honest sgemm on a loaded 2-core host)
            ratio = [float(np.min(p)) / m if m > 0 and p else 1.0 for p, m in zip(probe, med)]
            base = max(1.0, ratio[0])
            for n in list(suspects):
                if ratio[n] > PROBE_FACTOR * base:
                    suspects[n] = ratio[n]
                else:
                    del suspects[n]
        first_out = next(a.name for a in req.spec.outputs)
        for n, ratio in suspects.items():
            s.failures[live[n]] = ShapeCheck(
                shape=shape.as_dict(), holdout=shape.holdout, seed=s.host.seed, ok=False, stage="repeated inputs",
                label=f"{shape.label} (timed again with its inputs changed before every run: its fastest run "
                      f"{ratio:.1f}x its timed runs' median {med[n]:.3g} ms, the baseline's {base:.2f}x)",
                args=[ArgCheck(name=first_out, ok=False, reason="faster only on repeated inputs")])
        return samples

    def _stats(self, spec: KernelSpec, shape: Shape, samples: list[float], opts: "TimingOptions", early: bool,
               copy: CopyBandwidth | None) -> ShapeTiming:
        stats = TimingStats.from_samples(samples, opts.warmup, opts.flush_l2, early)
        moved = bytes_moved(spec, shape.as_dict())
        gbs = moved / (stats.median_ms * 1e-3) / 1e9 if stats.median_ms > 0 else 0.0
        pct = 100.0 * gbs / copy.gbs if copy is not None and copy.gbs > 0 else None
        return ShapeTiming(shape=shape.as_dict(), label=shape.label, stats=stats, bytes_moved=moved,
                           achieved_gbs=gbs, pct_of_copy=pct)

    @staticmethod
    def _inspected(rng: np.random.Generator, repeats: int, extra: int) -> set[int]:
        picks = rng.choice(repeats, size=min(extra, repeats), replace=False) if repeats else []
        return {int(i) for i in picks} | {repeats - 1}

    # --- one kernel on one shape ---------------------------------------------------
    def time_shape(self, req: "EvalRequest", kernel: Any, shape: Shape, copy: CopyBandwidth | None,
                   cache: dict[tuple[str, int], Expected]) -> tuple[ShapeTiming | None, ShapeCheck | None]:
        """(timing, None), or (None, the failed check) when a timed run wrote something wrong."""
        from kerntune.engine.evaluate import resolve_launch, shape_seed

        ev, be, spec, opts = self.ev, self.ev.backend, req.spec, req.timing
        seed = shape_seed(req.seed, shape)
        host = ev.host_args(spec, Path(req.base_dir), shape, seed)
        launch = resolve_launch(spec, req.candidate, shape)
        expected = cache.get((shape.key, seed))
        if expected is None or expected.values is None:
            expected = self._expected(req, kernel, launch, shape, host)
        rng = np.random.default_rng(seed ^ 0x7153)
        s = self._session(spec, shape, host, rng)
        grid, block, shared = launch
        stop = dict(opts.stop_after_ms).get(shape.key)
        race = dict(opts.race_ms).get(shape.key)
        # the random inspections fall within the runs that always happen (a run that stops
        # early has its last run inspected below)
        sure = min(opts.repeats, PRECISION_AFTER) if opts.precision > 0 else opts.repeats
        inspect = self._inspected(rng, sure, opts.inspected_runs) | {opts.repeats - 1}
        samples, stopped = ev.guard(lambda: be.measure(
            lambda: be.launch(kernel, grid, block, s.args, shared), opts.warmup, opts.repeats, opts.flush_l2,
            stop_after_ms=stop, prepare=s.prepare, inspect=inspect,
            on_inspect=lambda j, i: self._inspect(s, expected, 0, f"{shape.label} (timed run {i + 1})", "timed"),
            precision=opts.precision, precision_after=PRECISION_AFTER, race_ms=race))
        if stopped:
            self._inspect(s, expected, 0, f"{shape.label} (timed run {len(samples)})", "timed")
        changed = self._changed_expected(req, kernel, launch, shape, host, seed)
        self._changed_inputs(req, s, kernel, launch, shape, 0, changed)
        self._fresh_inputs(req, s, kernel, launch, shape, 0)
        if 0 in s.failures:
            return None, s.failures[0]
        return self._stats(spec, shape, samples, opts, stopped == "slow", copy), None

    # --- several kernels on one shape, interleaved ---------------------------------
    def compare(self, req: CompareRequest) -> Comparison:
        from kerntune.engine.evaluate import EvalRequest, resolve_launch, shape_seed

        t0 = time.perf_counter()
        ev, be, spec, opts, shape = self.ev, self.ev.backend, req.spec, req.timing, req.shape
        copy = self.copy_bandwidth(opts) if opts.measure_copy else None
        compiled: list[Any] = []
        out: list[TimedKernel | None] = []
        for inst in req.kernels:
            try:
                compiled.append(ev.compiled(inst))
                out.append(None)
            except CompileFailed as e:
                compiled.append(None)
                out.append(TimedKernel(label=inst.label, status=Status.COMPILE_ERROR, message=e.log[:300]))
        live = [j for j, k in enumerate(compiled) if k is not None]
        as_eval = lambda inst: EvalRequest(candidate=inst, spec=spec, base_dir=req.base_dir,  # noqa: E731
                                           verify_shapes=(), time_shapes=(), seed=req.seed, reference=req.reference,
                                           use_numpy_reference=req.use_numpy_reference, timing=opts)
        seed = shape_seed(req.seed, shape)
        host = ev.host_args(spec, Path(req.base_dir), shape, seed)
        launches = [resolve_launch(spec, inst, shape) for inst in req.kernels]
        if live:
            first = live[0]
            expected = self._expected(as_eval(req.kernels[first]), compiled[first], launches[first], shape, host)
            rng = np.random.default_rng(seed ^ 0xC0A1)
            s = self._session(spec, shape, host, rng)
            runs = [(lambda j=j: be.launch(compiled[j], launches[j][0], launches[j][1], s.args, launches[j][2]))
                    for j in live]
            order_rng = np.random.default_rng(seed ^ 0x0DE7)

            def timed(again: str = "") -> list[list[float]]:
                """The timed runs, interleaved in a random order each round, some of them checked; ``again``:
                once more after the probe changed the inputs (they are written back first)."""
                if again:
                    ev.upload(spec, host, s.poison, bufs=s.bufs)
                inspect = self._inspected(rng, opts.repeats, opts.inspected_runs)
                got, _ = ev.guard(lambda: be.measure_many(
                    runs, opts.warmup, opts.repeats, opts.flush_l2, prepare=s.prepare,
                    order=lambda i: order_rng.permutation(len(runs)), inspect=inspect,
                    on_inspect=lambda j, i: self._inspect(s, expected, live[j],
                                                          f"{shape.label} (timed {again}run {i + 1})", "timed")))
                return got

            try:
                samples = timed()
                changed = self._changed_expected(as_eval(req.kernels[first]), compiled[first], launches[first],
                                                 shape, host, seed)
                for j in live:
                    self._changed_inputs(as_eval(req.kernels[j]), s, compiled[j], launches[j], shape, j, changed)
                    self._fresh_inputs(as_eval(req.kernels[j]), s, compiled[j], launches[j], shape, j)
                samples = self._repeated_inputs(
                    req, s, runs, live, samples, host, seed,
                    lambda changed: self._expected(as_eval(req.kernels[first]), compiled[first], launches[first],
                                                   shape, changed),
                    lambda: timed("again, "))
            except LaunchFailed as e:
                status = Status.CRASH if e.fatal else Status.LAUNCH_FAILURE
                for j in live:
                    out[j] = TimedKernel(label=req.kernels[j].label, status=status, message=e.message)
                samples = []
            for n, j in enumerate(live):
                if out[j] is not None:
                    continue
                label = req.kernels[j].label
                if j in s.failures:
                    out[j] = TimedKernel(label=label, status=Status.WRONG_RESULT, check=s.failures[j],
                                         message=_failure_text(s.failures[j]))
                else:
                    out[j] = TimedKernel(label=label, status=Status.OK, samples_ms=samples[n],
                                         timing=self._stats(spec, shape, samples[n], opts, False, copy))
        return Comparison(shape=shape.as_dict(), label=shape.label, kernels=[k for k in out if k is not None],
                          copy_bandwidth=copy, seconds=time.perf_counter() - t0)


def _failure_text(check: ShapeCheck) -> str:
    bad = next((a for a in check.args if not a.ok), None)
    return f"{check.label}: {bad.name}: {bad.reason}" if bad else check.label


__all__ = ["CompareRequest", "Timer"]
