"""One evaluation of one kernel: compile, check the launch fits, verify on
every shape and input distribution with fresh inputs and two poisons, then
time (checking what the timed runs wrote). Runs inside a worker process."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kerntune.backends.base import Backend, CompileFailed, LaunchFailed, stateless
from kerntune.backends.compile_log import name_locations
from kerntune.dtypes import finite_poison
from kerntune.engine import distributions as dist
from kerntune.engine.datacache import DataCache, freeze, spec_key
from kerntune.engine.inputs import HostArgs, make_host_args, numpy_reference
from kerntune.engine.judge import (Arrays, Downloaded, Expected, Poison, atol_scales, canary_bytes, canary_pattern,
                                   front_canary_bytes, judge_runs, output_rms)
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.hardware import launch_problems
from kerntune.results import EvalResult, ShapeCheck, ShapeTiming, Status, Verification
from kerntune.spec import expr
from kerntune.spec.model import KernelSpec, LaunchSpec, Shape
from kerntune.spec.scalars import moved_scalars, scalar_summary


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
    file: str | None = None                     # the file this source is, line for line (names compile errors)

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
    # racing (with precision > 0): stop timing a shape once the 95% interval of its median lies
    # wholly above this (shape key -> ms, the best median so far times a margin): a candidate
    # confidently slower than the best needs no precise time to be ranked below it
    race_ms: tuple[tuple[str, float], ...] = ()
    # timed runs whose outputs are checked, besides the last one (chosen at random per shape)
    inspected_runs: int = 2
    # > 0: stop timing a shape once the 95% interval of its median is within +-precision of it
    # (at least PRECISION_AFTER runs; the search's economy, never the final test's)
    precision: float = 0.0


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
    distributions: tuple[str, ...] | None = None   # None: the spec's (every shape is verified on each)
    # verify every distribution only on these shapes (keys), the first distribution on the others
    # (the search's economy: all distributions on the small shapes; None: on every shape)
    all_distributions_on: tuple[str, ...] | None = None

    def on_every_distribution(self, shape: Shape) -> bool:
        """Whether ``shape`` is verified on every input distribution (else on the spec's own only)."""
        return self.all_distributions_on is None or shape.key in self.all_distributions_on

    def reaching(self, shapes: tuple[Shape, ...]) -> "EvalRequest":
        """This request verifying ``shapes`` too (beyond the run's: checker.reach_shapes) on the
        spec's inputs only, its own shapes on every distribution as before."""
        if not shapes:
            return self
        return replace(self, verify_shapes=self.verify_shapes + shapes,
                       all_distributions_on=tuple(s.key for s in self.verify_shapes))


def shape_seed(seed: int, shape: Shape, distribution: str = dist.SPEC) -> int:
    text = f"{seed}:{shape.key}" if distribution == dist.SPEC else f"{seed}:{shape.key}:{distribution}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def resolve_launch(spec: KernelSpec, inst: KernelInstance, shape: Shape) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    launch = inst.launch or spec.launch
    env = {**spec.constants, **shape.as_dict(), **dict(inst.params)}
    grid = tuple(expr.evaluate_int(g, env, "grid") for g in launch.grid)
    block = tuple(expr.evaluate_int(b, env, "block") for b in launch.block)
    shared = expr.evaluate_int(launch.shared_mem, env, "shared_mem")
    return grid, block, shared


def nan_poison(spec: KernelSpec) -> Poison:
    """The fixed first poison pattern of every output (NaN for floats)."""
    return {a.name: a.dt.poison[0] for a in spec.outputs}


def random_poison(spec: KernelSpec, rng: np.random.Generator) -> Poison:
    """A finite value chosen at random for every output."""
    return {a.name: finite_poison(a.dt, rng) for a in spec.outputs}


def zero_poison(spec: KernelSpec) -> Poison:
    """Every output filled with zeros, as a fresh allocation or a user's zeroed buffer holds it: the second
    verification run's filling on the spec's own inputs and on about half of the other distributions,
    where a random finite value (never 0) was (a kernel computing only where its output was not already 0
    passed NaN and the finite value). The others keep the finite value, so that a kernel writing only
    where its output is NaN or 0 fails too."""
    return {a.name: 0 for a in spec.outputs}


class Buffers(dict):
    """The device buffer each array argument is passed as, by name; with canaries (see
    :mod:`kerntune.engine.judge`), each is a view into an allocation (``whole``, by name) that holds
    the canary before it, then the array, then the canary after it."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.whole: dict[str, Any] = {}
        # output -> the input whose buffer it is passed as too (in place: kerntune.engine.inplace)
        self.alias: dict[str, str] = {}


class Evaluator:
    """Holds one backend and the caches that may live as long as its worker."""

    def __init__(self, backend: Backend, max_cached: int = 64, canary: bool = True):
        self.backend = backend
        # the bytes after each array (judge.canary_bytes), by array size; none under the memory
        # checker, whose buffers must end where their arrays do
        self.canary = canary
        self._canaries: dict[tuple[int, str], np.ndarray] = {}
        self._kernels: OrderedDict[str, Any] = OrderedDict()
        self._max_cached = max_cached
        self.poisoned = False
        self.data = DataCache()
        self._spec_keys: dict[int, tuple[KernelSpec, str]] = {}
        from kerntune.engine.timed import Timer

        self.timer = Timer(self)

    # --- compile -----------------------------------------------------------
    def compiled(self, inst: KernelInstance) -> Any:
        key = inst.digest
        if key in self._kernels:
            self._kernels.move_to_end(key)
            return self._kernels[key]
        stateless(inst.source, inst.lang, inst.options)
        kernel = self.backend.compile(inst.source, inst.name, inst.options)
        self._kernels[key] = kernel
        if len(self._kernels) > self._max_cached:
            self._kernels.popitem(last=False)
        return kernel

    def reference_kernel(self, req: EvalRequest) -> Any:
        if req.reference is None:
            return None
        try:
            return self.compiled(req.reference)
        except CompileFailed as e:
            raise KerntuneError(ErrorCode.COMPILE, f"the reference kernel {req.reference.label!r} does not compile",
                                detail=e.log) from None

    # --- one launch on host arrays ---------------------------------------
    def _canary(self, size: int, salt: str) -> np.ndarray:
        if (size, salt) not in self._canaries:
            if len(self._canaries) > 64:
                self._canaries.clear()
            self._canaries[(size, salt)] = canary_pattern(size=size, salt=salt)
        return self._canaries[(size, salt)]

    def canary_after(self, nbytes: int, name: str = "") -> np.ndarray | None:
        """The canary written after array ``name`` of ``nbytes`` (None: this evaluator has none): each
        array's own, so that one array's canary copied into another's place is a change."""
        return self._canary(canary_bytes(nbytes), f"after {name}") if self.canary else None

    def canary_before(self, nbytes: int, name: str = "") -> np.ndarray | None:
        """The canary written before array ``name`` of ``nbytes`` (None: this evaluator has none)."""
        return self._canary(front_canary_bytes(nbytes), f"before {name}") if self.canary else None

    def upload(self, spec: KernelSpec, host: HostArgs, poison: Poison | None = None,
               bufs: Buffers | None = None, reverse: bool = False,
               alias: dict[str, str] | None = None) -> tuple[Buffers, list[Any]]:
        """Device buffers holding ``host`` (outputs: ``poison`` when given); into ``bufs``
        when given (the same buffers again, with new contents). A new buffer is a view into one
        allocation that holds a canary before and after it (see :class:`Buffers`). ``reverse``: the
        arrays allocated last to first, so that their addresses come in another order. ``alias``
        (new buffers only): output name -> input name, the output passed as that input's buffer
        (in place), which holds the input's values."""
        from kerntune.dtypes import filled

        be = self.backend
        fresh = bufs is None
        bufs = Buffers() if bufs is None else bufs
        if fresh and alias:
            bufs.alias = dict(alias)
        for a in (list(reversed(spec.arrays)) if reverse else spec.arrays):
            if a.name in bufs.alias:
                continue
            arr = host.arrays[a.name]
            if a.intent == "out" and poison and a.name in poison:
                arr = filled(a.dt, arr.shape, poison[a.name])
            if fresh:
                front, back = self.canary_before(arr.nbytes, a.name), self.canary_after(arr.nbytes, a.name)
                if front is None or back is None:
                    bufs[a.name] = be.alloc(arr.nbytes)
                else:
                    whole = be.alloc(front.nbytes + arr.nbytes + back.nbytes)
                    be.upload(whole, front)
                    be.upload(whole, back, offset=front.nbytes + arr.nbytes)
                    bufs[a.name] = be.view(whole, front.nbytes, arr.nbytes + back.nbytes)
                    bufs.whole[a.name] = whole
            be.upload(bufs[a.name], arr)
        for out, inp in bufs.alias.items():
            bufs[out] = bufs[inp]
        args = [bufs[a.name] if a.is_array else be.scalar(host.scalars[a.name], a.dt.storage) for a in spec.args]
        return bufs, args

    def download(self, spec: KernelSpec, host: HostArgs, bufs: Buffers) -> Downloaded:
        """Every array, and whether the run wrote past its end or before its start
        (``Downloaded.overruns``, ``underruns``); a changed canary is written again, for the next
        run in the same buffers."""
        be = self.backend
        out = Downloaded()
        for a in spec.arrays:
            dst = np.empty_like(host.arrays[a.name])
            be.download(bufs[a.name], dst)
            out[a.name] = dst
            whole = getattr(bufs, "whole", {}).get(a.name)
            if whole is None or a.name in getattr(bufs, "alias", {}):    # an alias: its input's canaries
                continue
            back, front = self.canary_after(dst.nbytes, a.name), self.canary_before(dst.nbytes, a.name)
            seen = np.empty_like(back)
            be.download(bufs[a.name], seen, offset=dst.nbytes)
            if out.note_canary(a.name, dst.itemsize, seen, back):
                be.upload(bufs[a.name], back, offset=dst.nbytes)
            seen = np.empty_like(front)
            be.download(whole, seen)
            if out.note_canary(a.name, dst.itemsize, seen, front, before=True):
                be.upload(whole, front)
        return out

    def run_once(self, spec: KernelSpec, kernel: Any, launch: tuple, host: HostArgs,
                 poison: Poison | None = None, reverse: bool = False,
                 alias: dict[str, str] | None = None) -> Downloaded:
        """Upload fresh copies of every argument (allocated in reverse order with ``reverse``; outputs
        in place over inputs with ``alias``, see :meth:`upload`), launch once, download every array."""
        bufs, args = self.upload(spec, host, poison, reverse=reverse, alias=alias)
        grid, block, shared = launch
        self.guard(lambda: (self.backend.launch(kernel, grid, block, args, shared), self.backend.synchronize()))
        return self.download(spec, host, bufs)

    def guard(self, fn):
        try:
            return fn()
        except LaunchFailed as e:
            if e.fatal:
                self.poisoned = True
            raise

    # --- inputs and expected values, kept between evaluations (see datacache) -------------
    def _spec_key(self, spec: KernelSpec) -> str:
        hit = self._spec_keys.get(id(spec))
        if hit is None or hit[0] is not spec:
            if len(self._spec_keys) > 64:
                self._spec_keys.clear()
            hit = self._spec_keys[id(spec)] = (spec, spec_key(spec))
        return hit[1]

    def host_args(self, spec: KernelSpec, base_dir: Path, shape: Shape, seed: int,
                  distribution: str = dist.SPEC) -> HostArgs:
        """:func:`make_host_args`, made once per spec, shape, seed and distribution."""
        key = (self._spec_key(spec), str(base_dir), shape.key, seed, distribution)

        def make() -> HostArgs:
            host = make_host_args(spec, Path(base_dir), shape, seed, distribution)
            host.cache_key = key
            return host
        return self.data.get(("inputs", key), make, lambda h: freeze(h.arrays.values()))

    # --- expected values ------------------------------------------------------
    def mode(self, req: EvalRequest) -> str:
        if req.reference is not None:
            return "kernel"
        if req.use_numpy_reference and req.spec.reference is not None:
            return "numpy"
        return "self"

    def expected(self, req: EvalRequest, shape: Shape, host: HostArgs, ref_kernel: Any = None) -> Expected:
        """The reference's outputs on ``host`` (``values`` None when there is no reference); kept
        with ``host`` when the inputs were kept (:meth:`host_args`)."""
        mode = self.mode(req)
        if host.cache_key is None or mode == "self":
            return self._expected(req, shape, host, ref_kernel, mode)
        return self.data.get(("expected", *self._reference_key(req, host)),
                             lambda: self._expected(req, shape, host, ref_kernel, mode),
                             lambda e: freeze((e.values or {}).values()))

    def _reference_key(self, req: EvalRequest, host: HostArgs) -> tuple:
        ref = req.reference
        return host.cache_key, self.mode(req), (ref.digest, repr(ref.launch), ref.params) if ref is not None else None

    def reference_rms(self, req: EvalRequest, host: HostArgs, expected: Expected) -> dict[str, float]:
        """:func:`output_rms` of the expected values, kept with them."""
        make = lambda: output_rms(req.spec, expected.values, expected.is_storage)  # noqa: E731
        if host.cache_key is None:
            return make()
        return self.data.get(("rms", *self._reference_key(req, host)), make, lambda r: 0)

    def _expected(self, req: EvalRequest, shape: Shape, host: HostArgs, ref_kernel: Any, mode: str) -> Expected:
        spec = req.spec
        if mode == "kernel":
            kernel = ref_kernel if ref_kernel is not None else self.reference_kernel(req)
            try:
                out = self.run_once(spec, kernel, resolve_launch(spec, req.reference, shape), host)
            except LaunchFailed as e:
                raise KerntuneError(ErrorCode.VERIFY, f"the reference kernel {req.reference.label!r} failed at "
                                                      f"{shape.label}: {e.message}",
                                    hint="check the original kernel alone with `kerntune bench`") from None
            truth = (lambda: self.truth(req, shape, host)) \
                if req.use_numpy_reference and spec.reference is not None else None
            return Expected({a.name: out[a.name] for a in spec.outputs}, True, truth,
                            tuple(sorted({*out.overruns, *out.underruns})))
        if mode == "numpy":
            return Expected(numpy_reference(spec, Path(req.base_dir), shape, host), False)
        return Expected(None)

    def truth(self, req: EvalRequest, shape: Shape, host: HostArgs) -> Arrays | None:
        """The spec's NumPy reference on ``host``, kept with it: what settles a disagreement with
        the reference kernel (:func:`kerntune.engine.judge.settle`); None if the function fails."""
        def make() -> Arrays | None:
            try:
                return numpy_reference(req.spec, Path(req.base_dir), shape, host)
            except KerntuneError:
                return None
        if host.cache_key is None:
            return make()
        return self.data.get(("truth", host.cache_key), make, lambda v: freeze((v or {}).values()))

    # --- verification ---------------------------------------------------------
    def distributions(self, req: EvalRequest) -> tuple[str, ...]:
        return req.distributions if req.distributions is not None else req.spec.input_distributions

    def verify(self, req: EvalRequest, kernel: Any, cache: dict[tuple[str, int], Expected]) -> Verification:
        ref_kernel = self.reference_kernel(req)
        names = self.distributions(req)
        checks = []
        for shape in req.verify_shapes:
            base_rms: dict[str, float] = {}       # output sizes on the first distribution (the spec's own)
            everything = req.on_every_distribution(shape)
            for d in names if everything else names[:1]:
                checks.append(self._verify_one(req, kernel, ref_kernel, shape, d, cache, base_rms))
        checks += self._verify_moved_scalars(req, kernel, ref_kernel)
        from kerntune.engine.inplace import verify_in_place     # (it imports this module)

        checks += verify_in_place(self, req, kernel, ref_kernel)
        return Verification(ok=all(c.ok for c in checks), reference=self.mode(req), seed=req.seed, shapes=checks,
                            distributions=list(names))

    def _verify_moved_scalars(self, req: EvalRequest, kernel: Any, ref_kernel: Any) -> list[ShapeCheck]:
        """Against the original kernel, one more check on the spec's own inputs at each shape verified on
        every distribution, with the spec's float scalars moved (kerntune.spec.scalars): a kernel that wrote
        the spec's values into its code and ignored its arguments matched on every shape and distribution,
        and one doing so only where n is even passed a check at the (odd) held-out shape alone."""
        moved = moved_scalars(req.spec, req.seed) if ref_kernel is not None else None
        if moved is None:
            return []
        stage = f"other scalar values: {scalar_summary(req.spec, moved)}"
        moved_req = replace(req, spec=moved)
        checks = []
        for s in (s for s in req.verify_shapes if req.on_every_distribution(s)):
            # values the original does not accept: it writes outside its arrays there (a bucket width
            # moved down sent a histogram's indices past its last bin), so its outputs decide nothing
            host = self.host_args(moved, Path(req.base_dir), s, shape_seed(req.seed, s, dist.SPEC), dist.SPEC)
            expected = self.expected(moved_req, s, host, ref_kernel)
            outside = expected.outside
            if outside:
                checks.append(ShapeCheck(shape=s.as_dict(), label=s.label, holdout=s.holdout, seed=req.seed,
                                         ok=True, stage=stage, checked=False,
                                         message=f"not checked: the original kernel writes outside {', '.join(outside)} "
                                                 "at these values"))
                continue
            checks.append(self._verify_one(moved_req, kernel, ref_kernel, s, dist.SPEC, {}, {}, expected)
                          .model_copy(update={"stage": stage}))
        return checks

    def _verify_one(self, req: EvalRequest, kernel: Any, ref_kernel: Any, shape: Shape, distribution: str,
                    cache: dict[tuple[str, int], Expected], base_rms: dict[str, float],
                    expected: Expected | None = None) -> ShapeCheck:
        """Two runs on fresh inputs: outputs poisoned with NaN, then filled with zeros or with a
        random finite value (:func:`zero_poison`); both must match the reference, and an element
        that kept its poison in both is unwritten. The absolute tolerance follows the outputs' size relative to
        the shape's first distribution (``base_rms``, filled by the first call). ``expected``: the reference's
        outputs on these inputs, when the caller has them already (else they are made here)."""
        spec = req.spec
        seed = shape_seed(req.seed, shape, distribution)
        host = self.host_args(spec, Path(req.base_dir), shape, seed, distribution)
        if expected is None:
            expected = self.expected(req, shape, host, ref_kernel)
        if distribution == dist.SPEC:
            cache[(shape.key, seed)] = expected
        launch = resolve_launch(spec, req.candidate, shape)
        rng = np.random.default_rng(seed ^ 0x5EED)
        runs = []
        # the second filling: zeros on the spec's own inputs and on about half of the other distributions
        # (drawn), a random finite value on the rest; a third run would cost half of verification again
        zeros = distribution == dist.SPEC or rng.random() < 0.5
        # the second with its arrays allocated in reverse order: a kernel right only while its output
        # lies above its inputs in memory (`c > a`) was called correct on Intel's CPU runtime
        for second, poison in enumerate((nan_poison(spec), zero_poison(spec) if zeros else random_poison(spec, rng))):
            runs.append((self.run_once(spec, kernel, launch, host, poison, reverse=bool(second)), poison))
        if expected.values is None:       # no reference: the first run's outputs set the size
            rms = output_rms(spec, runs[0][0], True)
        else:
            rms = self.reference_rms(req, host, expected)
        scales = atol_scales(spec, rms, base_rms)
        if not base_rms:
            base_rms.update(rms)
        args = judge_runs(spec, host.arrays, runs, expected, scales, accuracy=True)
        label = shape.label if distribution == dist.SPEC else f"{shape.label} [{distribution}]"
        return ShapeCheck(shape=shape.as_dict(), label=label, holdout=shape.holdout, seed=seed,
                          ok=all(c.ok for c in args), args=args, distribution=distribution)

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
            log = name_locations(e.log, req.candidate.file)
            first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.splitlines()[0] if log else "")
            return done(Status.COMPILE_ERROR, message=first.strip()[:300], compile_log=log)
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
        cache: dict[tuple[str, int], Expected] = {}
        try:
            if req.verify_shapes:
                verification = self.verify(req, kernel, cache)
                if not verification.ok:
                    return done(Status.WRONG_RESULT, message=verification.first_failure(), resources=res,
                                compile_log=log, verification=verification)
            timings: list[ShapeTiming] = []
            copy = None
            if req.timing is not None and req.time_shapes:
                copy = self.timer.copy_bandwidth(req.timing) if req.timing.measure_copy else None
                for s in req.time_shapes:
                    timing, failed = self.timer.time_shape(req, kernel, s, copy, cache)
                    if failed is not None:
                        checks = (verification.shapes if verification else []) + [failed]
                        v = Verification(ok=False, reference=self.mode(req), seed=req.seed, shapes=checks,
                                         distributions=verification.distributions if verification else [])
                        return done(Status.WRONG_RESULT, message=v.first_failure(), resources=res, compile_log=log,
                                    verification=v)
                    timings.append(timing)
        except LaunchFailed as e:
            status = Status.CRASH if e.fatal else Status.LAUNCH_FAILURE
            return done(status, message=e.message, resources=res, compile_log=log, verification=verification)
        return done(Status.OK, resources=res, compile_log=log, verification=verification, timings=timings,
                    copy_bandwidth=copy)
