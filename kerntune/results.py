"""Result records shared by the engine, the tuner, the CLI and the reports.

Pydantic models so that every command's ``--json`` output and every stored
record has one schema. :class:`Status` is the one place that names how an
evaluation can end.
"""

from __future__ import annotations

import math
import statistics
from enum import Enum
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from kerntune.errors import ErrorCode


class Status(str, Enum):
    OK = "ok"
    COMPILE_ERROR = "compile_error"
    RESOURCE_LIMIT = "resource_limit"     # does not fit the device (threads, registers, shared memory)
    LAUNCH_FAILURE = "launch_failure"     # the runtime refused the launch
    CRASH = "crash"                       # illegal access, abort: the worker died or its context is poisoned
    TIMEOUT = "timeout"                   # exceeded the time limit (hung kernel); the worker was killed
    WRONG_RESULT = "wrong_result"         # verification failed (also: on a timed run, or on fresh inputs after timing)
    MEMORY_ERROR = "memory_error"         # the memory and race checker (Oclgrind, compute-sanitizer) reported an error
    PRUNED = "pruned"                     # rejected before compiling or launching (tuner)
    ERROR = "error"                       # anything else, with its message

    @property
    def failed(self) -> bool:
        return self is not Status.OK

    @property
    def error_code(self) -> ErrorCode:
        """The exit class of a kernel that failed so: wrong (exit 1), or failed to build or run (4)."""
        if self in (Status.WRONG_RESULT, Status.MEMORY_ERROR):
            return ErrorCode.VERIFY
        if self is Status.COMPILE_ERROR:
            return ErrorCode.COMPILE
        if self is Status.RESOURCE_LIMIT:
            return ErrorCode.RESOURCE
        return ErrorCode.WORKER


class Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class DeviceInfo(Record):
    id: str                                # "cuda:0", "opencl:0:0", "offline:sm_90"
    backend: str                           # "cupy", "opencl", "nvcc", "replay"
    lang: str                              # "cuda" or "opencl"
    name: str
    vendor: str = ""
    kind: str = "gpu"                      # gpu, cpu, accelerator, offline
    arch: Optional[str] = None             # "sm_90"
    sm_count: int = 1                      # SMs / compute units
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_per_block: int = 48 * 1024  # bytes, default limit
    max_shared_per_block_optin: Optional[int] = None
    max_shared_per_sm: Optional[int] = None
    registers_per_block: Optional[int] = None
    registers_per_sm: Optional[int] = None
    max_threads_per_sm: Optional[int] = None
    max_blocks_per_sm: Optional[int] = None
    l2_bytes: Optional[int] = None
    global_mem_bytes: int = 0
    clock_mhz: Optional[int] = None
    peak_bandwidth_gbs: Optional[float] = None
    driver: str = ""
    problem: str = ""                      # why this device cannot be used ("" when it can)
    subgroups: bool = True                 # sub-groups (OpenCL cl_khr_subgroups / cl_intel_subgroups; CUDA warps)
    vector_width: Optional[int] = None     # widest OpenCL vector (elements) its compiler takes natively (8 where
                                           # 16-wide vectors are not native and may crash it); None: not probed
                                           # (a device listing); a DeviceWorker's info has it


class ResourceUsage(Record):
    source: str                            # "cupy", "ptxas", "opencl"
    arch: Optional[str] = None
    registers: Optional[int] = None        # per thread
    static_shared_bytes: Optional[int] = None
    dynamic_shared_bytes: int = 0
    local_bytes: Optional[int] = None      # per thread: CUDA local memory / OpenCL private memory
    spill_store_bytes: Optional[int] = None
    spill_load_bytes: Optional[int] = None
    stack_bytes: Optional[int] = None
    const_bytes: Optional[int] = None
    barriers: Optional[int] = None
    max_threads_per_block: Optional[int] = None  # the compiled kernel's own limit

    @property
    def spills(self) -> bool:
        return bool((self.spill_store_bytes or 0) + (self.spill_load_bytes or 0))


