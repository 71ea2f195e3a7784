"""One evaluation of one kernel: compile, check the launch fits, verify on
every shape with fresh inputs, then time. Runs inside a worker process."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kerntune.backends.base import Backend, CompileFailed, LaunchFailed
from kerntune.dtypes import poisoned
from kerntune.engine.inputs import HostArgs, bytes_moved, make_host_args, numpy_reference
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.engine.verify import compare, tolerance_for, unchanged, unwritten_mask
from kerntune.hardware import launch_problems
from kerntune.results import (
    CopyBandwidth, EvalResult, ShapeCheck, ShapeTiming, Status, TimingStats, Verification,
)
from kerntune.spec import expr
from kerntune.spec.model import KernelSpec, LaunchSpec, Shape


@dataclass(frozen=True)
class KernelInstance:
    """A concrete kernel: source text, entry point, options and launch rule."""

    source: str
    name: str
    lang: str
    options: tuple[str, ...] = ()
    launch: LaunchSpec | None = None            # None: the spec's launch
    params: tuple[tuple[str, Any], ...] = ()    # template parameters, visible to launch expressions
    label: str = "kernel"

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for part in (self.source, self.name, self.lang, "\0".join(self.options)):
            h.update(part.encode())
            h.update(b"\1")
        return h.hexdigest()[:20]


@dataclass(frozen=True)
class TimingOptions:
    warmup: int = 20
    repeats: int = 100
    flush_l2: bool = True
    measure_copy: bool = True
    # stop timing a shape early when its first runs exceed this (shape key -> ms)
    stop_after_ms: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class EvalRequest:
    candidate: KernelInstance
    spec: KernelSpec
    base_dir: str
    verify_shapes: tuple[Shape, ...]
    time_shapes: tuple[Shape, ...]
    seed: int
    reference: KernelInstance | None = None    # the original kernel, run on the same device
    use_numpy_reference: bool = True           # the spec's reference function when there is no kernel
    timing: TimingOptions | None = field(default_factory=TimingOptions)


class Fatal(Exception):
    """The device context is poisoned; the worker must be replaced after replying."""


def shape_seed(seed: int, shape: Shape) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{shape.key}".encode()).digest()[:4], "little")


def resolve_launch(spec: KernelSpec, inst: KernelInstance, shape: Shape) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    launch = inst.launch or spec.launch
    env = {**spec.constants, **shape.as_dict(), **dict(inst.params)}
    grid = tuple(expr.evaluate_int(g, env, "grid") for g in launch.grid)
    block = tuple(expr.evaluate_int(b, env, "block") for b in launch.block)
    shared = expr.evaluate_int(launch.shared_mem, env, "shared_mem")
    return grid, block, shared


class Evaluator:
    """Holds one backend and the caches that may live as long as its worker."""

    def __init__(self, backend: Backend, max_cached: int = 64):
        self.backend = backend
        self._kernels: OrderedDict[str, Any] = OrderedDict()
        self._max_cached = max_cached
        self._copy: CopyBandwidth | None = None
        self.poisoned = False

    # --- compile -----------------------------------------------------------
    def compiled(self, inst: KernelInstance) -> Any:
        key = inst.digest
        if key in self._kernels:
            self._kernels.move_to_end(key)
            return self._kernels[key]
        kernel = self.backend.compile(inst.source, inst.name, inst.options)
        self._kernels[key] = kernel
        if len(self._kernels) > self._max_cached:
            self._kernels.popitem(last=False)
        return kernel

    # --- one launch on host arrays ---------------------------------------
    def _upload(self, spec: KernelSpec, host: HostArgs, poison: int) -> tuple[dict[str, Any], list[Any]]:
        be = self.backend
        bufs: dict[str, Any] = {}
        for a in spec.arrays:
            arr = host.arrays[a.name]
            if a.intent == "out" and poison:
                arr = poisoned(a.dt, arr.shape, poison)
            buf = be.alloc(arr.nbytes)
            be.upload(buf, arr)
            bufs[a.name] = buf
        args = [bufs[a.name] if a.is_array else be.scalar(host.scalars[a.name], a.dt.storage) for a in spec.args]
        return bufs, args

    def run_once(self, spec: KernelSpec, kernel: Any, launch: tuple, host: HostArgs, poison: int = 0) -> dict[str, np.ndarray]:
        """Upload fresh copies of every argument, launch once, download every array."""
        bufs, args = self._upload(spec, host, poison)
        grid, block, shared = launch
        self._guard(lambda: (self.backend.launch(kernel, grid, block, args, shared), self.backend.synchronize()))
        out = {}
        for a in spec.arrays:
            dst = np.empty_like(host.arrays[a.name])
            self.backend.download(bufs[a.name], dst)
            out[a.name] = dst
        return out

    def _guard(self, fn):
        try:
            return fn()
        except LaunchFailed as e:
            if e.fatal:
                self.poisoned = True
            raise

    # --- verification ---------------------------------------------------------
    def verify(self, req: EvalRequest, kernel: Any) -> Verification:
        spec, base = req.spec, Path(req.base_dir)
        ref_kernel = None
        if req.reference is not None:
            try:
                ref_kernel = self.compiled(req.reference)
            except CompileFailed as e:
                raise KerntuneError(ErrorCode.COMPILE, f"the reference kernel {req.reference.label!r} does not compile",
                                    detail=e.log) from None
        if ref_kernel is not None:
            mode = "kernel"
        elif req.use_numpy_reference and spec.reference is not None:
            mode = "numpy"
        else:
            mode = "self"
        checks = []
        for shape in req.verify_shapes:
            checks.append(self._verify_shape(req, kernel, ref_kernel, mode, shape, base))
        return Verification(ok=all(c.ok for c in checks), reference=mode, seed=req.seed, shapes=checks)

    def _verify_shape(self, req: EvalRequest, kernel: Any, ref_kernel: Any, mode: str, shape: Shape,
                      base: Path) -> ShapeCheck:
        spec = req.spec
        seed = shape_seed(req.seed, shape)
        host = make_host_args(spec, base, shape, seed)
        launch = resolve_launch(spec, req.candidate, shape)
        expected: dict[str, np.ndarray]
        if mode == "kernel":
            ref_launch = resolve_launch(spec, req.reference, shape)
            try:
                expected = self.run_once(spec, ref_kernel, ref_launch, host)
            except LaunchFailed as e:
                raise KerntuneError(ErrorCode.VERIFY, f"the reference kernel {req.reference.label!r} failed at "
                                                      f"{shape.label}: {e.message}",
                                    hint="check the original kernel alone with `kerntune bench`") from None
        elif mode == "numpy":
            expected = numpy_reference(spec, base, shape, host)
        got = self.run_once(spec, kernel, launch, host, poison=0)
        args = []
        second: dict[str, np.ndarray] | None = None
        for a in spec.outputs:
            m0 = unwritten_mask(a.dt, got[a.name], 0)
            unwritten = None
            if m0.any():
                # a value equal to the poison pattern might be legitimate: rerun with the other pattern
                second = second or self.run_once(spec, kernel, launch, host, poison=1)
                unwritten = m0 & unwritten_mask(a.dt, second[a.name], 1)
            if mode == "self":
                second = second or self.run_once(spec, kernel, launch, host, poison=1)
                exp, is_storage = second[a.name], True
            else:
                exp, is_storage = expected[a.name], mode == "kernel"
            args.append(compare(a, tolerance_for(spec, a), got[a.name], exp, is_storage, unwritten))
        for a in spec.arrays:
            if a.intent == "in":
                args.append(unchanged(a, host.arrays[a.name], got[a.name]))
        ok = all(c.ok for c in args)
        return ShapeCheck(shape=shape.as_dict(), label=shape.label, holdout=shape.holdout, seed=seed, ok=ok, args=args)

    # --- timing ---------------------------------------------------------------
    def copy_bandwidth(self, opts: TimingOptions) -> CopyBandwidth:
        if self._copy is not None:
            return self._copy
        be = self.backend
        info = be.info()
        cache = info.l2_bytes or 32 * 2**20
        if info.kind == "gpu":
            nbytes = min(max(4 * cache, 256 * 2**20), max(info.global_mem_bytes // 8, 2**20))
        else:
            nbytes = min(max(4 * cache, 64 * 2**20), 256 * 2**20)
        src, dst = be.alloc(nbytes), be.alloc(nbytes)
        be.upload(src, np.ones(nbytes // 4, dtype=np.uint32))
        samples, _ = be.measure(lambda: be.copy(dst, src, nbytes), min(opts.warmup, 5), max(min(opts.repeats, 30), 3),
                                flush=opts.flush_l2)
        self._copy = CopyBandwidth(bytes_per_copy=nbytes, stats=TimingStats.from_samples(samples, min(opts.warmup, 5),
                                                                                          opts.flush_l2))
        return self._copy

    def time_shape(self, req: EvalRequest, kernel: Any, shape: Shape, copy: CopyBandwidth | None) -> ShapeTiming:
        spec, opts = req.spec, req.timing
        host = make_host_args(spec, Path(req.base_dir), shape, shape_seed(req.seed, shape))
        grid, block, shared = resolve_launch(spec, req.candidate, shape)
        bufs, args = self._upload(spec, host, 0)
        be = self.backend
        # in-place arguments start every run from the same values: a pristine device copy is
        # copied back before each run, outside the timer
        pristine = []
        for a in spec.arrays:
            if a.intent == "inout":
                nbytes = host.arrays[a.name].nbytes
                keep = be.alloc(nbytes)
                be.upload(keep, host.arrays[a.name])
                pristine.append((bufs[a.name], keep, nbytes))
        prepare = (lambda: [be.copy(dst, src, n) for dst, src, n in pristine if n]) if pristine else None
        stop = dict(opts.stop_after_ms).get(shape.key)
        samples, early = self._guard(lambda: be.measure(lambda: be.launch(kernel, grid, block, args, shared),
                                                        opts.warmup, opts.repeats, opts.flush_l2, stop_after_ms=stop,
                                                        prepare=prepare))
        stats = TimingStats.from_samples(samples, opts.warmup, opts.flush_l2, early)
        moved = bytes_moved(spec, shape.as_dict())
        gbs = moved / (stats.median_ms * 1e-3) / 1e9 if stats.median_ms > 0 else 0.0
        pct = 100.0 * gbs / copy.gbs if copy is not None and copy.gbs > 0 else None
        return ShapeTiming(shape=shape.as_dict(), label=shape.label, stats=stats, bytes_moved=moved,
                           achieved_gbs=gbs, pct_of_copy=pct)

    # --- the whole evaluation -------------------------------------------------
    def evaluate(self, req: EvalRequest) -> EvalResult:
        t0 = time.perf_counter()
        info = self.backend.info()
        base = dict(kernel=req.candidate.label, device=info)

        def done(status: Status, **kw) -> EvalResult:
            return EvalResult(status=status, seconds=time.perf_counter() - t0, **base, **kw)

        try:
            kernel = self.compiled(req.candidate)
        except CompileFailed as e:
            first = next((ln for ln in e.log.splitlines() if "error" in ln.lower()), e.log.splitlines()[0] if e.log else "")
            return done(Status.COMPILE_ERROR, message=first.strip()[:300], compile_log=e.log)
        log = self.backend.compile_log(kernel)
        res = self.backend.resources(kernel)
        for shape in dict.fromkeys(req.verify_shapes + req.time_shapes):
            try:
                grid, block, shared = resolve_launch(req.spec, req.candidate, shape)
            except expr.ExprError as e:
                return done(Status.ERROR, message=f"launch configuration at {shape.label}: {e}", resources=res,
                            compile_log=log)
            problems = launch_problems(info, res, grid, block, shared)
            if problems:
                return done(Status.RESOURCE_LIMIT, message=f"{shape.label}: {problems[0].message}",
                            reason=problems[0].reason, resources=res, compile_log=log)
            res = res.model_copy(update={"dynamic_shared_bytes": max(res.dynamic_shared_bytes, shared)})
        verification = None
        try:
            if req.verify_shapes:
                verification = self.verify(req, kernel)
                if not verification.ok:
                    return done(Status.WRONG_RESULT, message=verification.first_failure(), resources=res,
                                compile_log=log, verification=verification)
            timings: list[ShapeTiming] = []
            copy = None
            if req.timing is not None and req.time_shapes:
                copy = self.copy_bandwidth(req.timing) if req.timing.measure_copy else None
                timings = [self.time_shape(req, kernel, s, copy) for s in req.time_shapes]
        except LaunchFailed as e:
            status = Status.CRASH if e.fatal else Status.LAUNCH_FAILURE
            return done(status, message=e.message, resources=res, compile_log=log, verification=verification)
        return done(Status.OK, resources=res, compile_log=log, verification=verification, timings=timings,
                    copy_bandwidth=copy)
