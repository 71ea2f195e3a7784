"""CUDA backend through CuPy: NVRTC compile via ``RawModule``, launches through
the driver, CUDA events for timing. bf16 and fp16 arrays are passed as raw
16-bit device buffers, so any CuPy version works with them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from kerntune.backends.base import Backend, CompileFailed, LaunchFailed
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import DeviceInfo, ResourceUsage
from kerntune.source.instantiate import lowered_expression, type_includes
from kerntune.source.names import parse_kernel_name

# CUDA errors after which the context is unusable (same numbers in the driver
# and runtime APIs): illegal address, launch timeout, assert, hardware stack
# error, illegal instruction, misaligned address, invalid address space,
# invalid PC, launch failure, and the catch-all "unknown".
STICKY_ERRORS = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719, 999})
CUDA_ERROR_NOT_FOUND = 500
DEFAULT_SHARED_LIMIT = 48 * 1024
# <stdint.h> and <cstdint> for NVRTC, which has no C library headers (extension sources include them)
NVRTC_INCLUDE = Path(__file__).resolve().parent / "nvrtc_include"


# names that every nvcc compile gets from glibc's <sys/types.h> (through the host headers nvcc
# includes) and NVRTC does not have; extension sources use them (vLLM's merge_attn_states: `uint`)
GLIBC_SHORT_TYPES = {"uint": "unsigned int", "ushort": "unsigned short", "ulong": "unsigned long"}


def nvrtc_source(source: str, expression: str) -> str:
    """``source`` as NVRTC needs it: the half-precision headers a template argument names, and
    the glibc short type names the code uses without declaring them, before a ``#line 1`` (so
    compile errors keep the source's own line numbers)."""
    code = _COMMENTS.sub(" ", source)
    pre = [f"typedef {full} {name};\n" for name, full in GLIBC_SHORT_TYPES.items()
           if re.search(rf"\b{name}\b", code)
           and not re.search(rf"typedef\b[^;]*\b{name}\s*;|using\s+{name}\s*=|#\s*define\s+{name}\b", code)]
    head = type_includes(expression) + "".join(pre)
    return f"{head}#line 1\n{source}" if head else source


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _cupy():
    try:
        import cupy
    except ImportError as e:
        raise KerntuneError(ErrorCode.BACKEND, f"CuPy is not importable ({e})",
                            hint='install it with `pip install "kerntune[cuda13]"` (or [cuda12]), '
                                 "or use an OpenCL device (--device cpu)") from None
    return cupy


def device_count() -> int:
    try:
        cp = _cupy()
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:  # no driver, no device, or no CuPy: there is no CUDA device
        return 0


