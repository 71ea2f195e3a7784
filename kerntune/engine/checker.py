"""The memory and race checker: a candidate runs, on small shapes, under a tool
that sees every memory access.

* OpenCL: Oclgrind (Debian/Ubuntu package ``oclgrind``), an OpenCL device
  simulator, loaded as the only OpenCL platform of a fresh worker process. It
  reports out-of-bounds reads and writes in global and local memory, data
  races, reads of uninitialized values and barrier divergence, with the
  kernel's source line.
* CUDA: NVIDIA's compute-sanitizer around a fresh worker process, once per
  tool (memcheck, racecheck, synccheck, initcheck), with CuPy's memory pool
  off so an access past a buffer is an access past an allocation.

A check verifies the candidate on the check shapes (the spec's reference, or
two runs of itself) and reads what the tool logged. Every check runs in its
own process: Oclgrind's error limit and a sanitizer's state never leak from
one candidate into the next. The result is a :class:`CheckReport`; a kernel
that could not be checked (no tool, the tool cannot compile it, time limit)
is ``unchecked`` with the reason, never silently "clean".
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from kerntune.backends import DeviceRef
from kerntune.engine import macros
from kerntune.engine.evaluate import EvalRequest, KernelInstance, resolve_launch
from kerntune.engine.inputs import array_shape
from kerntune.errors import KerntuneError
from kerntune.results import CheckReport, CheckStatus, DeviceInfo, EvalResult, Status
from kerntune.spec.model import KernelSpec, Shape
from kerntune.spec.shapes import holdout_shapes, spec_shapes

MAX_CHECK_ELEMENTS = 1 << 12          # the largest array of a check shape, in elements (Oclgrind: ~2 s)
OCLGRIND_LIBS = ("/usr/lib/oclgrind/liboclgrind-rt-icd.so", "/usr/lib/x86_64-linux-gnu/liboclgrind-rt-icd.so",
                 "/usr/local/lib/liboclgrind-rt-icd.so", "/usr/lib64/liboclgrind-rt-icd.so")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
OCLGRIND_FATAL = "OCLGRIND FATAL ERROR"       # Oclgrind itself gave up (not a finding about the kernel)
# Under Oclgrind a kernel is built without optimization: the checker judges the source, and an optimizer
# may turn `if (tid == 0) total += partial[0];` into a load by every work-item (a speculated load, legal
# for the compiler, which the race detector then reports against work-item 0's next write). Unoptimized
# code makes every access the source makes, and no other.
OCLGRIND_BUILD_OPTIONS = ("-cl-opt-disable",)
# The same for compute-sanitizer: NVRTC's optimizer speculates such a guarded shared-memory load too
# (nvcc -ptx of reduce_sum naive.cu: `ld.shared` of partial[0] by every thread, then `selp`). -G turns
# device optimization off; a kernel that cannot launch that way (its unoptimized build needs more
# registers than the block has) is checked as built, and the report says so.
SANITIZER_BUILD_OPTIONS = ("-G",)
# ... which predefines a macro of its own: `nvcc -G -E -Xcompiler -dM` (CUDA 13.0) lists __CUDACC_DEBUG__, and the
# PTX of a kernel storing under `#ifdef __CUDACC_DEBUG__` has the store with -G only. A source that names it could
# take another path under the sanitizer than on the device: it is checked as built (kerntune.engine.macros)
DEBUG_BUILD_MACROS = frozenset({"__CUDACC_DEBUG__"})


def sanitizer_options(source: str) -> tuple[tuple[str, ...], str]:
    """The options compute-sanitizer's build adds to a CUDA kernel's (-G), and why there are none (the source
    names a macro that only the -G build defines: it is checked as built, as the device runs it)."""
    named = sorted(DEBUG_BUILD_MACROS & set(macros.source_names(source)))
    if named:
        return (), (f"checked as built with optimization: the source names {', '.join(named)}, which the unoptimized "
                    "(-G) build defines and the device's does not")
    return SANITIZER_BUILD_OPTIONS, ""

# Oclgrind (an OpenCL 1.2 device) has no sub-group functions. Under it they are modeled with
# sub-groups of one work-item, a legal sub-group size and the one at which a kernel indexes
# per-sub-group storage (sh[get_sub_group_id()]) the furthest.
SUBGROUPS_OF_ONE = """// kerntune memory check: sub-groups of one work-item (Oclgrind has none)
#define get_sub_group_size() 1u
#define get_max_sub_group_size() 1u
#define get_sub_group_local_id() 0u
#define get_num_sub_groups() ((uint)(get_local_size(0) * get_local_size(1) * get_local_size(2)))
#define get_enqueued_num_sub_groups() get_num_sub_groups()
#define get_sub_group_id() ((uint)((get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0) \\
                                   + get_local_id(0)))
