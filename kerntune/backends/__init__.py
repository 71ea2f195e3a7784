"""Backends, found by name: ``cupy`` (CUDA), ``opencl`` (PyOpenCL), plus the
offline ``nvcc`` compiler. Device strings: ``0`` / ``cuda:0``, ``cpu``,
``opencl:P:D``."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from kerntune.errors import ErrorCode, KerntuneError

BACKEND_MODULES = {"cupy": "kerntune.backends.cupy", "opencl": "kerntune.backends.opencl"}
LANG_OF_BACKEND = {"cupy": "cuda", "opencl": "opencl"}
DEVICE_HELP = "--device takes a CUDA ordinal (0, cuda:1), 'cpu' (the OpenCL CPU device) or opencl:PLATFORM:DEVICE"


@dataclass(frozen=True)
class DeviceRef:
    backend: str          # "cupy" or "opencl"
    index: int = 0        # CUDA ordinal, or OpenCL device index
    platform: int = 0     # OpenCL platform index

    @property
    def id(self) -> str:
        return f"cuda:{self.index}" if self.backend == "cupy" else f"opencl:{self.platform}:{self.index}"

    @property
    def lang(self) -> str:
        return LANG_OF_BACKEND[self.backend]


def parse_device(text: str) -> DeviceRef | str:
    """A concrete DeviceRef, or the keyword 'cpu' (resolved by enumeration)."""
    t = text.strip().lower()
    if t == "cpu":
        return "cpu"
    if re.fullmatch(r"\d+", t):
        return DeviceRef("cupy", int(t))
    m = re.fullmatch(r"(?:cuda|gpu):(\d+)", t)
    if m:
        return DeviceRef("cupy", int(m.group(1)))
    m = re.fullmatch(r"(?:opencl|cl):(\d+):(\d+)", t)
    if m:
        return DeviceRef("opencl", int(m.group(2)), int(m.group(1)))
    raise KerntuneError(ErrorCode.USAGE, f"cannot understand device {text!r}", hint=DEVICE_HELP)


def open_backend(ref: DeviceRef, exact_alloc: bool = False):
    """Construct the backend for a device (call this inside a worker process). With
    ``exact_alloc``, every buffer is its own device allocation (CuPy's pool is off), as
    a memory checker needs; OpenCL buffers always are. (The worker then leaves out the canary.)"""
    module = importlib.import_module(BACKEND_MODULES[ref.backend])
    if ref.backend == "cupy":
        return module.CupyBackend(ref.index, pool=not exact_alloc)
    return module.OpenCLBackend(ref.platform, ref.index)


def enumerate_devices() -> list:
    """DeviceInfo for every CUDA device (through CuPy) and OpenCL device."""
    from kerntune.backends import cupy as cupy_backend
    from kerntune.backends import opencl as opencl_backend

    out = []
    for i in range(cupy_backend.device_count()):
        try:
            out.append(cupy_backend.describe(i))
        except Exception:  # a device the driver lists but cannot describe is left out
            continue
    try:
        found = opencl_backend.list_devices()
    except KerntuneError as e:
        if e.code is not ErrorCode.BACKEND:
            raise
        # PyOpenCL cannot be imported: a CUDA machine still lists its GPUs (and a command that
        # needs OpenCL says what to install when it finds no OpenCL device)
        found = []
    for p, d, dev in found:
        out.append(opencl_backend.describe(p, d, dev, check=True))
    return out
