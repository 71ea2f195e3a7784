"""The regression gate: verify every kernel, time it in independent batches,
compare with the stored baseline (see :mod:`kerntune.regress.stats` for the
rule), and optionally record a new baseline."""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from kerntune import __version__
from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.kernelfile import KernelFile
from kerntune.regress import baseline as bl
from kerntune import speedup as sp
from kerntune.engine.checker import MemoryChecker, check_shapes
from kerntune.regress.stats import MIN_BATCHES, Verdict, center, decide
from kerntune.results import EvalResult, Record, ShapeTiming, Status, Verification
from kerntune.spec.model import LaunchSpec, Shape
from kerntune.spec.shapes import holdout_shapes, spec_shapes

DEFAULT_TIMING = bl.TimingSettings(warmup=20, repeats=100, batches=5)


@dataclass(frozen=True)
class GateOptions:
    tolerance: float = 0.05
    alpha: float = 0.05
    warmup: Optional[int] = None      # None: the baseline record's setting, else DEFAULT_TIMING's
    repeats: Optional[int] = None
    batches: Optional[int] = None
    flush_l2: bool = True
    seed: Optional[int] = None        # None: fresh, and reported
    timeout_s: float = 300.0
    shape_set: Optional[str] = None
    update: bool = False
    allow_device_change: bool = False
    memcheck: bool = True             # verified kernels also run under the memory and race checker


class ShapeResult(Record):
    label: str
    shape: dict[str, int]
    baseline: Optional[bl.ShapeRecord] = None
    current: Optional[bl.ShapeRecord] = None
    ratio: Optional[float] = None            # current median / baseline median
    interval: Optional[sp.Interval] = None   # speedup of current over baseline (below 1: slower), confidence 1-2*alpha
    p_value: Optional[float] = None
    verdict: str = "new"                     # same, slower, faster, unsure, new


class KernelResult(Record):
    key: str                                 # the baseline record key
    path: str
    kernel: str
    lang: str
    device: str
    status: str                              # pass, slower, wrong, failed, unmatched, new, updated, skipped
    message: str = ""
    reference: str = ""                      # what it was verified against: numpy, kernel (the baseline's source), self
    verification: Optional[Verification] = None
    seed: Optional[int] = None
    source_changed: Optional[bool] = None    # against the baseline record
    settings: Optional[bl.TimingSettings] = None
    shapes: list[ShapeResult] = []
    geomean_ratio: Optional[float] = None
    geomean_interval: Optional[sp.Interval] = None   # speedup of current over baseline, geomean over shapes
    notes: list[str] = []

    @property
    def failed(self) -> bool:
        return self.status in ("slower", "wrong", "failed", "unmatched")


class RegressReport(Record):
    baseline: str
    tolerance: float
    alpha: float
    kerntune_version: str = __version__
    kernels: list[KernelResult] = []
    passed: bool = True
    updated: bool = False
    error: Optional[dict[str, Optional[str]]] = None


@dataclass
class _Job:
    kf: KernelFile
    key: str
    worker: DeviceWorker
    record: Optional[bl.KernelRecord]
    settings: bl.TimingSettings
    shapes: list[Shape]
    result: Optional[EvalResult] = None            # verification
    batches: Optional[dict[str, list[ShapeTiming]]] = None
    failure: Optional[EvalResult] = None


def _settings(opts: GateOptions, record: Optional[bl.KernelRecord]) -> bl.TimingSettings:
    base = record.settings if record is not None else DEFAULT_TIMING
    s = bl.TimingSettings(warmup=opts.warmup if opts.warmup is not None else base.warmup,
                          repeats=opts.repeats if opts.repeats is not None else base.repeats,
                          batches=opts.batches if opts.batches is not None else base.batches,
                          flush_l2=opts.flush_l2)
    check_batches(s.batches)
    return s


def check_batches(n: int) -> None:
    """Refuse fewer timing batches than the rank test needs (--batches, or a baseline record's)."""
    if n < MIN_BATCHES:
        raise KerntuneError(ErrorCode.USAGE, f"{n} timing batches cannot tell a slowdown from noise",
                            hint=f"use --batches {MIN_BATCHES} or more (default {DEFAULT_TIMING.batches})")


