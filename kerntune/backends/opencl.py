"""OpenCL backend through PyOpenCL; tested on PoCL (the CPU), works on any
OpenCL device. The launch grid/block of a spec are in CUDA terms: the global
size is grid * block per dimension, the local size is block."""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from kerntune.backends.base import Backend, CompileFailed, LaunchFailed
from kerntune.backends.compile_log import opencl_build_log
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import DeviceInfo, ResourceUsage


# read and written, so that no store can bypass the caches (a CPU may write zeros with streaming stores)
FLUSH_SOURCE = "__kernel void kerntune_flush(__global uint4* p) { p[get_global_id(0)] += (uint4)(1); }"
# the copy whose bandwidth kernels are compared with: a kernel, parallel like theirs (a CPU runtime's
# copy command may be one thread's memcpy, a fraction of what the device moves)
COPY_SOURCE = ("__kernel void kerntune_copy(__global uint4* d, __global const uint4* s) "
               "{ d[get_global_id(0)] = s[get_global_id(0)]; }")
PROBE_SOURCE = "__kernel void kerntune_probe(__global float* a) { a[get_global_id(0)] = 1.0f; }"
# 16-wide vectors: built, never run; see widest_vector
VECTOR_PROBE_SOURCE = ("__kernel void kerntune_vec16(__global float* a) "
                       "{ size_t i = get_global_id(0); vstore16(vload16(i, a) * 2.0f, i, a); }")
SYSTEM_ICD_DIR = Path("/etc/OpenCL/vendors")


def intel_cpu_runtime() -> Path | None:
    """Intel's CPU OpenCL runtime when installed from PyPI (``kerntune[intel-cpu]``)."""
    lib = Path(sys.prefix) / "lib" / "libintelocl.so"
    return lib if lib.exists() else None


def prepare_icd_environment() -> None:
    """Make the OpenCL ICD loader see Intel's CPU runtime when it is installed
    in this environment: its wheel ships an .icd file with a placeholder path,
    so kerntune writes a correct one beside copies of the system's .icd files
    and points ``OCL_ICD_VENDORS`` at that folder. Must run before PyOpenCL
    is first imported in a process."""
    lib = intel_cpu_runtime()
    if lib is None or os.environ.get("KERNTUNE_NO_EXTRA_ICD"):
        return
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    # one folder per installed runtime: two environments (a venv and the project's) shared one folder and
    # rewrote its .icd file with their own paths, in place, while the other's processes read it
    icd_dir = Path(base) / "kerntune" / f"icd-{hashlib.sha256(str(lib).encode()).hexdigest()[:12]}"
    current = os.environ.get("OCL_ICD_VENDORS")
    if current and Path(current) == icd_dir:
        return
    try:
        icd_dir.mkdir(parents=True, exist_ok=True)
        source = Path(current) if current and Path(current).is_dir() else SYSTEM_ICD_DIR
        files = {f.name: f.read_text() for f in source.glob("*.icd")} if source.is_dir() else {}
        files["kerntune-intel-cpu.icd"] = str(lib) + "\n"
        for name, text in files.items():
            _put_icd(icd_dir / name, text)
    except OSError:
        return
    os.environ["OCL_ICD_VENDORS"] = str(icd_dir)