class ArgCheck(Record):
    name: str
    ok: bool
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_l2_err: float = 0.0
    bad_elements: int = 0                  # elements failing the check, nonfinite ones included
    nonfinite_elements: int = 0            # of those, NaN or Inf where the reference differs
    first_bad_index: Optional[list[int]] = None
    got: Optional[int | float] = None          # int for integer outputs: exact beyond 2**53
    expected: Optional[int | float] = None
    reason: str = ""      # "", "unwritten", "nonfinite", "tolerance", "input modified", "written past its end",
    #                       "written before its start", "less accurate", "biased"
    settled: str = ""                      # passed only by the NumPy reference's verdict: why (engine.judge.settle)
    past_end: Optional[int] = None         # written past its end: the first element changed after its last
    watched_bytes: int = 0                 # ... within this many bytes after it (engine.judge.canary_bytes)
    before_start: Optional[int] = None     # written before its start: the nearest element changed before its first
    # less accurate (engine.judge.as_accurate): rel_l2_err is the run's against the NumPy reference, this the
    # reference kernel's, accuracy_limit the most the run's may be
    original_rel_l2_err: Optional[float] = None
    accuracy_limit: Optional[float] = None
    atol: Optional[float] = None           # elements out of bounds: the absolute bound they missed (engine.verify)
    # biased (engine.judge._biased, engine.bias): the run's systematic error against the NumPy reference, a
    # relative "scale" (outputs times 1 + bias) or "offset" (over the reference's RMS), the reference kernel's,
    # and how many standard errors the difference is; accuracy_limit is then the most the difference may be
    bias_kind: str = ""
    bias: Optional[float] = None
    original_bias: Optional[float] = None
    bias_z: Optional[float] = None

    @field_validator("max_abs_err", "max_rel_err", "rel_l2_err", mode="before")
    @classmethod
    def _unbounded(cls, v):
        """An error that overflowed (outputs at Inf where the reference is finite) is written to JSON as
        null, and read back as infinity: a record holding one could not be read, and stopped the run
        (a gelu_tanh candidate overflowing on the `large` inputs, in an adversarial tour)."""
        return math.inf if v is None else v

    def describe(self) -> str:
        """The failure with its numbers: ``out: tolerance: 2 element(s) off by more than atol + rtol *
        |expected|, max abs err 1, rel L2 err 3.1e-07; first at [12, 40]: got 12, expected 11``."""
        text = f"{self.name}: {self.reason or 'mismatch'}"
        if self.ok:
            return text
        if self.reason in ("tolerance", "nonfinite"):
            nf = self.nonfinite_elements
            nums = [f"{nf} element(s) NaN or Inf unlike the reference"] if nf else []
            if self.bad_elements > nf:
                # not "out of bounds", which reads as a memory access past an array (a newcomer's tour)
                bound = "atol + rtol * |expected|" + (f" (atol {self.atol:.3g})" if self.atol is not None else "")
                nums.append(f"{self.bad_elements - nf} element(s) off by more than {bound}")
            errs = f"max abs err {self.max_abs_err:.3g}, rel L2 err {self.rel_l2_err:.3g}"
            # the error measures cannot take a NaN: they are over the elements finite on both sides
            nums.append(errs + (" where both are finite" if nf else ""))
            text += ": " + ", ".join(nums)
        if self.reason == "less accurate" and self.original_rel_l2_err is not None:
            text += (f": rel L2 err {self.rel_l2_err:.2g} against the NumPy reference, markedly more than the "
                     f"original kernel's {self.original_rel_l2_err:.2g} (at most {self.accuracy_limit or 0:.2g} "
                     f"passes), though within the tolerance of the original's outputs (max abs err "
                     f"{self.max_abs_err:.3g})")
        if self.reason == "biased" and self.bias is not None:
            from kerntune.engine.bias import describe

            z = f"{self.bias_z:.0f} standard errors" if self.bias_z is not None and math.isfinite(self.bias_z) \
                else "no random error"
            text += (f": {describe(self.bias_kind, self.bias, self.original_bias or 0.0)}: a systematic error "
                     f"beyond the original's by more than {(self.accuracy_limit or 0) * 100:.2g}% and by {z}, though within the tolerance of the original's outputs (rel L2 err "
                     f"{self.rel_l2_err:.2g}, the original's {self.original_rel_l2_err or 0:.2g})")
        if self.past_end is not None or self.before_start is not None:
            after = self.past_end is not None
            k = self.past_end if after else self.before_start
            where = ("right after its last element" if after else "right before its first element") if k == 0 else \
                f"{k} element(s) {'after its last' if after else 'before its first'}"
            watched = f"{self.watched_bytes // 2**20} MiB" if self.watched_bytes >= 2**20 else \
                f"{self.watched_bytes // 1024} KiB"
            text += f": {self.bad_elements} element(s) changed in the {watched} {'after' if after else 'before'} it, " \
                    f"the {'first' if after else 'nearest'} {where}"
        if self.first_bad_index is not None:
            text += f"; first at {list(self.first_bad_index)}"
            if self.got is not None and self.reason != "unwritten":
                text += f": got {self.got:.9g}, expected {self.expected:.9g}" \
                    if isinstance(self.got, float) or isinstance(self.expected, float) \
                    else f": got {self.got}, expected {self.expected}"
        return text