def check_settings(kernels: list[KernelFile], baseline_path: Path, stored: bl.BaselineFile, opts: GateOptions) -> None:
    """Each kernel's timing settings (the options', else its baseline record's), checked before a worker
    starts: ``run_gate`` would refuse them only after the device worker was up."""
    for kf in kernels:
        _settings(opts, stored.kernels.get(bl.key_for(kf.path, baseline_path)))


def device_mismatches(jobs: list[_Job]) -> list[str]:
    out = []
    for j in jobs:
        r, info = j.record, j.worker.info
        if r is not None and (r.device != info.name or r.backend != info.backend):
            out.append(f"{j.key}: recorded on {r.device} ({r.backend}), this is {info.name} ({info.backend})")
    return out


def _reference(job: _Job) -> Optional[KernelInstance]:
    """The baseline's own source as the reference, when the spec has no NumPy function to check against;
    also after the spec changed (a comment, a shape), since a self-check would pass any kernel, however
    wrong: where the baseline's source no longer runs under the spec, the kernel fails (``run_gate``)."""
    r, kf = job.record, job.kf
    if kf.spec.reference is not None or r is None:
        return None
    if r.source_sha256 == _sha(kf.source):
        return None                                  # unchanged: a self-check is the same thing
    launch = LaunchSpec.model_validate(r.launch) if r.launch else None
    return KernelInstance(source=r.source, name=r.kernel, lang=r.lang, options=tuple(r.options), launch=launch,
                          label=f"baseline of {job.key}")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _shape_record(shape: Shape, timings: list[ShapeTiming]) -> bl.ShapeRecord:
    meds = [t.stats.median_ms for t in timings]
    return bl.ShapeRecord(label=shape.label, shape=shape.as_dict(), median_ms=center(meds),
                          iqr_ms=center([t.stats.iqr_ms for t in timings]),
                          min_ms=min(t.stats.min_ms for t in timings), n=sum(t.stats.n for t in timings),
                          batch_medians=meds)


def change(ratio: float) -> str:
    """A slowdown as a person reads it: +12.3% for small ones, 4.2x for large ones."""
    return f"{ratio:.1f}x" if ratio >= 3 else f"{(ratio - 1) * 100:+.1f}%"


def describe(r: EvalResult) -> str:
    """One line on why an evaluation failed, with the first bad element when verification failed."""
    msg = f"{r.status.value.replace('_', ' ')}: {r.message}"
    v = r.verification
    if r.status is Status.WRONG_RESULT and v is not None:
        # the worker's message is usually this already (shape, inputs, counts, errors, first bad element)
        failure = v.first_failure()
        if failure and failure not in msg:
            msg += f" ({failure})"
    return msg


def _failure_status(r: EvalResult) -> str:
    return "wrong" if r.status in (Status.WRONG_RESULT, Status.MEMORY_ERROR) else "failed"


