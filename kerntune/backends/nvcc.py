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
from kerntune.source.instantiate import instantiation_stub, lowered_expression, mangled_prefix
from kerntune.source.names import KernelNameError, parse_kernel_name, split_args

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


def _candidates(entries: list[str], kernel_name: str) -> list[str]:
    """Entries that may be ``kernel_name``: the symbol itself (extern "C"), or C++ names
    whose mangled form starts with the (qualified) name; a template's instantiations
    continue with ``I``."""
    try:
        kn = parse_kernel_name(kernel_name)
    except KernelNameError:
        return [e for e in entries if e == kernel_name]
    if kn.template_args is None and "::" not in kn.qualified and kn.qualified in entries:
        return [kn.qualified]
    prefix = mangled_prefix(kn.qualified)
    nested = "::" in kn.qualified
    out = []
    for e in entries:
        if not e.startswith(prefix):
            continue
        rest = e[len(prefix):]
        if kn.template_args is not None:
            ok = rest.startswith("I")
        else:
            ok = rest.startswith("E") if nested else not rest[:1].isdigit()
        if ok:
            out.append(e)
    return out


_ALIASES = {"half": "__half", "nv_bfloat16": "__nv_bfloat16", "uint": "unsigned int", "unsigned": "unsigned int",
            "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long",
            "int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short", "uint16_t": "unsigned short",
            "1": "1", "true": "1", "false": "0"}


def _norm_arg(a: str) -> str:
    a = " ".join(a.replace(" >", ">").split())
    a = re.sub(r"^\((?:unsigned |signed )?\w+\)", "", a)        # (unsigned char)3 -> 3
    a = re.sub(r"^(-?\d+)[uUlL]*$", r"\1", a)                        # 128u -> 128
    return _ALIASES.get(a, a)


def demangled_args(entry: str) -> tuple[str, ...] | None:
    """The template arguments of a mangled kernel name, through c++filt (None without it)."""
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if tool is None:
        return None
    try:
        text = subprocess.run([tool, entry], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    head = text.split("(", 1)[0]
    if "<" not in head:
        return None
    inner = head[head.index("<") + 1:head.rindex(">")]
    try:
        return tuple(split_args(inner))
    except KernelNameError:
        return None


def pick_entry(entries: list[str], kernel_name: str) -> str | None:
    """The entry of ``kernel_name`` among ptxas's entries; ambiguous template instantiations are
    told apart by their demangled template arguments."""
    cands = _candidates(entries, kernel_name)
    if len(cands) <= 1:
        return cands[0] if cands else None
    kn = parse_kernel_name(kernel_name)
    if kn.template_args is None:
        return cands[0]
    want = [_norm_arg(a) for a in kn.template_args]
    for e in cands:
        got = demangled_args(e)
        if got is not None and [_norm_arg(a) for a in got[:len(want)]] == want:
            return e
    return None


def parse_ptxas(log: str, kernel_name: str, arch: str) -> tuple[str, ResourceUsage] | None:
    """The resource report of ``kernel_name`` in a ``-Xptxas -v`` log."""
    lines = log.splitlines()
    entry = pick_entry([m.group(1) for m in _ENTRY.finditer(log)], kernel_name)
    if entry is None:
        return None
    for i, line in enumerate(lines):
        m = _ENTRY.search(line)
        if not m or m.group(1) != entry:
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
    kernel_name = lowered_expression(source, kernel_name)
    if parse_kernel_name(kernel_name).template_args is not None:
        source = source + instantiation_stub(kernel_name)
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