def settled_summary(settled: list[str]) -> str:
    """Checks passed only by the NumPy reference's verdict (``Verification.settled``), in one phrase."""
    return (f"{len(settled)} check{'s' if len(settled) != 1 else ''} settled by the NumPy reference (docs/proof.md), "
            f"first {settled[0]}")


class ShapeCheck(Record):
    shape: dict[str, int]
    label: str
    holdout: bool = False
    seed: int
    ok: bool
    args: list[ArgCheck] = []
    message: str = ""
    distribution: str = "spec"             # the input distribution (kerntune.engine.distributions)
    stage: str = "verify"                  # verify; timed (a timed run's outputs); fresh inputs (after timing)
    checked: bool = True                   # False: not made (ok, with why in message), e.g. other scalar values
                                           # where the original kernel writes outside its arrays


class Verification(Record):
    ok: bool
    reference: str                         # "kernel", "numpy", "self"
    seed: int
    shapes: list[ShapeCheck] = []
    distributions: list[str] = []          # the input distributions checked
    left_out: dict[str, str] = {}          # distributions left out of a run, and why (the original fails there)

    def settled(self) -> list[str]:
        """Each output that passed only by the NumPy reference's verdict, and why."""
        return [f"{s.label}: {a.name}: {a.settled}" for s in self.shapes for a in s.args if a.ok and a.settled]

    def unchecked(self) -> str:
        """The checks that were not made, in one phrase ("" when every check was made): without it a
        check skipped on every shape looked the same as one passed."""
        skipped = [s for s in self.shapes if not s.checked]
        if not skipped:
            return ""
        what = skipped[0].stage.split(":")[0]
        labels = ", ".join(dict.fromkeys(s.label for s in skipped))
        why = skipped[0].message.removeprefix("not checked: ")
        if any(s.checked and s.stage.split(":")[0] == what for s in self.shapes):
            return f"{what}: not checked on {labels} ({why})"
        return f"{what}: not checked on any shape ({labels}: {why})"

    def first_failure(self) -> str:
        for s in self.shapes:
            if not s.ok:
                bad = [a for a in s.args if not a.ok]
                inputs = f" (inputs: {s.distribution})" if s.distribution != "spec" else ""
                stage = f" ({s.stage})" if s.stage != "verify" else ""
                if bad:
                    return f"{s.label}{inputs}{stage}: {bad[0].describe()}" + (f" ({s.message})" if s.message else "")
                return f"{s.label}{inputs}{stage}: {s.message}"
        return ""


