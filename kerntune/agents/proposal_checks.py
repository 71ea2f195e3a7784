"""What a proposed template may not do, checked before anything of it is compiled: read other
files, pass the compiler options of its choice, or change the kernel's signature.

A template comes from the rule catalog or from an LLM, and an LLM's answer is untrusted text.
An adversarial tour (2026-12-04) had a scripted endpoint answer with ``#include "/some/file"``,
or with ``-I/some/dir`` in the template's ``flags`` and ``#include "file"``: the compiler's error
then quoted the file's lines, which went back to the endpoint as feedback and into the run's
records. And a kernel taking other arguments than the spec's crashed the worker's argument setup
(exit 70, on every ``--resume`` again). So:

- every file-reading directive (``#include``, ``#include_next``, ``#import``, ``#embed``, however spelled:
  a macro target, a comment inside, a digraph or trigraph ``#``, a continued line) of the rendered kernel
  must be one the kernel the round started from has
  (a template rewrites a kernel; it does not bring in files);
- every compiler option in ``flags`` must be one of a known set of code-generation options
  (fast math, denormals, FMA contraction, register limits, optimization level, macro
  definitions with plain values), never a path, an include, a response file or an output;
- the kernel named by the spec must exist in the rendered source and take the spec's arguments.
"""

from __future__ import annotations

import re
from typing import Optional

from kerntune.errors import KerntuneError
from kerntune.spec.model import KernelSpec

# every directive that reads a file (#include_next, clang's #import, C23's #embed too), whatever follows it:
# `#include F` with F a macro naming a path is an include all the same
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*(include_next|include|import|embed)\b[ \t]*(.*?)[ \t]*$", re.M)

# options that change code generation only: no path, file or output can be named through them
_OPENCL_OPTIONS = re.compile(
    r"-cl-(fast-relaxed-math|mad-enable|no-signed-zeros|unsafe-math-optimizations|finite-math-only|denorms-are-zero|"
    r"fp32-correctly-rounded-divide-sqrt|opt-disable|strict-aliasing|uniform-work-group-size|no-subgroup-ifp|"
    r"single-precision-constant|std=CL[0-9.]+)"
    r"|-w|-Werror")
_CUDA_OPTIONS = re.compile(
    r"--?use_fast_math|--?(ftz|prec-div|prec-sqrt|fmad|extra-device-vectorization|restrict)(=(true|false))?"
    r"|--?maxrregcount[= ]?[0-9]+|-O[0-3]|--?lineinfo|-Xptxas[= ]-O[0-3]|--?dopt[= ](on|off)")
_DEFINE = re.compile(r"-D ?[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+\-]*)?")


def _directives(source: str) -> str:
    """``source`` as the preprocessor reads its directives: lines joined at a backslash-newline, comments
    blanked (``#/**/include``), digraph and trigraph ``#`` (``%:``, ``??=``) spelled ``#``. Erring toward
    finding more: a ``%:`` inside a string also becomes ``#``."""
    text = source.replace("??/", "\\").replace("\\\r\n", "").replace("\\\n", "")
    return _without_comments(text).replace("??=", "#").replace("%:", "#")


def _without_comments(text: str) -> str:
    """``text`` with each comment replaced by a space, string and character literals kept as they are
    (a "/*" inside a string starts no comment, so it cannot hide the lines after it)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":                          # a literal, to its closing quote (escapes skipped)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def includes(source: str) -> list[str]:
    """The file-reading directives of ``source``, each as ``directive target`` (``include "x.h"``,
    ``include <cuda_fp16.h>``, ``include PATH_MACRO``)."""
    return [f"{m.group(1)} {m.group(2)}".strip() for m in _INCLUDE.finditer(_directives(source))]


def include_problem(source: str, allowed_from: str) -> Optional[str]:
    """Why ``source`` may not be compiled: an ``#include`` the kernel ``allowed_from`` does not have."""
    have = set(includes(allowed_from))
    new = [i for i in includes(source) if i not in have]
    if not new:
        return None
    return (f"the template adds #{new[0]}, which the kernel it rewrites does not have: a template may not "
            "bring in other files (it may use only what the kernel already includes)")


def option_problem(option: str, lang: str) -> Optional[str]:
    """Why a compiler option from a template's ``flags`` is refused (None: it is allowed)."""
    text = option.strip()
    allowed = _OPENCL_OPTIONS if lang == "opencl" else _CUDA_OPTIONS
    if allowed.fullmatch(text) or _DEFINE.fullmatch(text):
        return None
    return (f"the compiler option {text!r} is not one a template may set: only code-generation options (fast math, "
            "denormals, FMA, register limits, optimization level, -DNAME=value), never a path, an include or a file")


def signature_problem(source: str, lang: str, spec: KernelSpec, name: str) -> Optional[str]:
    """Why the kernel ``name`` in ``source`` cannot be launched with the spec's arguments (None: it can,
    or the parser cannot tell, in which case the compiler and the launch will)."""
    from kerntune.source.parse import parse
    from kerntune.spec.signature import signature_problems

    try:
        parsed = parse(source, lang)
        k = parsed.find(name)
    except KerntuneError:
        return None
    if k.node.has_error or k.is_template:
        return None
    problems = signature_problems(spec, k, {}, lang)
    if not problems:
        return None
    return (f"the kernel {name} does not take the spec's arguments: {problems[0].message}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))


__all__ = ["include_problem", "includes", "option_problem", "signature_problem"]
