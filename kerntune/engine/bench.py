"""`kerntune bench`: verify one kernel (or two implementations of one spec) on
every shape and input distribution, check them under the memory checker, then
time them; two kernels are timed interleaved run by run on each shape, and
their speedup is a paired confidence interval (kerntune.speedup)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Callable, Optional

from kerntune import speedup as sp
from kerntune.engine.checker import MemoryChecker, check_shapes
from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.engine.timed import CompareRequest
from kerntune.kernelfile import KernelFile
from kerntune.results import CopyBandwidth, DeviceInfo, EvalResult, Record, ShapeTiming, Status, Verification
from kerntune.source.normalize import same_kernel
from kerntune.spec.model import Shape
from kerntune.spec.shapes import holdout_shapes, spec_shapes


@dataclass(frozen=True)
class BenchOptions:
    warmup: int = 20
    repeats: int = 100
    flush_l2: bool = True
    seed: int | None = None
    timeout_s: float = 300.0
    only: tuple[str, ...] = ()       # shape labels or keys to keep (all when empty)
    shape_set: str | None = None     # a named shape set of the spec (default: its `shapes`)
    memcheck: bool = True            # run each kernel under the memory and race checker on small shapes


class BenchRow(Record):
    label: str
    shape: dict[str, int]
    kernel: Optional[ShapeTiming] = None
    against: Optional[ShapeTiming] = None
    speedup: Optional[float] = None          # kernel time / against time (the interval's estimate)
    interval: Optional[sp.Interval] = None   # from paired, interleaved runs


class BenchReport(Record):
    device: DeviceInfo
    seed: int
    kernel: EvalResult
    against: Optional[EvalResult] = None
    copy_bandwidth: Optional[CopyBandwidth] = None
    rows: list[BenchRow] = []
    geomean_speedup: Optional[float] = None
    geomean: Optional[sp.Interval] = None
    verdict: str = ""                        # faster, slower, same, unsure (kerntune.speedup.decide)
    identical: bool = False                  # --against is the same kernel (source, options, launch)

    @property
    def ok(self) -> bool:
        return self.kernel.status is Status.OK and (self.against is None or self.against.status is Status.OK)


def select_shapes(shapes: list[Shape], only: tuple[str, ...]) -> list[Shape]:
    if not only:
        return shapes
    keep = [s for s in shapes if s.label in only or s.key in only]
    return keep


def _checked(result: EvalResult, checker: MemoryChecker | None, inst: KernelInstance, kf: KernelFile,
             opts: BenchOptions, seed: int, step: Callable[[str], None]) -> EvalResult:
    if checker is None or result.status not in (Status.OK, Status.CRASH):
        return result
    step(checker.step(inst.label))
    report = checker.check(inst, kf.spec, str(kf.loaded.base_dir), check_shapes(kf.spec, opts.shape_set), seed)
    update: dict = {"check": report}
    if result.status is Status.CRASH:      # the checker runs it in a process of its own: where it went wrong
        return result.model_copy(update=update)
    if report.failed:
        update.update(status=Status.MEMORY_ERROR if report.status.value == "memory_error" else Status.WRONG_RESULT,
                      message=f"{report.tool}: {report.message}")
    return result.model_copy(update=update)


def bench(worker: DeviceWorker, a: KernelFile, b: KernelFile | None, opts: BenchOptions,
          step: Callable[[str], None] = lambda msg: None) -> BenchReport:
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    spec = a.spec
    shapes = select_shapes(spec_shapes(spec, opts.shape_set), opts.only)
    verify = tuple(shapes + holdout_shapes(spec, opts.shape_set))
    timing = TimingOptions(warmup=opts.warmup, repeats=opts.repeats, flush_l2=opts.flush_l2)
    checker = MemoryChecker(worker.info, enabled=opts.memcheck, timeout_s=opts.timeout_s)
    base = EvalRequest(candidate=a.instance(), spec=spec, base_dir=str(a.loaded.base_dir), verify_shapes=verify,
                       time_shapes=(), seed=seed, timing=None)

    step(f"verifying {a.path.name} on {len(verify)} shapes")
    ra = _checked(worker.evaluate(base, opts.timeout_s), checker, a.instance(), a, opts, seed, step)
    rb = None
    inst_b: KernelInstance | None = None
    identical = False
    if b is not None:
        inst_b = b.instance(label=b.path.name if b.path.name != a.path.name else str(b.path))
        identical = same_kernel(a.instance(), inst_b, spec, verify)
        step(f"verifying {inst_b.label} against {a.path.name}")
        ref = a.instance() if ra.status is Status.OK else None
        rb = _checked(worker.evaluate(replace(base, candidate=inst_b, reference=ref), opts.timeout_s), checker, inst_b,
                      b, opts, seed, step)

    rows = []
    if b is None or rb is None or rb.status is not Status.OK or identical:
        ra = _time_alone(worker, base, ra, shapes, timing, opts, step)
        for shape in shapes:
            ta = ra.timing_for(shape.as_dict())
            iv = sp.identical() if identical and ta is not None else None
            rows.append(BenchRow(label=shape.label, shape=shape.as_dict(), kernel=ta, against=ta if iv else None,
                                 speedup=1.0 if iv else None, interval=iv))
        geo = sp.identical() if identical and rows else None
        return BenchReport(device=worker.info, seed=seed, kernel=ra, against=rb, copy_bandwidth=ra.copy_bandwidth,
                           rows=rows, geomean_speedup=1.0 if geo else None, geomean=geo,
                           verdict=sp.decide(geo).value if geo else "", identical=identical)
    # both verified: time them on each shape interleaved, run by run, on the same buffers
    sessions = []
    for i, shape in enumerate(shapes):
        step(f"timing {a.path.name} and {inst_b.label} interleaved at {shape.label} ({i + 1}/{len(shapes)})")
        cmp = worker.compare(CompareRequest(kernels=(a.instance(), inst_b), spec=spec, base_dir=str(a.loaded.base_dir),
                                            shape=shape, seed=seed + i, timing=timing), opts.timeout_s * 2)
        bad = next((k for k in cmp.kernels if k.status is not Status.OK), None)
        if bad is not None:
            r_bad = EvalResult(status=bad.status, kernel=bad.label, message=bad.message, device=worker.info)
            if bad.label == cmp.kernels[0].label:
                ra = r_bad
            else:
                rb = r_bad
            break
        sessions.append((shape, cmp))
    pairs = []
    for shape, cmp in sessions:
        ka, kb = cmp.kernels
        iv = sp.paired(ka.samples_ms, kb.samples_ms)
        pairs.append((ka.samples_ms, kb.samples_ms))
        rows.append(BenchRow(label=shape.label, shape=shape.as_dict(), kernel=ka.timing, against=kb.timing,
                             speedup=iv.ratio, interval=iv))
    copy = next((c.copy_bandwidth for _, c in sessions if c.copy_bandwidth), None)
    if ra.status is Status.OK:
        ra = ra.model_copy(update={"timings": [r.kernel for r in rows], "copy_bandwidth": copy})
    if rb.status is Status.OK:
        rb = rb.model_copy(update={"timings": [r.against for r in rows], "copy_bandwidth": copy})
    geo = sp.geomean_interval(pairs) if pairs and len(pairs) == len(shapes) else None
    if geo is not None:
        geo = sp.unbounded_with_few_runs(geo, min(len(base) for base, _ in pairs))
    return BenchReport(device=worker.info, seed=seed, kernel=ra, against=rb, copy_bandwidth=copy, rows=rows,
                       geomean_speedup=geo.ratio if geo else None, geomean=geo,
                       verdict=sp.decide(geo).value if geo else "")


def _time_alone(worker: DeviceWorker, base: EvalRequest, verified: EvalResult, shapes: list[Shape],
                timing: TimingOptions, opts: BenchOptions, step: Callable[[str], None]) -> EvalResult:
    """Time one kernel shape by shape (each shape its own request: a hang costs one shape)."""
    if verified.status is not Status.OK:
        return verified
    timed: list[EvalResult] = []
    for i, shape in enumerate(shapes):
        step(f"timing {base.candidate.label} at {shape.label} ({i + 1}/{len(shapes)})")
        r = worker.evaluate(replace(base, verify_shapes=(), time_shapes=(shape,), timing=timing), opts.timeout_s)
        if r.status is not Status.OK:
            return r.model_copy(update={"verification": verified.verification, "check": verified.check})
        timed.append(r)
    timings = [s for t in timed for s in t.timings]
    copy = next((t.copy_bandwidth for t in timed if t.copy_bandwidth), None)
    return verified.model_copy(update={"timings": timings, "copy_bandwidth": copy,
                                       "seconds": verified.seconds + sum(t.seconds for t in timed)})


__all__ = ["BenchOptions", "BenchReport", "BenchRow", "Verification", "bench"]
