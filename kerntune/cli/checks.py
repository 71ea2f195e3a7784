"""Checks of option values that typer's ``min=``/``max=`` cannot make: a number that must be finite
(``nan`` passes a bare float option, ``inf`` passes a ``min=``), and a number of seconds that must be
above 0. Each is a typer ``callback=``: a bad value is a usage error (exit 2) that names the option,
as typer's own bounds are. And the check of a CUDA architecture (--arch) before nvcc is run on it, and
of options that exclude each other."""

from __future__ import annotations

import functools
import math
import re
import subprocess
from typing import Any

import typer

from kerntune.errors import ErrorCode, KerntuneError


SEED_MAX = 2**63 - 1     # a seed is kept in SQLite and JSON as a signed 64-bit integer


def _each(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def finite(value: Any) -> Any:
    """A float option (or a repeatable one): every value an ordinary number, not nan or inf."""
    for v in _each(value):
        if v is not None and not math.isfinite(v):
            raise typer.BadParameter(f"must be a finite number, not {v!r}")
    return value


def seconds(value: Any) -> Any:
    """A timeout in seconds: finite and above 0 (0 or less would fail every step at once)."""
    for v in _each(value):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise typer.BadParameter(f"must be a number of seconds above 0 (e.g. 60 or 0.5), not {v:g}")
    return value


_ARCH = re.compile(r"sm_(\d{2,3})([af]?)")


@functools.cache
def _nvcc_archs() -> list[str]:
    """The real architectures the nvcc on PATH compiles for (sm_75, sm_80, ...); [] without nvcc."""
    from kerntune.backends.nvcc import nvcc_path

    nvcc = nvcc_path()
    if nvcc is None:
        return []
    try:
        proc = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    found = [a for a in proc.stdout.split() if _ARCH.fullmatch(a)] if proc.returncode == 0 else []
    return sorted(found, key=lambda a: int(a[3:]))


def arch_error(arch: str) -> KerntuneError:
    """The usage error for a CUDA architecture nvcc does not take (exit 2), with the form and what nvcc takes."""
    known = _nvcc_archs()
    here = f"; the nvcc here takes {', '.join(known)}" if known else ""
    return KerntuneError(ErrorCode.USAGE, f"unknown CUDA architecture {arch!r} for --arch",
                         hint=f"give a real architecture of the form sm_XY: sm_90 (H100), sm_90a, sm_80 (A100), "
                              f"sm_89 (L4, RTX 40xx){here} (`nvcc --list-gpu-code`)")


def cuda_arch(arch: str) -> str:
    """``arch`` if nvcc can compile a cubin for it (sm_XY, with an 'a' or 'f' suffix where nvcc has
    one), else the usage error: an unknown architecture is the user's mistake, not the kernel's."""
    m = _ARCH.fullmatch(arch)
    known = _nvcc_archs() if m else []
    if m is None or (known and f"sm_{m.group(1)}" not in known):
        raise arch_error(arch)
    return arch


def unsupported_arch(log: str) -> bool:
    """Whether nvcc's output says it refused the architecture (sm_75a: a suffix it has not for it)."""
    return "Unsupported gpu architecture" in log


def exclusive(given: dict[str, bool], hint: str) -> None:
    """A usage error when more than one of these options was given: each names another place for the
    output, and quietly letting one win left the user without the file they asked for."""
    names = [name for name, on in given.items() if on]
    if len(names) > 1:
        raise KerntuneError(ErrorCode.USAGE, f"{' and '.join(names)} cannot be used together", hint=hint)