def _s(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def describe(ordinal: int) -> DeviceInfo:
    cp = _cupy()
    rt = cp.cuda.runtime
    p = rt.getDeviceProperties(ordinal)
    major, minor = int(p["major"]), int(p["minor"])
    mem_clock_khz = p.get("memoryClockRate")
    bus = p.get("memoryBusWidth")
    peak = (2 * mem_clock_khz * 1e3 * bus / 8 / 1e9) if mem_clock_khz and bus else None
    clock = p.get("clockRate")
    try:
        driver = f"driver {rt.driverGetVersion()}, runtime {rt.runtimeGetVersion()}"
    except Exception:
        driver = ""
    return DeviceInfo(
        id=f"cuda:{ordinal}", backend="cupy", lang="cuda", name=_s(p["name"]), vendor="NVIDIA", kind="gpu",
        arch=f"sm_{major}{minor}", sm_count=int(p["multiProcessorCount"]), warp_size=int(p["warpSize"]),
        max_threads_per_block=int(p["maxThreadsPerBlock"]), max_block_dims=tuple(int(x) for x in p["maxThreadsDim"]),
        max_grid_dims=tuple(int(x) for x in p["maxGridSize"]),
        max_shared_per_block=int(p["sharedMemPerBlock"]),
        max_shared_per_block_optin=int(p.get("sharedMemPerBlockOptin", 0)) or None,
        max_shared_per_sm=int(p.get("sharedMemPerMultiprocessor", 0)) or None,
        registers_per_block=int(p["regsPerBlock"]),
        registers_per_sm=int(p.get("regsPerMultiprocessor", 0)) or None,
        max_threads_per_sm=int(p.get("maxThreadsPerMultiProcessor", 0)) or None,
        max_blocks_per_sm=int(p.get("maxBlocksPerMultiProcessor", 0)) or None,
        l2_bytes=int(p.get("l2CacheSize", 0)) or None, global_mem_bytes=int(p["totalGlobalMem"]),
        clock_mhz=int(clock / 1000) if clock else None, peak_bandwidth_gbs=peak, driver=driver,
    )


class CupyBackend(Backend):
    lang = "cuda"
    name = "cupy"

    def __init__(self, ordinal: int, pool: bool = True):
        cp = self.cp = _cupy()
        n = device_count()
        if ordinal < 0 or ordinal >= n:
            raise KerntuneError(ErrorCode.DEVICE, f"no CUDA device {ordinal} ({n} present)",
                                hint="see `kerntune devices`; use --device cpu for the OpenCL CPU device")
        self.ordinal = ordinal
        self.device = cp.cuda.Device(ordinal)
        self.device.use()
        if not pool:   # one cudaMalloc per buffer: an access past its end is an access past an allocation
            cp.cuda.set_allocator(None)
        self._info = describe(ordinal)
        self._flush = None

    def info(self) -> DeviceInfo:
        return self._info

    def compile(self, source: str, kernel_name: str, options: Sequence[str] = ()) -> Any:
        cp = self.cp
        opts = tuple(options) + (f"-I{NVRTC_INCLUDE}",)
        expression = lowered_expression(source, kernel_name)
        source = nvrtc_source(source, expression)
        try:
            if expression != kernel_name or not parse_kernel_name(kernel_name).is_plain:
                # a template instantiation or a namespaced kernel: NVRTC instantiates the name
                # expression and CuPy looks its lowered (mangled) name up by the same string
                return cp.RawModule(code=source, options=opts,
                                    name_expressions=[expression]).get_function(expression)
            try:
                return cp.RawModule(code=source, options=opts).get_function(kernel_name)
            except cp.cuda.driver.CUDADriverError as e:
                if getattr(e, "status", None) != CUDA_ERROR_NOT_FOUND:
                    raise
                # not extern "C": look the C++ name up through NVRTC's lowered names
                return cp.RawModule(code=source, options=opts, name_expressions=[kernel_name]).get_function(kernel_name)
        except cp.cuda.compiler.CompileException as e:
            raise CompileFailed(str(e)) from None
        except cp.cuda.driver.CUDADriverError as e:
            if getattr(e, "status", None) == CUDA_ERROR_NOT_FOUND:
                raise CompileFailed(f"no kernel named {kernel_name!r} in the module") from None
            raise CompileFailed(f"the driver could not load the module: {e}") from None

    def resources(self, kernel: Any) -> ResourceUsage:
        a = kernel.attributes
        return ResourceUsage(source="cupy", arch=self._info.arch, registers=a.get("num_regs"),
                             static_shared_bytes=a.get("shared_size_bytes"), local_bytes=a.get("local_size_bytes"),
                             const_bytes=a.get("const_size_bytes"), max_threads_per_block=a.get("max_threads_per_block"))

    def alloc(self, nbytes: int) -> Any:
        return self.cp.empty(max(int(nbytes), 1), dtype=np.uint8)

    def view(self, buf: Any, offset: int, nbytes: int) -> Any:
        return buf[int(offset): int(offset) + int(nbytes)]

    def upload(self, buf: Any, host: np.ndarray, offset: int = 0) -> None:
        if host.nbytes:
            buf[offset: offset + host.nbytes].set(np.ascontiguousarray(host).reshape(-1).view(np.uint8))

    def download(self, buf: Any, host: np.ndarray, offset: int = 0) -> None:
        if host.nbytes:
            self.synchronize()
            host.reshape(-1).view(np.uint8)[...] = buf[offset: offset + host.nbytes].get()

    def copy(self, dst: Any, src: Any, nbytes: int) -> Any:
        rt = self.cp.cuda.runtime
        rt.memcpyAsync(dst.data.ptr, src.data.ptr, int(nbytes), rt.memcpyDeviceToDevice,
                       self.cp.cuda.get_current_stream().ptr)

    def launch(self, kernel: Any, grid: tuple[int, ...], block: tuple[int, ...], args: Sequence[Any],
               shared_mem: int = 0) -> Any:
        cp = self.cp
        g = tuple(int(x) for x in grid) + (1,) * (3 - len(grid))
        b = tuple(int(x) for x in block) + (1,) * (3 - len(block))
        try:
            if shared_mem > DEFAULT_SHARED_LIMIT and kernel.max_dynamic_shared_size_bytes < shared_mem:
                kernel.max_dynamic_shared_size_bytes = int(shared_mem)
            kernel(g, b, tuple(args), shared_mem=int(shared_mem))
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
            status = getattr(e, "status", None)
            raise LaunchFailed(f"CUDA refused the launch (grid {g}, block {b}, {shared_mem} B dynamic shared): {e}",
                               fatal=status in STICKY_ERRORS) from None
        return None

    def synchronize(self) -> None:
        cp = self.cp
        try:
            self.device.synchronize()
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
            # an error that surfaces at synchronization is an asynchronous kernel
            # fault; treat the context as poisoned whatever its code
            raise LaunchFailed(f"the kernel failed on the device: {e}", fatal=True) from None

    def flush_l2(self) -> None:
        if self._flush is None:
            size = max(2 * (self._info.l2_bytes or 0), 64 * 2**20)
            self._flush = (self.alloc(size), size)
        buf, size = self._flush
        rt = self.cp.cuda.runtime
        rt.memsetAsync(buf.data.ptr, 0, size, self.cp.cuda.get_current_stream().ptr)

    def _start_timed(self) -> Any:
        ev = self.cp.cuda.Event()
        ev.record()
        return ev

    def _stop_timed(self, token: Any, enqueued: Any) -> Any:
        ev = self.cp.cuda.Event()
        ev.record()
        return token, ev

    def _elapsed_ms(self, handle: Any) -> float:
        start, end = handle
        return float(self.cp.cuda.get_elapsed_time(start, end))

    def scalar(self, value: Any, storage: np.dtype) -> Any:
        return storage.type(value)
