"""Offline CUDA compilation with nvcc/ptxas: no GPU needed.

Compiles a kernel for a named architecture (default sm_90) to a cubin and
reads ptxas's own report of registers, shared memory, stack and spills.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from kerntune.backends.base import CompileFailed
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import ResourceUsage

DEFAULT_ARCH = "sm_90"
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")
_BARRIERS = re.compile(r"used (\d+) barriers")
# options NVRTC accepts that nvcc spells differently (or does not take)
_NVRTC_ONLY = {"--use_fast_math": "-use_fast_math", "-default-device": None, "--device-as-default-execution-space": None}


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def require_nvcc() -> str:
    path = nvcc_path()
    if path is None:
        raise KerntuneError(ErrorCode.BACKEND, "nvcc is not on PATH: offline CUDA compilation needs the CUDA toolkit",
                            hint="install the CUDA toolkit (nvcc and ptxas), or run `kerntune check` on a machine "
                                 "with a GPU and CuPy")
    return path


@dataclass(frozen=True)
class OfflineCompile:
    resources: ResourceUsage
    log: str
    entry: str            # the (possibly mangled) entry name ptxas reported


def _entry_matches(entry: str, name: str) -> bool:
    return entry == name or entry.startswith(f"_Z{len(name)}{name}")


def parse_ptxas(log: str, kernel_name: str, arch: str) -> tuple[str, ResourceUsage] | None:
    """The resource report of ``kernel_name`` in a ``-Xptxas -v`` log."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _ENTRY.search(line)
        if not m or not _entry_matches(m.group(1), kernel_name):
            continue
        block = []
        for nxt in lines[i + 1:]:
            if _ENTRY.search(nxt):
                break
            block.append(nxt)
        text = "\n".join(block)
        props = _PROPS.search(text)
        used = _USED.search(text)
        smem = _SMEM.search(text)
        cmem = _CMEM.search(text)
        bars = _BARRIERS.search(text)
        return m.group(1), ResourceUsage(
            source="ptxas", arch=m.group(2) or arch,
            registers=int(used.group(1)) if used else None,
            static_shared_bytes=int(smem.group(1)) if smem else 0,
            stack_bytes=int(props.group(1)) if props else None,
            spill_store_bytes=int(props.group(2)) if props else None,
            spill_load_bytes=int(props.group(3)) if props else None,
            local_bytes=int(props.group(1)) if props else None,
            const_bytes=int(cmem.group(1)) if cmem else None,
            barriers=int(bars.group(1)) if bars else None,
        )
    return None


def nvcc_options(options: Sequence[str]) -> list[str]:
    out = []
    for o in options:
        if o in _NVRTC_ONLY:
            if _NVRTC_ONLY[o]:
                out.append(_NVRTC_ONLY[o])
        else:
            out.append(o)
    return out


def compile_offline(source: str, kernel_name: str, arch: str = DEFAULT_ARCH, options: Sequence[str] = (),
                    timeout_s: float = 300, cache_dir: Path | None = None) -> OfflineCompile:
    """Compile ``source`` to a cubin for ``arch`` and return ptxas's report.

    Raises CompileFailed with nvcc's output when it does not compile or the
    kernel is not in it. Results are cached by source, options and arch.
    """
    nvcc = require_nvcc()
    opts = nvcc_options(options)
    key = hashlib.sha256("\0".join([source, kernel_name, arch, *opts]).encode()).hexdigest()[:24]
    cache = (cache_dir or _default_cache()) / f"{key}.log"
    if cache.exists():
        log = cache.read_text()
        found = parse_ptxas(log, kernel_name, arch)
        if found:
            return OfflineCompile(found[1], log, found[0])
    with tempfile.TemporaryDirectory(prefix="kerntune-nvcc-") as tmp:
        src = Path(tmp) / "kernel.cu"
        src.write_text(source)
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", str(Path(tmp) / "kernel.cubin"), *opts, str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise CompileFailed(f"nvcc did not finish within {timeout_s:.0f} s") from None
        log = (proc.stdout + proc.stderr).replace(str(src), "kernel.cu")
    if proc.returncode != 0:
        raise CompileFailed(log.strip() or f"nvcc exited with status {proc.returncode}")
    found = parse_ptxas(log, kernel_name, arch)
    if found is None:
        entries = [m.group(1) for m in _ENTRY.finditer(log)]
        raise CompileFailed(f"no kernel named {kernel_name!r} in the compiled module; entries: "
                            f"{', '.join(entries) or 'none (is it __global__?)'}")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(log)
    except OSError:
        pass
    return OfflineCompile(found[1], log, found[0])


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kerntune" / "nvcc"