#define sub_group_barrier(flags) ((void)0)
#define sub_group_broadcast(x, i) (x)
#define sub_group_reduce_add(x) (x)
#define sub_group_reduce_min(x) (x)
#define sub_group_reduce_max(x) (x)
#define sub_group_scan_inclusive_add(x) (x)
#define sub_group_scan_inclusive_min(x) (x)
#define sub_group_scan_inclusive_max(x) (x)
#define sub_group_any(p) (p)
#define sub_group_all(p) (p)
"""


# --- finding the tools ----------------------------------------------------------------
CHECKER_OFF = "the memory checker is off (--no-memcheck)"     # why a check was not made, when off


def oclgrind_library() -> Optional[Path]:
    found = [Path(p) for p in OCLGRIND_LIBS]
    exe = shutil.which("oclgrind")
    if exe:
        root = Path(exe).resolve().parent.parent
        found += [root / "lib" / "oclgrind" / "liboclgrind-rt-icd.so", root / "lib" / "liboclgrind-rt-icd.so"]
    return next((p for p in found if p.exists()), None)


def compute_sanitizer() -> Optional[str]:
    exe = shutil.which("compute-sanitizer")
    if exe:
        return exe
    for p in ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if Path(p).exists():
            return p
    return None


# --- which shapes -------------------------------------------------------------------------
def _largest_array(spec: KernelSpec, sizes: dict[str, int]) -> int:
    try:
        return max((int(np.prod(array_shape(a, sizes))) for a in spec.arrays), default=0)
    except KerntuneError:
        return 1 << 62


def check_shapes(spec: KernelSpec, shape_set: str | None = None, limit: int = MAX_CHECK_ELEMENTS) -> list[Shape]:
    """Small shapes to run under the checker (an interpreter, thousands of times slower
    than the device): the held-out shape and the smallest listed shape where they fit
    ``limit`` elements per array; where the held-out shape does not fit, the smallest listed
    shape scaled down (each size halved in turn, kept a multiple of its step and within its
    bounds) and moved to odd multiples, so that tails are always exercised."""
    listed = sorted(spec_shapes(spec, shape_set), key=lambda s: _largest_array(spec, s.as_dict()))
    picked = [s for s in holdout_shapes(spec, shape_set) + listed[:1]
              if _largest_array(spec, s.as_dict()) <= limit]
    if any(s.holdout for s in picked):
        return list(dict.fromkeys(picked))
    # no held-out (odd) shape fits: the scaled, odd one below, beside the listed one if that fits. Without
    # it a kernel whose vector loads run past an odd tail was checked on n=4096 alone and called clean
    return list(dict.fromkeys(picked + [_scaled_odd(spec, listed[0].as_dict(), limit)]))


def _scaled_odd(spec: KernelSpec, sizes: dict[str, int], limit: int) -> Shape:
    """``sizes`` halved (one size at a time, the largest first, each a multiple of its step and within
    its bounds) until every array fits ``limit`` elements, then each size moved to an odd multiple."""
    sizes = dict(sizes)
    for _ in range(256):
        if _largest_array(spec, sizes) <= limit:
            break
        moved = False
        for name in sorted(sizes, key=lambda n: -sizes[n]):
            c = spec.sizes[name]
            smaller = max((sizes[name] // 2) // c.multiple_of * c.multiple_of, c.multiple_of, c.min)
            if smaller < sizes[name]:
                sizes[name] = smaller
                moved = True
                break
        if not moved:
            break
    odd = dict(sizes)
    for name, v in sizes.items():
        c = spec.sizes[name]
        k = v // c.multiple_of
        if k % 2 == 0 and k > 1 and (v - c.multiple_of) >= c.min:
            odd[name] = v - c.multiple_of
    return Shape.of(odd, label="check " + " ".join(f"{k}={v}" for k, v in odd.items()), holdout=True)


REACH_ELEMENTS = 1 << 24      # the largest array of a reach shape, at most (verified once per candidate)
REACH_VOLUME = 64             # ... and its sizes' product at most this many times the run's largest


def reach_shapes(spec: KernelSpec, shape_set: str | None = None, limit: int = REACH_ELEMENTS,
                 volume: int = REACH_VOLUME) -> list[Shape]:
    """Shapes beyond the run's, each within two bounds on its work: its arrays fit ``limit``
    elements, and its sizes' product is at most ``volume`` times the largest of the run's (sgemm's
    sq2048 is 512 times the CPU set's sq256, 4 s a run on 2 cores; 'tall', 2048x512x1024, 64 times,
    is taken). [] when there is none.

    - The largest shape the spec lists anywhere (its own shapes, every shape set, its held-out
      shapes) that is larger than every shape of ``shape_set``.
    - Then, for each size whose largest listed value that fits is beyond the run's and beyond that
      shape's, the run's smallest shape with that one size at that value (the sizes of a spec are
      independent, each within its own bounds): a kernel wrong only on long rows (a row kept in a
      fixed local buffer, or summed only up to some length) is caught where no whole listed shape
      fits the bounds (13 of the 22 held-out specs under their CPU sets).

    The tester verifies its candidates there too (the spec's inputs only): a kernel handed back is
    used at the sizes the spec lists, and a hostile template that summed only the first 10241
    columns was verified on a CPU shape set whose rows are shorter, wrong on the spec's own 65536
    (adversarial tour, 2026-12-04)."""
    from kerntune.spec.shapes import _shape, _volume, shape_set_names

    run = spec_shapes(spec, shape_set)
    top = max(_largest_array(spec, s.as_dict()) for s in run)
    most = volume * max(_volume(s) for s in run)
    taken = {s.key for s in run}
    every = [s for name in shape_set_names(spec) for s in spec_shapes(spec, name)]
    every += [_shape(s, True) for s in (spec.holdout_shapes or [])]

    def fits(s: Shape) -> bool:
        return _largest_array(spec, s.as_dict()) <= limit and _volume(s) <= most

    out: list[Shape] = []
    whole = [s for s in every if s.key not in taken and top < _largest_array(spec, s.as_dict()) and fits(s)]
    if whole:
        best = max(whole, key=lambda s: _largest_array(spec, s.as_dict()))
        out.append(Shape.of(best.as_dict(), label=f"reach {best.label or best.key}", holdout=True))
    base = min(run, key=_volume).as_dict()
    for name in base:
        seen = max([s.as_dict()[name] for s in run + out])
        for value in sorted({s.as_dict()[name] for s in every if s.as_dict().get(name, 0) > seen}, reverse=True):
            shape = Shape.of(dict(base, **{name: value}), label=f"reach {name}={value}", holdout=True)
            if shape.key not in taken and fits(shape):
                out.append(shape)
                break
    return out


def low_shapes(spec: KernelSpec, shape_set: str | None = None, limit: int = REACH_ELEMENTS,
               volume: int = REACH_VOLUME) -> list[Shape]:
    """Shapes below the run's: for each size whose smallest value the spec lists anywhere (its own
    shapes, every shape set, its held-out shapes) is below every value the run's shapes give it, the
    smallest listed shape that holds that value ("low LABEL"), within the reach bounds.
    :func:`reach_shapes` goes up only, and the held-out, fresh and spread shapes start at the run's
    smallest: a row_sum wrong only for fewer than 32 rows (a short-batch path that dropped each row's
    last column) scored reward 1.0 on the example spec's own shapes, whose rows are at least 64, though
    its CPU set lists 16 (adversarial tour, 2026-12-05). Whole listed shapes, not the run's smallest with
    one size lowered: a spec's sizes need not go down independently (spmv's inputs cannot fit the CPU
    set's 262144 nonzeros in one row)."""
    from kerntune.spec.shapes import _shape, _volume, holdout_shapes, shape_set_names

    run = spec_shapes(spec, shape_set)
    most = volume * max(_volume(s) for s in run)
    taken = {s.key for s in run + holdout_shapes(spec, shape_set)}     # verified already
    every = [s for name in shape_set_names(spec) for s in spec_shapes(spec, name)]
    every += [_shape(s, True) for s in (spec.holdout_shapes or [])]
    every = [s for s in every if s.key not in taken and _largest_array(spec, s.as_dict()) <= limit
             and _volume(s) <= most]
    out: dict[str, Shape] = {}
    for name, _ in run[0].sizes:
        least = min(s.as_dict()[name] for s in run)
        below = [s for s in every if s.as_dict().get(name, least) < least]
        if below:
            pick = min(below, key=lambda s: (s.as_dict()[name], _volume(s)))
            out.setdefault(pick.key, Shape.of(pick.as_dict(), label=f"low {pick.label or pick.key}", holdout=True))
    return list(out.values())


