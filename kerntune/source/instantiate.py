"""Templated kernels: bind a spec's template arguments to the kernel's template
parameters, and make the compilers produce that instantiation.

CuPy (NVRTC) instantiates through ``RawModule(name_expressions=[...])``; nvcc
gets a line appended to the source that takes the address of the
instantiation, which makes the compiler emit it without anyone having to
spell out its parameter list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerntune.errors import KerntuneError
from kerntune.source.names import KernelName, parse_kernel_name
from kerntune.source.parse import KernelFunction, parse


@dataclass(frozen=True)
class Resolved:
    kernel: KernelFunction
    name: KernelName                 # as the spec wrote it
    expression: str                  # fully qualified: what NVRTC and nvcc are given
    bindings: dict[str, str]         # template parameter -> argument text (defaults filled in)


def bind(kernel: KernelFunction, name: KernelName) -> dict[str, str]:
    """Template parameter name -> argument, with the template's defaults for the ones not given."""
    out: dict[str, str] = {}
    args = list(name.template_args or ())
    for i, p in enumerate(kernel.template_params or ()):
        if i < len(args):
            out[p.name] = args[i]
        elif p.default is not None:
            out[p.name] = p.default
    return out


def resolve(source: str, lang: str, name: str) -> Resolved:
    """Find the kernel ``name`` refers to in ``source``; raises KerntuneError (SPEC) when it is not there."""
    parsed = parse(source, lang)
    k = parsed.kernel(name)
    kn = parse_kernel_name(name)
    expr = k.qualified_name if kn.template_args is None else f"{k.qualified_name}<{', '.join(kn.template_args)}>"
    return Resolved(kernel=k, name=kn, expression=expr, bindings=bind(k, kn))


def lowered_expression(source: str, name: str) -> str:
    """The name expression for NVRTC and nvcc: qualified with the kernel's namespaces (a name
    the source does not define is returned as written, for the compiler to report)."""
    kn = parse_kernel_name(name)
    try:
        return resolve(source, "cuda", name).expression
    except KerntuneError:  # let the compiler report a name it cannot find
        return kn.text


INSTANCE_MARK = "// kerntune: instantiate the kernel the spec names"


def type_includes(expression: str) -> str:
    """Includes for the half-precision types a template argument names (the kernel's own code
    need not mention them: a template written for any T)."""
    out = []
    if re.search(r"\b(__half2?|half2?)\b", expression):
        out.append("#include <cuda_fp16.h>\n")
    if re.search(r"\b(__nv_bfloat162?|nv_bfloat162?)\b", expression):
        out.append("#include <cuda_bf16.h>\n")
    return "".join(out)


def instantiation_stub(expression: str) -> str:
    """Host-side code that makes nvcc emit ``expression`` (taking a kernel's address instantiates it)."""
    return (f"\n{INSTANCE_MARK}\n{type_includes(expression)}namespace {{ [[maybe_unused]] auto* const "
            f"kerntune_instance_0 = &{expression}; }}\n")


def mangled_prefix(qualified: str) -> str:
    """The start of the Itanium-mangled name of a function ``a::b::f`` (before template or parameter types)."""
    parts = [p for p in qualified.split("::") if p]
    if len(parts) == 1:
        return f"_Z{len(parts[0])}{parts[0]}"
    return "_ZN" + "".join(f"{len(p)}{p}" for p in parts)
