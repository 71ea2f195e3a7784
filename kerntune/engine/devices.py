"""Which device a command runs on: enumeration (in a throwaway process, so the
CLI never initializes a GPU driver itself) and resolution of ``--device``."""

from __future__ import annotations

import os
from functools import lru_cache

from kerntune.backends import DEVICE_HELP, DeviceRef, enumerate_devices, parse_device
from kerntune.engine.supervisor import run_isolated
from kerntune.errors import ErrorCode, KerntuneError
from kerntune.results import DeviceInfo


@lru_cache(maxsize=1)
def all_devices() -> tuple[DeviceInfo, ...]:
    return tuple(run_isolated(enumerate_devices, timeout_s=120, what="listing devices"))


def with_vector_widths(devices: tuple[DeviceInfo, ...]) -> tuple[DeviceInfo, ...]:
    """``devices`` with each usable OpenCL device's widest native vector probed (a small compile in a
    throwaway process, about 0.3 s a device; what a worker on it would find and the rules would read)."""
    from kerntune.engine.supervisor import vector_width

    return tuple(d.model_copy(update={"vector_width": vector_width(_ref(d))})
                 if d.backend == "opencl" and not d.problem and d.vector_width is None else d for d in devices)


def _ref(info: DeviceInfo) -> DeviceRef:
    ref = parse_device(info.id)
    assert isinstance(ref, DeviceRef)
    return ref


def _usable(devices: tuple[DeviceInfo, ...], **match: str) -> list[DeviceInfo]:
    return [d for d in devices if not d.problem and all(getattr(d, k) == v for k, v in match.items())]


def resolve(text: str | None, lang: str) -> tuple[DeviceRef, DeviceInfo]:
    """The device for a kernel in ``lang``: ``--device`` as given, or the default
    (CUDA GPU 0 for CUDA; an OpenCL GPU, else the OpenCL CPU device, for OpenCL)."""
    devices = all_devices()
    if text is None:
        if lang == "cuda":
            cuda = _usable(devices, backend="cupy")
            if not cuda:
                raise KerntuneError(ErrorCode.DEVICE, "this CUDA kernel needs a CUDA GPU, and none was found",
                                    hint="`kerntune check` compiles CUDA offline with nvcc (no GPU needed); to run on "
                                         "the CPU, use an OpenCL version of the kernel (.cl) with --device cpu")
            return _ref(cuda[0]), cuda[0]
        for kind in ("gpu", "cpu", "accelerator"):
            found = _usable(devices, backend="opencl", kind=kind)
            if found:
                return _ref(found[0]), found[0]
        raise _no_opencl(devices)
    ref = parse_device(text)
    if ref == "cpu":
        found = _usable(devices, backend="opencl", kind="cpu")
        if not found:
            raise _no_opencl(devices, cpu=True)
        ref = _ref(_preferred_cpu(found))
    if ref.lang != lang:
        if lang == "opencl":
            raise KerntuneError(ErrorCode.DEVICE, f"an OpenCL kernel cannot run on CUDA device {ref.id}",
                                hint="use --device cpu or --device opencl:P:D (see `kerntune devices`)")
        raise KerntuneError(ErrorCode.DEVICE, f"a CUDA kernel cannot run on OpenCL device {ref.id}",
                            hint="use a CUDA ordinal (--device 0), or `kerntune check` for an offline compile")
    for d in devices:
        if d.id == ref.id:
            if d.problem:
                raise KerntuneError(ErrorCode.DEVICE, f"device {d.id} ({d.name}) cannot be used: {d.problem}")
            return ref, d
    # the hint names the devices this kernel can run on: 'devices here: opencl:0:0' for a CUDA kernel on a
    # machine with no GPU sent the user to a device that refuses the kernel
    mine = [d.id for d in devices if (d.backend == "opencl") == (lang == "opencl")]
    others = [d.id for d in devices if d.id not in mine]
    if mine:
        hint = f"{'CUDA' if lang == 'cuda' else 'OpenCL'} devices here: {', '.join(mine)}. {DEVICE_HELP}"
    elif lang == "cuda":
        hint = ("no CUDA GPU was found here" + (f" (only OpenCL devices: {', '.join(others)})" if others else "")
                + ": a CUDA kernel needs one; `kerntune check` compiles it offline with nvcc, and an OpenCL version "
                  "of the kernel (.cl) runs on --device cpu")
    else:
        hint = f"no OpenCL device was found here; `kerntune devices` says what is installed. {DEVICE_HELP}"
    raise KerntuneError(ErrorCode.DEVICE, f"no device {ref.id}", hint=hint)


CPU_PLATFORM_ENV = "KERNTUNE_CPU_PLATFORM"


def _preferred_cpu(found: list[DeviceInfo]) -> DeviceInfo:
    """The first usable CPU device, or the one whose platform names ``$KERNTUNE_CPU_PLATFORM``
    (e.g. ``Portable`` for PoCL, ``Intel`` for Intel's runtime): how a test run picks its runtime."""
    want = os.environ.get(CPU_PLATFORM_ENV, "").strip().lower()
    if not want:
        return found[0]
    for d in found:
        if want in d.driver.lower() or want in d.name.lower():
            return d
    raise KerntuneError(ErrorCode.DEVICE, f"no usable OpenCL CPU device on a platform matching {want!r} "
                                          f"(${CPU_PLATFORM_ENV})",
                        hint="usable CPU devices: " + ", ".join(f"{d.id} ({d.driver})" for d in found))


def _no_opencl(devices: tuple[DeviceInfo, ...], cpu: bool = False) -> KerntuneError:
    broken = [d for d in devices if d.backend == "opencl" and d.problem and (not cpu or d.kind == "cpu")]
    what = "OpenCL CPU device" if cpu else "OpenCL device"
    if broken:
        d = broken[0]
        return KerntuneError(ErrorCode.DEVICE, f"no usable {what}: {d.id} ({d.name}) {d.problem}")
    return KerntuneError(ErrorCode.DEVICE, f"no {what} found",
                         hint='install PoCL with `pip install "pyopencl[pocl]"` (or Intel\'s CPU runtime with '
                              '`pip install "kerntune[intel-cpu]"`)')