def spread_shapes(spec: KernelSpec, shape_set: str | None, seed: int, limit: int = REACH_ELEMENTS,
                  volume: int = REACH_VOLUME) -> list[Shape]:
    """Shapes between and past the run's that no list names, each within the reach bounds:

    - the run's largest shape with every size moved to a near odd multiple of its step ("odd"):
      the held-out and fresh shapes are odd but small, and a vector_add whose float4 path (taken
      for n >= 400000) dropped the last n % 4 elements was called correct on every shape;
    - one shape drawn at random (by ``seed``) from the whole range the run's shapes and the reach
      bounds span ("spread"): each size log-uniform from its value in the run's smallest shape up
      to the largest value that fits the bounds with the other sizes there (and its max), an odd
      multiple of 2**v steps, v drawn from 0..4; drawn again, closer to the smallest shape, until
      the whole shape fits.
      A vector_add wrong only for 300000 < n < 1000000 was called correct at every listed,
      held-out, fresh and reach shape. Each final test and reward draws its own, so the sizes
      between are covered across runs, not in one.

    Both found by an adversarial tour (2026-12-05). Shapes the run has, or that do not fit, are
    left out."""
    import random

    from kerntune.spec.shapes import _volume

    run = spec_shapes(spec, shape_set)
    most = volume * max(_volume(s) for s in run)
    taken = {s.key for s in run}
    low = min(run, key=_volume).as_dict()

    def fits(sizes: dict[str, int]) -> bool:
        return _largest_array(spec, sizes) <= limit and _volume(Shape.of(sizes)) <= most

    def odd(name: str, value: float, twos: int = 0) -> int:
        """The multiple of the size's step nearest ``value`` within its bounds that is an odd multiple
        of 2**``twos`` steps (or, when none is inside, of the step: a tour's float8 vector_add wrong
        only for n % 8 == 4 passed sizes that were all odd or multiples of 8); ``value``'s own
        multiple when no odd one is inside (a size pinned to 256 stays 256: a tour's spread shape
        broke such a spec's min with 255)."""
        c = spec.sizes[name]
        for step in dict.fromkeys((c.multiple_of << twos, c.multiple_of)):
            lo, hi = -(-max(c.min, 1) // step), (c.max // step if c.max is not None else None)
            k = max(1, int(value) // step, lo)
            if hi is not None:
                k = min(k, hi)
            if k % 2 == 0:
                inside = [j for j in (k + 1, k - 1) if j >= lo and j >= 1 and (hi is None or j <= hi)]
                k = inside[0] if inside else k
            if k % 2 == 1 or step == c.multiple_of:
                return k * step
        return k * c.multiple_of

    out: list[Shape] = []
    high = max(run, key=_volume).as_dict()
    odd_high = {}
    for name, value in high.items():         # the nearest odd multiple above, or else below
        c, m = spec.sizes[name], spec.sizes[name].multiple_of
        k = value // m
        ks = [k + 1, k + 2, k - 1, k - 2] if k % 2 == 0 else [k, k + 2, k - 2]
        fit = [j * m for j in ks if j % 2 == 1 and j * m >= max(c.min, 1) and (c.max is None or j * m <= c.max)
               and fits(dict(high, **odd_high, **{name: j * m}))]
        odd_high[name] = fit[0] if fit else value
    shape = Shape.of(odd_high, label="odd " + " ".join(f"{k}={v}" for k, v in odd_high.items()), holdout=True)
    if shape.key not in taken and fits(odd_high):
        taken.add(shape.key)
        out.append(shape)
    top = {}
    for name, value in low.items():          # each size's reach with the others at the smallest shape's
        c, v = spec.sizes[name], value
        for _ in range(64):
            nxt = v * 2 if c.max is None else min(v * 2, c.max)
            if nxt == v or not fits(dict(low, **{name: nxt})):
                break
            v = nxt
        top[name] = v
    rng = random.Random(seed)
    draw = {name: rng.random() for name in low}
    twos = random.Random(seed ^ 0x2AD1C)                 # each size's power of two, 0..4, apart from the draw
    power = {name: twos.randrange(5) for name in low}
    for attempt in range(24):
        scale = 0.75 ** attempt
        sizes = {name: odd(name, low[name] * (top[name] / low[name]) ** (draw[name] * scale), power[name])
                 if low[name] > 0 else low[name] for name in low}
        if fits(sizes):
            shape = Shape.of(sizes, label="spread " + " ".join(f"{k}={v}" for k, v in sizes.items()), holdout=True)
            return out + ([shape] if shape.key not in taken else [])
    return out


def off_run_shapes(spec: KernelSpec, shape_set: str | None, seed: int) -> tuple[Shape, ...]:
    """The shapes the final test and `score reward` verify on the spec's inputs beyond the run's own: above
    them (:func:`reach_shapes`), between and past them (:func:`spread_shapes`, drawn by ``seed``) and below
    them (:func:`low_shapes`)."""
    return tuple(reach_shapes(spec, shape_set) + spread_shapes(spec, shape_set, seed) + low_shapes(spec, shape_set))


def off_run_counts(shapes: Iterable[Shape]) -> str:
    """How many of :func:`off_run_shapes` lie where, in words ("1 above, 2 between or past, 1 below the
    run's"): the final test's progress line says what it checks."""
    kinds = {"reach": "above", "odd": "between or past", "spread": "between or past", "low": "below"}
    counts: dict[str, int] = {}
    for sh in shapes:
        where = kinds.get((sh.label or "").split(" ", 1)[0], "off")
        counts[where] = counts.get(where, 0) + 1
    return ", ".join(f"{n} {where}" for where, n in counts.items()) + " the run's"


# --- reading the tools' logs ----------------------------------------------------------------
def oclgrind_findings(log: str) -> list[str]:
    """Oclgrind's error reports: blocks separated by blank lines."""
    blocks, cur = [], []
    for line in log.splitlines():
        if not line.strip():
            if cur:
                blocks.append("\n".join(cur))
                cur = []
            continue
        if line.startswith("Oclgrind:") and "suppressing" in line:
            continue
        cur.append(line.rstrip())
    if cur:
        blocks.append("\n".join(cur))
    return blocks


_SANITIZER_NOISE = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
                    "Program hit", "Internal Sanitizer")


def sanitizer_findings(log: str) -> list[str]:
    """compute-sanitizer's reports: ``========= `` lines, one block per finding."""
    blocks, cur = [], []
    for line in log.splitlines():
        if not line.startswith("========="):
            continue
        body = line[9:].strip()
        if not body:
            if cur:
                blocks.append("\n".join(cur))
                cur = []
            continue
        if not cur and body.startswith(_SANITIZER_NOISE):
            continue
        cur.append(body)
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def _headline(block: str) -> str:
    lines = block.splitlines()
    head = lines[0].strip()
    where = next((ln.strip() for ln in lines if ln.strip().startswith("At line")), "")
    kernel = next((ln.strip() for ln in lines if ln.strip().startswith("Kernel:")), "")
    extra = "; ".join(x for x in (kernel, where.rstrip(":")) if x)
    return head + (f" ({extra})" if extra else "")


def crash_hint(status: str, check, lang: str, command: str = "") -> str | None:
    """For a kernel that took its worker process down (the runtime's last words say little; Intel's CPU
    runtime dies of SIGSEGV on an out-of-bounds access): what the memory checker found (``check``, a
    CheckReport or None), or how to run it: ``command``, or (`bench`'s own) --memcheck."""
    if status != Status.CRASH.value:
        return None
    if check is not None and check.message != CHECKER_OFF:    # the checker ran: its report says what it
        return (f"the memory checker ({check.tool}) found where: see its `check` line above"   # found, or
                if check.failed else None)                                                   # why it did not
    tool = "compute-sanitizer" if lang == "cuda" else "Oclgrind"
    how = f"`{command}`" if command else "rerun with --memcheck"
    return (f"a kernel that crashes its process usually reads or writes out of bounds: run it under the memory "
            f"checker ({tool}), which says where: {how}")


# --- the checker ----------------------------------------------------------------------------------
# what each name a source may test is as a macro, per device ("checker": Oclgrind) and build options
_MACROS: dict[tuple[str, tuple[str, ...]], dict] = {}


class MemoryChecker:
    """Checks kernel instances for one device; remembers what it has checked."""

    def __init__(self, device: DeviceInfo, enabled: bool = True, timeout_s: float = 600.0,
                 tools: Sequence[str] = SANITIZER_TOOLS):
        self.device = device
        self.timeout_s = timeout_s
        self.tools = tuple(tools)
        self._cache: dict[str, CheckReport] = {}
        self.checks = 0
        self.seconds = 0.0
        if not enabled:
            self.tool, self.why_not = "", CHECKER_OFF
        elif device.lang == "opencl":
            lib = oclgrind_library()
            self.tool = "oclgrind" if lib else ""
            self.why_not = "" if lib else "Oclgrind is not installed (Debian/Ubuntu: apt-get install oclgrind)"
            self._lib = lib
        else:
            exe = compute_sanitizer()
            self.tool = "compute-sanitizer" if exe else ""
            self.why_not = "" if exe else "compute-sanitizer is not on PATH (it comes with the CUDA toolkit)"
            self._exe = exe

    @property
    def available(self) -> bool:
        return not self.why_not

    def disable(self, why: str) -> None:
        self.why_not = why

    def step(self, label: str) -> str:
        """What checking ``label`` is, for a progress line: "checking X with the memory checker" was
        printed with the checker off (--no-memcheck), or without a tool."""
        if self.available:
            return f"checking {label} with {self.tool}"
        return f"not checking {label} for memory errors: {self.why_not}"

    def key(self, inst: KernelInstance, spec: KernelSpec, shapes: Sequence[Shape]) -> str:
        launches = [resolve_launch(spec, inst, s) for s in shapes]
        return hashlib.sha256((inst.digest + json.dumps(launches)).encode()).hexdigest()[:20]

    def check(self, inst: KernelInstance, spec: KernelSpec, base_dir: str, shapes: Sequence[Shape],
              seed: int) -> CheckReport:
        labels = [s.label for s in shapes]
        if not self.available:
            return CheckReport(tool=self.tool, status=CheckStatus.UNCHECKED, message=self.why_not, shapes=labels)
        key = self.key(inst, spec, shapes)
        if key in self._cache:
            return self._cache[key]
        t0 = time.perf_counter()
        req = EvalRequest(candidate=inst, spec=spec, base_dir=base_dir, verify_shapes=tuple(shapes), time_shapes=(),
                          seed=seed, reference=None, use_numpy_reference=True, timing=None, distributions=("spec",))
        if self.tool == "oclgrind":
            source = SUBGROUPS_OF_ONE + inst.source if "sub_group" in inst.source else inst.source
            same, refused = self._device_macros(inst)
            req = replace(req, candidate=replace(inst, source=source, file=inst.file if source == inst.source else None,
                                                 options=tuple(inst.options) + OCLGRIND_BUILD_OPTIONS + same))
            report = refused or self._oclgrind(req)
            if same:
                note = "built with the device's predefined macros " + " ".join(same)
                report = report.model_copy(update={"message": f"{report.message}; {note}" if report.message else note})
        else:
            report = self._sanitizer(req)
        report = report.model_copy(update={"shapes": labels, "seconds": time.perf_counter() - t0})
        self.checks += 1
        self.seconds += report.seconds
        self._cache[key] = report
        return report

    def _device_macros(self, inst: KernelInstance) -> tuple[tuple[str, ...], Optional[CheckReport]]:
        """The -D/-U options that give Oclgrind's build the device's predefined macros wherever the source
        names one the two builds define differently (kerntune.engine.macros), or the report refusing the
        kernel (a macro that differs and cannot be given) or saying it could not be checked."""
        options, given = macros.split_options(inst.options)
        names = [n for n in macros.source_names(inst.source) if n not in given]
        if not names:
            return (), None
        try:
            device = self._macro_probe("device", names, options)
            checker = self._macro_probe("checker", names, options + OCLGRIND_BUILD_OPTIONS)
        except KerntuneError as e:
            return (), CheckReport(tool=self.tool, status=CheckStatus.UNCHECKED,
                                   message=f"could not compare the device's predefined macros with Oclgrind's: {e.message}")
        same, cannot = macros.equalize(device, checker, macros.presence_only(inst.source))
        if cannot:
            return (), CheckReport(tool=self.tool, status=CheckStatus.MEMORY_ERROR, message=macros.refusal(cannot))
        return tuple(same), None

    def _macro_probe(self, side: str, names: Sequence[str], options: tuple[str, ...]) -> dict:
        """What ``names`` are as macros on the device (``side`` "device") or under Oclgrind ("checker"),
        building with ``options``; each name probed once per process, device and options."""
        from kerntune.backends import parse_device
        from kerntune.engine.supervisor import run_isolated

        known = _MACROS.setdefault((self.device.id if side == "device" else side, options), {})
        new = [n for n in names if n not in known]
        if new:
            if side == "device":
                ref = parse_device(self.device.id)
                known.update(run_isolated(macros.measure, ref.platform, ref.index, new, options, timeout_s=120,
                                          what="probing the device's predefined macros"))
            else:
                with tempfile.TemporaryDirectory(prefix="kerntune-macros-") as tmp:
                    env = self._oclgrind_env(Path(tmp))
                    known.update(run_isolated(macros.measure, 0, 0, new, options, timeout_s=120, env=env,
                                              what="probing Oclgrind's predefined macros"))
        return {n: known[n] for n in names}

    def _oclgrind(self, req: EvalRequest) -> CheckReport:
        """Oclgrind with every check; when one of its own checks cannot follow the kernel (its
        uninitialized-value tracking knows no LLVM `freeze`, say), again without that check,
        and the report says what was left out."""
        report, ran = self._run(req, self._oclgrind_worker, oclgrind_findings)
        fatal = report.report.startswith(OCLGRIND_FATAL)
        crashed = ran is Status.CRASH and report.status is CheckStatus.UNCHECKED
        if (fatal and "Uninitialized" in report.report.splitlines()[0]) or crashed:
            # Oclgrind's uninitialized-value plugin stops on what it cannot follow, or (vector loads
            # such as vload4, Oclgrind 21.10) takes its process down: try once more without it
            why = ("its uninitialized-value plugin crashed" if crashed else
                   report.report.splitlines()[1].strip() if len(report.report.splitlines()) > 1 else "")
            again, _ = self._run(req, lambda log: self._oclgrind_worker(log, uninitialized=False), oclgrind_findings)
            if not again.report.startswith(OCLGRIND_FATAL):
                note = f"uninitialized-value checks off: Oclgrind cannot follow this kernel ({why})"
                return again.model_copy(update={"message": f"{again.message}; {note}" if again.message else note})
            report = again
        if report.report.startswith(OCLGRIND_FATAL):
            return CheckReport(tool=self.tool, status=CheckStatus.UNCHECKED,
                               message="Oclgrind failed on this kernel: " + " ".join(report.report.splitlines()[:2]))
        return report

    def _sanitizer(self, req: EvalRequest) -> CheckReport:
        """compute-sanitizer's tools in turn, on the kernel built without optimization (once more as
        built when that build cannot run), until one reports something."""
        inst = req.candidate
        extra, note = sanitizer_options(inst.source)
        unoptimized = replace(req, candidate=replace(inst, options=tuple(inst.options) + extra))
        report = CheckReport(tool=self.tool, status=CheckStatus.CLEAN)
        for tool in self.tools:
            report, ran = self._run(unoptimized, lambda log, t=tool: self._sanitizer_worker(log, t),
                                    sanitizer_findings)
            if extra and report.status is CheckStatus.UNCHECKED and ran is not None and ran is not Status.OK:
                why = report.message
                report, _ = self._run(req, lambda log, t=tool: self._sanitizer_worker(log, t), sanitizer_findings)
                note = f"checked as built with optimization: the unoptimized (-G) build could not run ({why[:160]})"
            if report.status is not CheckStatus.CLEAN:
                break
        if note:
            report = report.model_copy(update={"message": f"{report.message}; {note}" if report.message else note})
        return report

    # --- one tool run in one fresh process ----------------------------------------------------
    def _run(self, req: EvalRequest, make_worker, findings_of) -> tuple[CheckReport, Status | None]:
        """The tool's report, and how the evaluation under it ended (None: the tool did not start)."""
        with tempfile.TemporaryDirectory(prefix="kerntune-check-") as tmp:
            log = Path(tmp) / "checker.log"
            worker = make_worker(log)
            try:
                r = worker.evaluate(req, self.timeout_s)
            except KerntuneError as e:
                return CheckReport(tool=self.tool, status=CheckStatus.UNCHECKED,
                                   message=f"{self.tool} could not start: {e.message}"), None
            finally:
                worker.close()
            text = log.read_text(errors="replace") if log.exists() else ""
        return self._report(r, findings_of(text)), r.status

    def _report(self, r: EvalResult, found: list[str]) -> CheckReport:
        if found:
            return CheckReport(tool=self.tool, status=CheckStatus.MEMORY_ERROR, message=_headline(found[0]),
                               report=found[0][:4000])
        if r.status is Status.OK:
            return CheckReport(tool=self.tool, status=CheckStatus.CLEAN)
        if r.status is Status.WRONG_RESULT:
            return CheckReport(tool=self.tool, status=CheckStatus.WRONG_RESULT,
                               message=f"wrong under {self.tool}: {r.message}")
        first = r.message.splitlines()[0] if r.message else r.status.value
        return CheckReport(tool=self.tool, status=CheckStatus.UNCHECKED,
                           message=f"{self.tool} could not run it ({r.status.value}): {first}"[:300])

    def _oclgrind_worker(self, log: Path, uninitialized: bool = True):
        from kerntune.engine.supervisor import DeviceWorker

        d = self.device
        env = {**self._oclgrind_env(log.parent), "OCLGRIND_LOG": str(log),
               "OCLGRIND_DATA_RACES": "1", "OCLGRIND_CHECK_API": "1",
               "OCLGRIND_MAX_ERRORS": "16",
               # the simulated device takes the limits of the real one, so what fits there fits here
               "OCLGRIND_MAX_WGSIZE": str(max(d.max_threads_per_block, 1)),
               "OCLGRIND_LOCAL_MEM_SIZE": str(max(d.max_shared_per_block, 1024))}
        if uninitialized:
            env["OCLGRIND_UNINITIALIZED"] = "1"
        return DeviceWorker(DeviceRef("opencl", 0, 0), env=env, exact_alloc=True)

    def _oclgrind_env(self, folder: Path) -> dict[str, str]:
        """The environment in which Oclgrind is a process's only OpenCL platform (its ICD file in ``folder``)."""
        icd = folder / "icd"
        icd.mkdir()
        (icd / "oclgrind.icd").write_text(f"{self._lib}\n")
        return {"OCL_ICD_VENDORS": str(icd), "KERNTUNE_NO_EXTRA_ICD": "1"}

    def _sanitizer_worker(self, log: Path, tool: str):
        from kerntune.backends import parse_device
        from kerntune.engine.supervisor import DeviceWorker

        ref = parse_device(self.device.id)
        prefix = (self._exe, "--tool", tool, "--log-file", str(log), "--print-limit", "16",
                  "--error-exitcode", "0")
        return DeviceWorker(ref, prefix=prefix, exact_alloc=True)


__all__ = ["CHECKER_OFF", "CheckReport", "CheckStatus", "MemoryChecker", "check_shapes", "compute_sanitizer", "off_run_counts",
           "off_run_shapes", "oclgrind_findings", "oclgrind_library", "sanitizer_findings"]