class TimingStats(Record):
    n: int
    warmup: int
    median_ms: float
    min_ms: float
    max_ms: float
    q1_ms: float
    q3_ms: float
    mean_ms: float
    std_ms: float
    l2_flushed: bool = True
    stopped_early: bool = False

    @classmethod
    def from_samples(cls, samples: list[float], warmup: int, l2_flushed: bool = True,
                     stopped_early: bool = False) -> "TimingStats":
        if not samples:
            raise ValueError("no timing samples")
        a = np.asarray(samples, dtype=np.float64)
        q1, med, q3 = np.percentile(a, [25, 50, 75])
        return cls(n=len(a), warmup=warmup, median_ms=float(med), min_ms=float(a.min()), max_ms=float(a.max()),
                   q1_ms=float(q1), q3_ms=float(q3), mean_ms=float(a.mean()),
                   std_ms=float(statistics.pstdev(samples)) if len(a) > 1 else 0.0,
                   l2_flushed=l2_flushed, stopped_early=stopped_early)

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms


class CopyBandwidth(Record):
    bytes_per_copy: int
    stats: TimingStats

    @property
    def gbs(self) -> float:
        """Read + write bytes per second, in GB/s (1e9)."""
        return 2 * self.bytes_per_copy / (self.stats.median_ms * 1e-3) / 1e9


class ShapeTiming(Record):
    shape: dict[str, int]
    label: str
    stats: TimingStats
    bytes_moved: int
    achieved_gbs: float
    pct_of_copy: Optional[float] = None


class CheckStatus(str, Enum):
    CLEAN = "clean"
    MEMORY_ERROR = "memory_error"     # the tool reported an error
    WRONG_RESULT = "wrong_result"     # wrong results under the tool (a race that the device hid, say)
    UNCHECKED = "unchecked"           # could not be checked; ``message`` says why


class CheckReport(Record):
    """What the memory and race checker (kerntune.engine.checker) found."""

    tool: str = ""                    # "oclgrind", "compute-sanitizer"
    status: CheckStatus
    message: str = ""                 # the first finding in one line, or why there was no check
    report: str = ""                  # the tool's first report, as it wrote it
    shapes: list[str] = []
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in (CheckStatus.MEMORY_ERROR, CheckStatus.WRONG_RESULT)


class EvalResult(Record):
    """Everything one evaluation of one kernel produced."""

    status: Status
    message: str = ""
    reason: str = ""                       # for RESOURCE_LIMIT / PRUNED: which limit (see hardware.LaunchProblem)
    kernel: str = ""                       # label of the kernel under test
    compile_log: str = ""
    resources: Optional[ResourceUsage] = None
    verification: Optional[Verification] = None
    timings: list[ShapeTiming] = []
    copy_bandwidth: Optional[CopyBandwidth] = None
    device: Optional[DeviceInfo] = None
    seconds: float = 0.0
    check: Optional[CheckReport] = None        # the memory and race checker's report, when it ran

    def timing_for(self, key: dict[str, int]) -> Optional[ShapeTiming]:
        for t in self.timings:
            if t.shape == key:
                return t
        return None


class TimedKernel(Record):
    """One kernel of a paired, interleaved timing session (see :class:`Comparison`)."""

    label: str
    status: Status
    message: str = ""
    samples_ms: list[float] = []             # run i of every kernel was timed in the same round i
    timing: Optional[ShapeTiming] = None
    check: Optional[ShapeCheck] = None       # the failed check, when a timed run's outputs were wrong


class Comparison(Record):
    """Several kernels timed on one shape, interleaved run by run on the same buffers."""

    shape: dict[str, int]
    label: str
    kernels: list[TimedKernel] = []
    copy_bandwidth: Optional[CopyBandwidth] = None
    seconds: float = 0.0