def run_gate(kernels: list[tuple[KernelFile, DeviceWorker]], baseline_path: Path, stored: bl.BaselineFile,
             opts: GateOptions, step: Callable[[str], None] = lambda s: None) -> tuple[RegressReport, bl.BaselineFile]:
    """Check every kernel; returns the report and the baseline to write (unchanged unless ``opts.update``)."""
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    jobs = []
    for kf, worker in kernels:
        key = bl.key_for(kf.path, baseline_path)
        record = stored.kernels.get(key)
        jobs.append(_Job(kf=kf, key=key, worker=worker, record=record, settings=_settings(opts, record),
                         shapes=spec_shapes(kf.spec, opts.shape_set)))
    mismatches = device_mismatches(jobs)
    if mismatches and not opts.allow_device_change:
        raise KerntuneError(ErrorCode.DEVICE, "the baseline was recorded on another device:\n  " + "\n  ".join(mismatches),
                            hint="timings from different devices cannot be compared: keep one baseline file per "
                                 "device (--baseline bench/baseline-DEVICE.json), or pass --allow-device-change "
                                 "(with --update: replace those records with this device's)")
    # 1. verify every kernel on every shape plus the held-out ones, with fresh inputs
    for i, j in enumerate(jobs):
        step(f"verifying {j.key} ({i + 1}/{len(jobs)})")
        verify = tuple(j.shapes + holdout_shapes(j.kf.spec, opts.shape_set))
        req = EvalRequest(candidate=j.kf.instance(label=j.key), spec=j.kf.spec, base_dir=str(j.kf.loaded.base_dir),
                          verify_shapes=verify, time_shapes=(), seed=seed, reference=_reference(j), timing=None)
        try:
            j.result = j.worker.evaluate(req, opts.timeout_s)
        except KerntuneError as e:
            if req.reference is None or e.code not in (ErrorCode.COMPILE, ErrorCode.VERIFY):
                raise
            j.result = EvalResult(status=Status.ERROR, kernel=j.key, device=j.worker.info, message=(
                f"the baseline's source cannot be the reference under the spec as it is now ({e.message}); "
                "the spec changed since the baseline was recorded: record it again with --update"))
        if opts.memcheck and j.result.status is Status.OK:
            step(f"checking {j.key} for memory errors ({i + 1}/{len(jobs)})")
            checker = MemoryChecker(j.worker.info, timeout_s=opts.timeout_s)
            report = checker.check(req.candidate, j.kf.spec, str(j.kf.loaded.base_dir),
                                   check_shapes(j.kf.spec, opts.shape_set), seed)
            update: dict = {"check": report}
            if report.failed:
                update.update(status=Status.MEMORY_ERROR, message=f"{report.tool}: {report.message}")
            j.result = j.result.model_copy(update=update)
    # 2. time the verified ones: batch after batch, each batch over every kernel and shape in a shuffled order
    live = [j for j in jobs if j.result is not None and j.result.status is Status.OK]
    for j in live:
        j.batches = {s.key: [] for s in j.shapes}
    rounds = max((j.settings.batches for j in live), default=0)
    rng = random.Random(seed)
    for b in range(rounds):
        order = [(j, s) for j in live for s in j.shapes if b < j.settings.batches]
        rng.shuffle(order)
        for n, (j, s) in enumerate(order):
            if j.failure is not None:
                continue
            step(f"timing batch {b + 1}/{rounds}: {j.key} at {s.label} ({n + 1}/{len(order)})")
            t = j.settings
            req = EvalRequest(candidate=j.kf.instance(label=j.key), spec=j.kf.spec, base_dir=str(j.kf.loaded.base_dir),
                              verify_shapes=(), time_shapes=(s,), seed=seed,
                              timing=TimingOptions(warmup=t.warmup, repeats=t.repeats, flush_l2=t.flush_l2,
                                                   measure_copy=False))
            r = j.worker.evaluate(req, opts.timeout_s)
            if r.status is not Status.OK or not r.timings:
                j.failure = r
                continue
            j.batches[s.key].append(r.timings[0])
    # 3. compare, and build the new records
    results: list[KernelResult] = []
    kept = dict(stored.kernels)
    now = time.time()
    for j in jobs:
        res, record = _judge(j, opts, seed, now)
        results.append(res)
        if opts.update and record is not None:
            kept[j.key] = record
    failed = [r for r in results if r.failed]
    updated = opts.update and any(r.status == "updated" for r in results)
    report = RegressReport(baseline=str(baseline_path), tolerance=opts.tolerance, alpha=opts.alpha, kernels=results,
                           passed=not failed, updated=updated)
    new = bl.BaselineFile(updated=now if updated else stored.updated, kernels=dict(sorted(kept.items())))
    return report, new


