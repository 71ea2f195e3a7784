"""`kerntune bench`: verify one kernel (or two implementations of one spec)
on every shape, then time them shape by shape, interleaved."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Callable, Optional

from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.kernelfile import KernelFile
from kerntune.results import (
    CopyBandwidth, DeviceInfo, EvalResult, Record, ShapeTiming, Status, Verification, geomean,
)
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


class BenchRow(Record):
    label: str
    shape: dict[str, int]
    kernel: Optional[ShapeTiming] = None
    against: Optional[ShapeTiming] = None
    speedup: Optional[float] = None          # kernel time / against time


class BenchReport(Record):
    device: DeviceInfo
    seed: int
    kernel: EvalResult
    against: Optional[EvalResult] = None
    copy_bandwidth: Optional[CopyBandwidth] = None
    rows: list[BenchRow] = []
    geomean_speedup: Optional[float] = None

    @property
    def ok(self) -> bool:
        return self.kernel.status is Status.OK and (self.against is None or self.against.status is Status.OK)


def select_shapes(shapes: list[Shape], only: tuple[str, ...]) -> list[Shape]:
    if not only:
        return shapes
    keep = [s for s in shapes if s.label in only or s.key in only]
    return keep


def _merge(verified: EvalResult, timed: list[EvalResult]) -> EvalResult:
    """One result from a verification request and per-shape timing requests."""
    for t in timed:
        if t.status is not Status.OK:
            return t.model_copy(update={"verification": verified.verification})
    timings = [s for t in timed for s in t.timings]
    copy = next((t.copy_bandwidth for t in timed if t.copy_bandwidth), None)
    return verified.model_copy(update={"timings": timings, "copy_bandwidth": copy,
                                       "seconds": verified.seconds + sum(t.seconds for t in timed)})


def bench(worker: DeviceWorker, a: KernelFile, b: KernelFile | None, opts: BenchOptions,
          step: Callable[[str], None] = lambda msg: None) -> BenchReport:
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    spec = a.spec
    shapes = select_shapes(spec_shapes(spec, opts.shape_set), opts.only)
    verify = tuple(shapes + holdout_shapes(spec, opts.shape_set))
    timing = TimingOptions(warmup=opts.warmup, repeats=opts.repeats, flush_l2=opts.flush_l2)
    base = EvalRequest(candidate=a.instance(), spec=spec, base_dir=str(a.loaded.base_dir), verify_shapes=verify,
                       time_shapes=(), seed=seed, timing=None)

    step(f"verifying {a.path.name} on {len(verify)} shapes")
    ra = worker.evaluate(base, opts.timeout_s)
    rb = None
    inst_b: KernelInstance | None = None
    if b is not None:
        inst_b = b.instance(label=b.path.name if b.path.name != a.path.name else str(b.path))
        step(f"verifying {inst_b.label} against {a.path.name}")
        ref = a.instance() if ra.status is Status.OK else None
        rb = worker.evaluate(replace(base, candidate=inst_b, reference=ref), opts.timeout_s)

    timed_a: list[EvalResult] = []
    timed_b: list[EvalResult] = []
    for i, shape in enumerate(shapes):
        for inst, verified, sink in ((a.instance(), ra, timed_a), (inst_b, rb, timed_b)):
            if inst is None or verified is None or verified.status is not Status.OK:
                continue
            if sink and sink[-1].status is not Status.OK:
                continue
            step(f"timing {inst.label} at {shape.label} ({i + 1}/{len(shapes)})")
            sink.append(worker.evaluate(replace(base, candidate=inst, verify_shapes=(), time_shapes=(shape,),
                                                timing=timing), opts.timeout_s))
    ra = _merge(ra, timed_a) if ra.status is Status.OK else ra
    if rb is not None and rb.status is Status.OK:
        rb = _merge(rb, timed_b)

    rows = []
    for shape in shapes:
        key = shape.as_dict()
        ta = ra.timing_for(key)
        tb = rb.timing_for(key) if rb is not None else None
        speed = ta.stats.median_ms / tb.stats.median_ms if ta and tb and tb.stats.median_ms > 0 else None
        rows.append(BenchRow(label=shape.label, shape=key, kernel=ta, against=tb, speedup=speed))
    speedups = [r.speedup for r in rows if r.speedup is not None]
    copy = ra.copy_bandwidth or (rb.copy_bandwidth if rb is not None else None)
    return BenchReport(device=worker.info, seed=seed, kernel=ra, against=rb, copy_bandwidth=copy, rows=rows,
                       geomean_speedup=geomean(speedups) if speedups else None)


__all__ = ["BenchOptions", "BenchReport", "BenchRow", "Verification", "bench"]
