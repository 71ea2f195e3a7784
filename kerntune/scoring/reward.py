"""The KernelCompare reward of a candidate kernel against a baseline kernel:
0.4 if it compiles, + 0.4 if it computes what the baseline computes, + 0.2
if it is also faster. For RL training code as much as for the command line.

Everything the candidate does happens in kerntune's worker process, like any
other evaluation: a candidate that crashes, hangs or corrupts memory kills
only that worker (a fresh one takes over), and scores 0 for the stages it did
not pass; the trainer calling :func:`reward` never sees the crash.

Correct means: verified against the baseline kernel run on the same device,
on every spec shape, the held-out shape(s) and two fresh shapes chosen by the
seed (so a candidate cannot specialize to the shapes it was shown), with
fresh random inputs from every input distribution, outputs poisoned twice
(NaN, then a random finite value: every element must be written), inputs
checked unchanged, and a clean run under the memory and race checker (when
one is installed; the reward says when it was not). Faster means: both are
timed on each shape interleaved run by run, and the lower bound of the 95%
confidence interval of the geometric-mean speedup is at least
``min_speedup`` (default: kerntune's one threshold, 1.02), the same decision
as every other kerntune command (:mod:`kerntune.speedup`). A candidate that
is the baseline (same source, options and launch) is 1.0x. A speedup above
10x is re-verified on other fresh shapes and inputs before it counts.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from kerntune import speedup as sp
from kerntune.engine.checker import MemoryChecker, check_shapes, off_run_shapes
from kerntune.engine.evaluate import EvalRequest, KernelInstance, TimingOptions
from kerntune.engine.supervisor import DeviceWorker
from kerntune.engine.timed import CompareRequest
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import CheckReport, EvalResult, Record, Status
from kerntune.source.normalize import same_kernel
from kerntune.spec.load import LoadedSpec, load_file
from kerntune.spec.model import LaunchSpec
from kerntune.spec.shapes import extra_holdouts, holdout_shapes, spec_shapes

W_COMPILES, W_CORRECT, W_FASTER = 0.4, 0.4, 0.2
RECHECK_ABOVE = 10.0        # a speedup this large is verified once more before it counts


class Reward(Record):
    """The score and how it was earned. ``score`` = 0.4 compiles + 0.4 correct + 0.2 faster."""

    score: float
    compiles: bool
    correct: bool
    faster: bool
    speedup: Optional[float] = None          # geomean of baseline / candidate over the timed shapes
    speedups: dict[str, float] = {}          # shape label -> baseline / candidate
    interval: Optional[sp.Interval] = None   # the geomean speedup with its 95% confidence interval
    intervals: dict[str, sp.Interval] = {}   # shape label -> speedup with its interval
    check: Optional[CheckReport] = None      # the memory and race checker's report
    status: str = "ok"                       # how the last stage ended: ok, compile_error, wrong_result, crash, ...
    stage: str = "done"                      # the stage that ended it: compile, verify, time, done
    message: str = ""
    settled: list[str] = []                  # checks passed only by the NumPy reference's verdict (engine.judge.settle)
    unchecked: str = ""                      # checks not made, and why (Verification.unchecked)
    seed: Optional[int] = 0                  # None: the candidate did not load, no inputs were made
    seconds: float = 0.0


@dataclass(frozen=True)
class RewardSettings:
    shape_set: Optional[str] = None          # a named shape set of the spec (default: its shapes)
    seed: Optional[int] = None               # None: fresh inputs and fresh shapes on every call
    warmup: int = 10
    repeats: int = 50
    min_speedup: float = sp.THRESHOLD        # the interval's lower bound must reach this
    timeout_s: float = 60.0                  # per stage; a candidate that hangs longer is killed
    memcheck: bool = True                    # correct also means clean under the memory and race checker


def _score(compiles: bool, correct: bool, faster: bool) -> float:
    return round(W_COMPILES * compiles + W_CORRECT * correct + W_FASTER * faster, 6)


def _done(t0: float, seed: int, compiles: bool, correct: bool, faster: bool, r: EvalResult | None, stage: str,
          **kw: Any) -> Reward:
    status = kw.pop("status", None) or (r.status.value if r is not None else "ok")
    msg = kw.pop("message", None)
    if msg is None:
        msg = r.message if r is not None and r.status is not Status.OK else ""
    return Reward(score=_score(compiles, correct, faster), compiles=compiles, correct=correct, faster=faster,
                  status=status, stage=stage, message=msg, seed=seed, seconds=time.perf_counter() - t0, **kw)


def unloadable(message: str) -> Reward:
    """The reward of a candidate file that is there but holds no kernel of the spec (not text, no
    kernel of the spec's name, a signature or header that does not fit): 0, as a candidate that
    does not compile; the reason is in ``message``."""
    return Reward(score=0.0, compiles=False, correct=False, faster=False, status="compile_error", stage="load",
                  message=message, seed=None)


def score_instances(worker: DeviceWorker, loaded: LoadedSpec, candidate: KernelInstance, baseline: KernelInstance,
                    settings: RewardSettings = RewardSettings()) -> Reward:
    """The reward of ``candidate`` against ``baseline`` (both for ``loaded``'s spec) on ``worker``'s device.
    Raises KerntuneError only for problems of the setup (the baseline fails, a bad shape set), never for the
    candidate's failures."""
    t0 = time.perf_counter()
    s = settings
    seed = s.seed if s.seed is not None else random.SystemRandom().randrange(2**31)
    spec = loaded.spec
    shapes = tuple(spec_shapes(spec, s.shape_set))
    verify = shapes + tuple(holdout_shapes(spec, s.shape_set)) + tuple(extra_holdouts(spec, s.shape_set, 2, seed))
    base = EvalRequest(candidate=candidate, spec=spec, base_dir=str(loaded.base_dir), verify_shapes=(),
                       time_shapes=(), seed=seed, timing=None)
    # 1. compile (and check the launch fits the device on every shape)
    r = worker.evaluate(base, s.timeout_s)
    if r.status is not Status.OK:
        return _done(t0, seed, False, False, False, r, "compile")
    # 2. correct: same outputs as the baseline kernel on every shape, with fresh inputs
    # and beyond, between and below the run's shapes, on the spec's inputs only
    reach = off_run_shapes(spec, s.shape_set, seed)
    r = worker.evaluate(_with(base, verify_shapes=verify, reference=baseline).reaching(reach),
                        s.timeout_s * (2 if reach else 1))
    if r.status is not Status.OK:
        return _done(t0, seed, r.status is not Status.COMPILE_ERROR, False, False, r, "verify")
    v = r.verification
    notes: dict[str, Any] = {"settled": v.settled(), "unchecked": v.unchecked()} if v is not None else {}
    check = None
    if s.memcheck:
        checker = MemoryChecker(worker.info, timeout_s=max(s.timeout_s, 120.0))
        check = checker.check(candidate, spec, str(loaded.base_dir), check_shapes(spec, s.shape_set), seed)
        if check.failed:
            return _done(t0, seed, True, False, False, None, "check", message=f"{check.tool}: {check.message}",
                         status=check.status.value, check=check, **notes)
    if same_kernel(candidate, baseline, spec, verify):
        same = sp.identical()
        return _done(t0, seed, True, True, False, None, "done", message="the candidate is the baseline kernel",
                     speedup=1.0, interval=same, intervals={sh.label: same for sh in shapes}, check=check,
                     **notes)
    # 3. faster: both timed on each shape, interleaved run by run on the same buffers
    timing = TimingOptions(warmup=s.warmup, repeats=max(s.repeats, 6), measure_copy=False)
    intervals: dict[str, sp.Interval] = {}
    pairs = []
    for i, shape in enumerate(shapes):
        cmp = worker.compare(CompareRequest(kernels=(baseline, candidate), spec=spec, base_dir=str(loaded.base_dir),
                                            shape=shape, seed=seed + i, timing=timing, reference=baseline),
                             2 * s.timeout_s)
        b, c = cmp.kernels
        if b.status is not Status.OK:
            raise KerntuneError(ErrorCode.VERIFY, f"the baseline kernel failed while timing at {shape.label}: "
                                                  f"{b.status.value}: {b.message}",
                                hint="check it alone with `kerntune bench`")
        if c.status is not Status.OK:
            failed = EvalResult(status=c.status, kernel=c.label, message=c.message)
            return _done(t0, seed, True, False, False, failed, "time", check=check,
                         message=f"failed while timing at {shape.label}: {c.message}")
        intervals[shape.label] = sp.paired(b.samples_ms, c.samples_ms)
        pairs.append((b.samples_ms, c.samples_ms))
    geo = sp.geomean_interval(pairs)
    speedups = {k: v.ratio for k, v in intervals.items()}
    speed = geo.ratio
    if speed > RECHECK_ABOVE:
        more = tuple(extra_holdouts(spec, s.shape_set, 3, seed + 1))
        again = worker.evaluate(_with(base, verify_shapes=shapes + more, reference=baseline, seed=seed + 104729),
                                s.timeout_s)
        if again.status is not Status.OK:
            return _done(t0, seed, True, False, False, again, "verify",
                         message=f"{speed:.1f}x was too good to be true, and a second verification failed: "
                                 f"{again.message}", speedup=speed, speedups=speedups, interval=geo,
                         intervals=intervals, check=check, **notes)
    faster = sp.decide(geo, s.min_speedup) is sp.Verdict.FASTER
    return _done(t0, seed, True, True, faster, None, "done", speedup=speed, speedups=speedups, interval=geo,
                 intervals=intervals, check=check, **notes)


def _with(req: EvalRequest, **changes: Any) -> EvalRequest:
    from dataclasses import replace

    return replace(req, **changes)


def _launch(value: Union[LaunchSpec, dict, None]) -> Optional[LaunchSpec]:
    if value is None or isinstance(value, LaunchSpec):
        return value
    try:
        return LaunchSpec.model_validate(value)
    except Exception as e:
        raise KerntuneError(ErrorCode.USAGE, f"invalid launch {value!r}: {str(e).splitlines()[0]}",
                            hint="a launch is {'grid': [...], 'block': [...], 'shared_mem': 0} with expressions "
                                 "of the spec's sizes") from None


def reward(candidate_source: str, baseline_source: str, spec: Union[str, os.PathLike, LoadedSpec], *, lang: str,
           device: Optional[str] = None, worker: Optional[DeviceWorker] = None,
           candidate_launch: Union[LaunchSpec, dict, None] = None,
           baseline_launch: Union[LaunchSpec, dict, None] = None,
           settings: RewardSettings = RewardSettings()) -> Reward:
    """Score ``candidate_source`` against ``baseline_source`` with KernelCompare's reward.

    Arguments:
        candidate_source, baseline_source: kernel source text (CUDA or OpenCL, per ``lang``); the entry
            point is the spec's ``kernel``.
        spec: a spec file (YAML, or a kernel file with an inline spec), or an already loaded spec.
        lang: "cuda" or "opencl".
        device: as ``--device`` ("0", "cpu", "opencl:P:D"); ignored when ``worker`` is given.
        worker: a :class:`~kerntune.engine.supervisor.DeviceWorker` to reuse across calls (much faster
            than starting one per call); the caller closes it. Without one, a worker is started and closed.
        candidate_launch, baseline_launch: launches ({"grid", "block", "shared_mem"}) when they differ from
            the spec's ``launch``.
        settings: shapes, seed, timing and thresholds (:class:`RewardSettings`).

    Returns a :class:`Reward`. A candidate that does not compile, computes the wrong thing, crashes or
    hangs gets the points of the stages it passed; only setup problems raise
    :class:`~kerntune.errors.KerntuneError` (bad spec, no such device, a baseline that fails).
    """
    if lang not in ("cuda", "opencl"):
        raise KerntuneError(ErrorCode.USAGE, f"lang must be 'cuda' or 'opencl', not {lang!r}")
    loaded = spec if isinstance(spec, LoadedSpec) else load_file(Path(spec))
    sp = loaded.spec
    options = tuple(getattr(sp.compile_options, lang))
    cand = KernelInstance(source=candidate_source, name=sp.kernel, lang=lang, options=options,
                          launch=_launch(candidate_launch), label="candidate")
    base = KernelInstance(source=baseline_source, name=sp.kernel, lang=lang, options=options,
                          launch=_launch(baseline_launch), label="baseline")
    spec_shapes(sp, settings.shape_set)          # an unknown shape set is the caller's error
    if worker is not None:
        return score_instances(worker, loaded, cand, base, settings)
    from kerntune.engine.devices import resolve

    ref, _ = resolve(device, lang)
    with DeviceWorker(ref) as w:
        return score_instances(w, loaded, cand, base, settings)