def _put_icd(path: Path, text: str) -> None:
    """Write an .icd file only when it differs, and never in place: another kerntune process's ICD loader
    may be reading it, and a file truncated by write_text read as empty there; that process then saw no
    Intel platform, took PoCL for opencl:0:0, and its run named two devices (the search's and the test's)."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _cl():
    prepare_icd_environment()
    try:
        import pyopencl as cl
    except ImportError as e:  # pragma: no cover - pyopencl is a hard dependency
        raise KerntuneError(ErrorCode.BACKEND, f"PyOpenCL is not importable: {e}",
                            hint='pip install "pyopencl[pocl]"') from None
    # kerntune reads and reports build logs itself
    warnings.filterwarnings("ignore", category=cl.CompilerWarning)
    return cl


def list_devices() -> list[tuple[int, int, Any]]:
    """(platform index, device index, device) for every OpenCL device."""
    cl = _cl()
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    for p, plat in enumerate(platforms):
        try:
            devs = plat.get_devices()
        except cl.Error:
            continue
        for d, dev in enumerate(devs):
            out.append((p, d, dev))
    return out


def _kind(dev: Any) -> str:
    cl = _cl()
    if dev.type & cl.device_type.GPU:
        return "gpu"
    if dev.type & cl.device_type.CPU:
        return "cpu"
    return "accelerator"


def probe(dev: Any) -> str:
    """Compile a trivial kernel; return why the device cannot build programs ('' when it can)."""
    cl = _cl()
    try:
        ctx = cl.Context([dev])
        cl.Program(ctx, PROBE_SOURCE).build()
    except cl.Error as e:
        text = str(e)
        if "unknown target CPU" in text:
            fix = ("use the Intel CPU OpenCL device instead" if intel_cpu_runtime() else
                   'install Intel\'s CPU runtime with `pip install "kerntune[intel-cpu]"`')
            return f"its compiler does not know this CPU model (PoCL's LLVM is older than the CPU); {fix}"
        return "cannot build a trivial kernel: " + " ".join(text.split())[:200]
    return ""


def find_device(platform: int, device: int) -> Any:
    """The OpenCL device ``opencl:platform:device``; a clear error naming the ones there are if none."""
    devs = {(p, d): dev for p, d, dev in list_devices()}
    if (platform, device) not in devs:
        have = ", ".join(f"opencl:{p}:{d}" for p, d in devs) or "none"
        raise KerntuneError(ErrorCode.DEVICE, f"no OpenCL device opencl:{platform}:{device}",
                            hint=f"available: {have} (see `kerntune devices`)")
    return devs[(platform, device)]


def widest_vector(platform: int, device: int) -> int:
    """16, or 8 where the device's compiler cannot take 16-wide vectors natively: PoCL's LLVM, when its target
    has no AVX-512 (CPUs without it, and CPUs newer than its LLVM, which it builds for as a generic x86-64),
    warns that a float16 "changes the ABI" and then crashes (LLVM ERROR, SIGSEGV) on some kernels that use
    them, e.g. a vload16 in a loop, and a process that has built one may crash later on kernels without
    them; Intel's runtime splits them itself. Learned from one build of a kernel with float16 loads and
    stores (never run) on this device alone: the supervisor calls it in a throwaway process (not in a
    worker, nor while listing devices, where a PoCL build after one of Intel's runtime can abort the
    process: two LLVMs in one process)."""
    cl = _cl()
    dev = find_device(platform, device)
    prg = cl.Program(cl.Context([dev]), VECTOR_PROBE_SOURCE)
    try:
        prg.build()
    except cl.Error:
        return 8
    log = prg.get_build_info(dev, cl.program_build_info.LOG) or ""
    return 8 if "changes the ABI" in log else 16


CPU_FLUSH_BYTES = 64 * 2**20


def flush_bytes(info: DeviceInfo) -> int:
    """Bytes written before each timed run: twice the reported cache and at least 64 MiB; on a
    CPU exactly 64 MiB, whatever the runtime reports (Intel's CPU runtime reports one core's cache,
    PoCL the whole last-level cache, 480 MiB on some hosts: twice that would be 960 MiB a run), so
    both runtimes flush alike (see README, "Timing")."""
    if info.kind == "cpu":
        return CPU_FLUSH_BYTES
    return max(2 * (info.l2_bytes or 0), CPU_FLUSH_BYTES) // 16 * 16


def has_subgroups(dev: Any) -> bool:
    """Sub-group functions: an extension (OpenCL 2.x) or the OpenCL C 3.0 feature."""
    exts = set((dev.extensions or "").split())
    if exts & {"cl_khr_subgroups", "cl_intel_subgroups"}:
        return True
    try:
        features = {f.name for f in dev.opencl_c_features}
    except Exception:       # OpenCL < 3.0 devices (and ICD loaders) have no feature query
        features = set()
    return "__opencl_c_subgroups" in features


def describe(p: int, d: int, dev: Any, check: bool = False) -> DeviceInfo:
    kind = _kind(dev)
    vendor = dev.vendor.strip()
    warp = 32 if "NVIDIA" in vendor.upper() else 64 if ("AMD" in vendor.upper() and kind == "gpu") else 1
    dims = list(dev.max_work_item_sizes) + [1, 1, 1]
    cache = int(dev.global_mem_cache_size or 0)
    return DeviceInfo(
        id=f"opencl:{p}:{d}", backend="opencl", lang="opencl", name=dev.name.strip(), vendor=vendor, kind=kind,
        sm_count=int(dev.max_compute_units), warp_size=warp,
        max_threads_per_block=int(dev.max_work_group_size), max_block_dims=tuple(int(x) for x in dims[:3]),
        max_grid_dims=(2**31 - 1, 2**31 - 1, 2**31 - 1),
        max_shared_per_block=int(dev.local_mem_size), max_shared_per_sm=int(dev.local_mem_size),
        l2_bytes=cache or None, global_mem_bytes=int(dev.global_mem_size),
        clock_mhz=int(dev.max_clock_frequency or 0) or None,
        driver=f"{dev.platform.name.strip()} {dev.driver_version.strip()}",
        subgroups=has_subgroups(dev),
        problem=probe(dev) if check else "",
    )




class OpenCLBackend(Backend):
    lang = "opencl"
    name = "opencl"

    def __init__(self, platform: int, device: int):
        cl = self.cl = _cl()
        self.dev = find_device(platform, device)
        self._info = describe(platform, device, self.dev)
        self.ctx = cl.Context([self.dev])
        self.queue = cl.CommandQueue(self.ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self._flush_buf = None
        self._copy_kernel = None
        self._logs: dict[int, str] = {}

    def info(self) -> DeviceInfo:
        return self._info

    def compile(self, source: str, kernel_name: str, options: Sequence[str] = ()) -> Any:
        cl = self.cl
        prg = cl.Program(self.ctx, source)
        try:
            prg.build(options=list(options))
        except cl.Error as e:
            log = ""
            try:
                log = prg.get_build_info(self.dev, cl.program_build_info.LOG)
            except cl.Error:
                pass
            raise CompileFailed(opencl_build_log(log or str(e))) from None
        try:
            kernel = cl.Kernel(prg, kernel_name)
        except cl.Error:
            names = sorted(k.function_name for k in prg.all_kernels())
            raise CompileFailed(f"no kernel named {kernel_name!r} in the program; it defines: "
                                f"{', '.join(names) or 'none'}") from None
        try:
            self._logs[id(kernel)] = (prg.get_build_info(self.dev, cl.program_build_info.LOG) or "").strip()
        except cl.Error:
            pass
        return kernel

    def compile_log(self, kernel: Any) -> str:
        return self._logs.get(id(kernel), "")

    def resources(self, kernel: Any) -> ResourceUsage:
        wg = self.cl.kernel_work_group_info
        q = lambda attr: int(kernel.get_work_group_info(attr, self.dev))  # noqa: E731
        return ResourceUsage(source="opencl", static_shared_bytes=q(wg.LOCAL_MEM_SIZE),
                             local_bytes=q(wg.PRIVATE_MEM_SIZE), max_threads_per_block=q(wg.WORK_GROUP_SIZE))

    def alloc(self, nbytes: int) -> Any:
        return self.cl.Buffer(self.ctx, self.cl.mem_flags.READ_WRITE, size=max(int(nbytes), 1))

    def view(self, buf: Any, offset: int, nbytes: int) -> Any:
        return buf.get_sub_region(int(offset), int(nbytes))

    def upload(self, buf: Any, host: np.ndarray, offset: int = 0) -> None:
        if host.nbytes:
            self.cl.enqueue_copy(self.queue, buf, np.ascontiguousarray(host), dst_offset=int(offset))

    def download(self, buf: Any, host: np.ndarray, offset: int = 0) -> None:
        if host.nbytes:
            self.cl.enqueue_copy(self.queue, host, buf, src_offset=int(offset))
        self.queue.finish()

    def copy(self, dst: Any, src: Any, nbytes: int) -> Any:
        return self.cl.enqueue_copy(self.queue, dst, src, byte_count=int(nbytes))

    def bandwidth_copy(self, dst: Any, src: Any, nbytes: int) -> Any:
        if nbytes % 16:
            return self.copy(dst, src, nbytes)
        if self._copy_kernel is None:
            self._copy_kernel = self.cl.Kernel(self.cl.Program(self.ctx, COPY_SOURCE).build(), "kerntune_copy")
        self._copy_kernel.set_args(dst, src)
        return self.cl.enqueue_nd_range_kernel(self.queue, self._copy_kernel, (nbytes // 16,), None)

    def launch(self, kernel: Any, grid: tuple[int, ...], block: tuple[int, ...], args: Sequence[Any],
               shared_mem: int = 0) -> Any:
        cl = self.cl
        if shared_mem:
            raise LaunchFailed(f"the launch asks for {int(shared_mem)} B of dynamic shared memory (shared_mem), a CUDA "
                               "launch parameter: an OpenCL kernel declares its local memory as fixed-size __local "
                               "arrays; give this implementation its own launch (spec `launches`) with shared_mem 0")
        ndim = max(len(grid), len(block))
        grid = tuple(int(g) for g in grid) + (1,) * (ndim - len(grid))     # a 3-D grid with a 2-D block is 3-D
        block = tuple(int(b) for b in block) + (1,) * (ndim - len(block))
        global_size = tuple(g * b for g, b in zip(grid, block))
        try:
            kernel.set_args(*args)
            return cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, block)
        except TypeError as e:          # PyOpenCL: another number of arguments than the kernel takes
            raise LaunchFailed(f"the kernel's parameters do not match the {len(args)} arguments of the spec: {e}") \
                from None
        except cl.Error as e:
            raise LaunchFailed(f"OpenCL refused the launch (global {global_size}, local {tuple(block)}): {e}") from None

    def synchronize(self) -> None:
        try:
            self.queue.finish()
        except self.cl.Error as e:
            raise LaunchFailed(f"OpenCL queue failed: {e}", fatal=True) from None

    def flush_l2(self) -> None:
        if self._flush_buf is None:
            # written by a kernel, in parallel: a fill command is an order of magnitude slower on CPUs
            size = flush_bytes(self._info)
            prg = self.cl.Program(self.ctx, FLUSH_SOURCE).build()
            self._flush_buf = (self.alloc(size), size, self.cl.Kernel(prg, "kerntune_flush"))
        buf, size, kernel = self._flush_buf
        kernel.set_args(buf)
        self.cl.enqueue_nd_range_kernel(self.queue, kernel, (size // 16,), None)

    def _start_timed(self) -> Any:
        return None

    def _stop_timed(self, token: Any, enqueued: Any) -> Any:
        return enqueued

    def _elapsed_ms(self, handle: Any) -> float:
        return (handle.profile.end - handle.profile.start) * 1e-6