def _judge(j: _Job, opts: GateOptions, seed: int, now: float) -> tuple[KernelResult, Optional[bl.KernelRecord]]:
    info = j.worker.info
    common = dict(key=j.key, path=str(j.kf.path), kernel=j.kf.kernel_name, lang=j.kf.lang, device=info.name,
                  seed=seed, settings=j.settings,
                  source_changed=None if j.record is None else j.record.source_sha256 != _sha(j.kf.source))
    notes = []
    if j.record is not None:
        if j.record.device != info.name or j.record.backend != info.backend:
            notes.append(f"baseline recorded on {j.record.device} ({j.record.backend}): compared anyway "
                         "(--allow-device-change)")
        if j.record.kerntune_version != __version__:
            notes.append(f"baseline recorded with kerntune {j.record.kerntune_version}, this is {__version__}")
        if j.record.driver and j.record.driver != info.driver:
            notes.append(f"driver changed: {j.record.driver} -> {info.driver}")
        if j.record.spec_digest != j.kf.loaded.digest:
            notes.append("the spec changed since the baseline was recorded")
        if j.record.settings != j.settings:
            notes.append("timing settings differ from the baseline's")
        if j.record.shape_set != opts.shape_set:
            notes.append(f"baseline recorded on shape set {j.record.shape_set or 'default'}, "
                         f"this is {opts.shape_set or 'default'}")
    r = j.result
    assert r is not None
    v = r.verification
    ref = v.reference if v is not None else ""
    if r.status is not Status.OK:
        msg = describe(r)
        return KernelResult(**common, status=_failure_status(r), message=msg, reference=ref, verification=v,
                            notes=notes), None
    if j.failure is not None:
        f = j.failure
        return KernelResult(**common, status=_failure_status(f), reference=ref, verification=v, notes=notes,
                            message=f"while timing: {describe(f)}"), None
    rows: list[ShapeResult] = []
    current: list[bl.ShapeRecord] = []
    for s in j.shapes:
        cur = _shape_record(s, j.batches[s.key])
        current.append(cur)
        old = j.record.shape(s.as_dict()) if j.record is not None else None
        if old is None:
            rows.append(ShapeResult(label=s.label, shape=s.as_dict(), current=cur, verdict="new"))
            continue
        verdict, ratio, p = decide(cur.batch_medians, old.batch_medians, opts.tolerance, opts.alpha)
        iv = sp.unpaired(old.batch_medians, cur.batch_medians, confidence=1.0 - 2.0 * opts.alpha)
        rows.append(ShapeResult(label=s.label, shape=s.as_dict(), baseline=old, current=cur, ratio=ratio,
                                interval=iv, p_value=p, verdict=verdict.value))
    ratios = [x.ratio for x in rows if x.ratio is not None]
    both = [(x.baseline.batch_medians, x.current.batch_medians) for x in rows if x.baseline is not None]
    geo = sp.geomean_interval(both, is_paired=False, confidence=1.0 - 2.0 * opts.alpha) if both else None
    slower = [x for x in rows if x.verdict == Verdict.SLOWER.value]
    compared = any(x.baseline is not None for x in rows)
    if opts.update:
        status = "updated"
    elif not compared:
        # a kernel with a record but no shape in common would pass unjudged, however slow: it fails instead
        status = "new" if j.record is None else "unmatched"
    else:
        status = "slower" if slower else "pass"
    msg = ""
    if slower:
        msg = "slower on " + ", ".join(f"{x.label} ({change(x.ratio)}, p={x.p_value:.3f})" for x in slower)
    elif status == "unmatched":
        had = ", ".join(f"{s.label} ({' '.join(f'{k}={v}' for k, v in s.shape.items())})" for s in j.record.shapes)
        msg = (f"the baseline has this kernel at other shapes only ({had}): nothing to compare with, so it "
               f"cannot pass; run with the baseline's shape set ({j.record.shape_set or 'default'}), or record "
               "these shapes with --update")
    elif not compared:
        what = "this kernel" if j.record is None else "any of these shapes"
        msg = f"no baseline for {what}" + ("; recorded" if opts.update else "; record one with --update")
    record = bl.KernelRecord(
        path=j.key, kernel=j.kf.kernel_name, lang=j.kf.lang, device=info.name, device_id=info.id,
        backend=info.backend, driver=info.driver, kerntune_version=__version__, seed=seed, recorded=now,
        shape_set=opts.shape_set, settings=j.settings, source_sha256=_sha(j.kf.source), spec_digest=j.kf.loaded.digest,
        source=j.kf.source, options=list(getattr(j.kf.spec.compile_options, j.kf.lang)),
        launch=(j.kf.own_launch.model_dump(mode="json") if j.kf.own_launch is not None else None),
        verified_against=ref, shapes=current)
    return KernelResult(**common, status=status, message=msg, reference=ref, verification=v, shapes=rows,
                        geomean_ratio=sp.geomean(ratios) if ratios else None, geomean_interval=geo, notes=notes), record


def skipped(kf_path: Path, key: str, lang: str, why: str) -> KernelResult:
    return KernelResult(key=key, path=str(kf_path), kernel="", lang=lang, device="", status="skipped", message=why)


__all__ = ["GateOptions", "KernelResult", "RegressReport", "ShapeResult", "run_gate", "skipped"]
