"""Checks of a spec against the kernel it describes and the device it runs on.

``signature_problems`` compares the spec's arguments with the kernel's
parameters (count, order, pointer vs scalar, element type), so a spec that
would crash a launch or reinterpret memory is refused before anything runs.
``memory_problems`` checks that every shape's arrays fit the device (and the
host, which holds copies of them), so a typo that asks for terabytes is a
clear error instead of an allocation failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerntune.source.parse import KernelFunction
from kerntune.source.types import compatible, dtype_of, substitute
from kerntune.spec.model import KernelSpec, Shape


@dataclass(frozen=True)
class Mismatch:
    arg: int | None            # index into spec.args (None: the list as a whole)
    message: str


def _param_words(k: KernelFunction, i: int) -> str:
    p = k.params[i]
    return f"parameter {i + 1} of {k.qualified_name}, `{p.ctype}{'*' if p.pointer else ''} {p.name}`"


def local_pointers(kernel: KernelFunction) -> list[str]:
    """The kernel's __local pointer parameters: their size is the host's to set per launch
    (clSetKernelArg with a null value), which no spec argument can say."""
    return [p.name for p in kernel.params if p.pointer and p.space == "local"]


def local_pointer_fix(kernel: KernelFunction) -> str:
    first = next(p for p in kernel.params if p.pointer and p.space == "local")
    return (f"declare them inside the kernel as __local arrays of fixed size (e.g. `__local {first.ctype} "
            f"{first.name}[256];`, the most the work-group uses) and drop the parameters")


def signature_problems(spec: KernelSpec, kernel: KernelFunction, bindings: dict[str, str] | None = None,
                       lang: str = "cuda") -> list[Mismatch]:
    """Every way the spec's ``args`` disagree with the kernel's parameters."""
    bindings = bindings or {}
    params = kernel.params
    out: list[Mismatch] = []
    local = local_pointers(kernel)
    if local:
        out.append(Mismatch(None, f"{kernel.qualified_name} takes __local pointer parameters ({', '.join(local)}), "
                                  f"which a spec cannot provide: {local_pointer_fix(kernel)}"))
    if len(spec.args) != len(params):
        names = ", ".join(p.name for p in params)
        out.append(Mismatch(None, f"the spec lists {len(spec.args)} arguments; {kernel.qualified_name} takes "
                                  f"{len(params)} ({names})"))
    positions = {p.name: i for i, p in enumerate(params)}
    for i, a in enumerate(spec.args):
        if i >= len(params):
            out.append(Mismatch(i, f"{a.name!r} has no matching parameter ({kernel.qualified_name} takes "
                                   f"{len(params)})"))
            continue
        p = params[i]
        where = positions.get(a.name)
        if a.name != p.name and where is not None:
            out.append(Mismatch(i, f"{a.name!r} is {_param_words(kernel, where)}, but the spec passes it in "
                                   f"position {i + 1}, where the kernel expects {p.name!r}: reorder args"))
            continue
        if a.is_array and not p.pointer:
            out.append(Mismatch(i, f"{a.name!r} is an array (it has a shape), but {_param_words(kernel, i)} "
                                   "is a scalar: drop 'shape' and give a 'value'"))
            continue
        if not a.is_array and p.pointer:
            out.append(Mismatch(i, f"{a.name!r} is a scalar (it has a value), but {_param_words(kernel, i)} "
                                   "is a pointer: give it a 'shape' (and an intent)"))
            continue
        ptype = dtype_of(substitute(p.ctype, bindings))
        if ptype is not None and not compatible(a.dtype, ptype):
            shown = substitute(p.ctype, bindings)
            want = "uint8 (a C bool is one byte)" if ptype == "bool" else ptype
            out.append(Mismatch(i, f"{a.name!r} is {a.dtype}, but {_param_words(kernel, i)} has element type "
                                   f"{shown!r} ({want})"))
    return out


def shape_bytes(spec: KernelSpec, shape: Shape) -> int:
    """Bytes of every array argument at one shape."""
    from kerntune.engine.inputs import array_shape

    total = 0
    for a in spec.arrays:
        n = 1
        for d in array_shape(a, shape.as_dict()):
            n *= d
        total += n * a.dt.itemsize
    return total


def memory_problems(spec: KernelSpec, shapes: list[Shape], device_bytes: int | None,
                    host_bytes: int | None, device_name: str = "the device") -> list[str]:
    """Shapes whose arrays do not fit: the device's memory (a candidate and the reference, plus
    the pristine copies of inout arrays, are resident together) or the host's."""
    from kerntune.fmt import nbytes as fmt_bytes

    out = []
    for s in shapes:
        n = shape_bytes(spec, s)
        inout = sum(1 for a in spec.arrays if a.intent == "inout")
        need = n * (2 if inout else 1)
        if device_bytes and need > device_bytes:
            out.append(f"shape {s.label}: the arrays need {fmt_bytes(need)}, more than the "
                       f"{fmt_bytes(device_bytes)} of {device_name}")
        elif host_bytes and 3 * n > host_bytes:
            out.append(f"shape {s.label}: the arrays need {fmt_bytes(n)}, and the host holds about three copies "
                       f"(inputs, outputs, reference): {fmt_bytes(3 * n)}, more than this machine's "
                       f"{fmt_bytes(host_bytes)} of memory")
    return out


def host_memory_bytes() -> int | None:
    try:
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def require_fits(spec: KernelSpec, info, sets: list[str | None] | None = None) -> None:
    """Raise a SPEC error (exit 2) when a shape's arrays (in the named shape sets; None: the
    default set; no list: every set) cannot fit ``info``'s memory or the host's."""
    from kerntune.errors import ErrorCode, KerntuneError
    from kerntune.spec.shapes import shape_set_names, verification_shapes

    names = sets if sets is not None else shape_set_names(spec)
    seen, shapes = set(), []
    for name in names:
        try:
            group = verification_shapes(spec, name)
        except KerntuneError:
            continue
        for s in group:
            if s.key not in seen:
                seen.add(s.key)
                shapes.append(s)
    problems = memory_problems(spec, shapes, getattr(info, "global_mem_bytes", 0) or None, host_memory_bytes(),
                               getattr(info, "name", "the device"))
    if problems:
        raise KerntuneError(ErrorCode.SPEC, "a shape does not fit in memory:\n  " + "\n  ".join(problems),
                            hint="make the shape smaller in the spec (sizes are element counts, not bytes)")
