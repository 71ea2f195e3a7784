"""The checker builds what the device builds: the predefined macros a kernel's source names, given
the device's values in the memory checker's build.

Oclgrind compiles a kernel with its own clang, as an OpenCL 1.2 device, and kerntune builds it
there without optimization (``-cl-opt-disable``). Its predefined macros are not the device's:
``__OPTIMIZE__`` is defined by Intel's CPU runtime and PoCL, never under Oclgrind;
``__NO_INLINE__`` the other way round; ``__OPENCL_VERSION__`` is 310 (Intel) or 300 (PoCL) against
120; extension and feature macros (``cl_khr_fp16``, ``__opencl_c_fp64``, ``__AVX2__``) come and go. A
kernel that reads past an array's end only under ``#ifdef __OPTIMIZE__`` was called clean: the
checker looked at the other branch (hostile tour, 2026-12-05; docs/proof.md).

So every name of the source that such a macro may be (:func:`source_names`) is looked up, by a probe
kernel built with the same options, on the device and under Oclgrind (each in a throwaway process:
two LLVMs in one process can abort it), and wherever the two differ the checker's build gets the
device's: ``-UNAME`` where the device has no such macro, ``-DNAME=VALUE`` where it has one whose
value the preprocessor can read as an integer (``#if`` arithmetic: the value is read bit by bit),
``-DNAME`` where it has one without such a value that the source only tests for being defined.
A macro that differs and that the source uses otherwise (a floating-point constant, in ``#if`` or
in code) cannot be given to the checker: :func:`equalize` says why, and the check refuses the
kernel. What the probe cannot see: a name made by token pasting (``a##b``), and function-like
macros and operators (``f(x)``, ``__has_builtin(x)``), which keep each build's own.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

# what one name is in one build: None (not a macro), an int (its value in #if), or DEFINED (a macro
# whose value #if cannot read: empty, a float, a string, function-like)
DEFINED = "defined"
Probe = dict[str, Optional[object]]

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_CONDITIONAL = re.compile(r"(?m)^[ \t]*#[ \t]*(?:if|elif|ifdef|ifndef|elifdef|elifndef)\b(.*)$")
_DIRECTIVE_WORD = re.compile(r"(?m)^([ \t]*#[ \t]*)(\w+)")
_DEFINED_TEST = re.compile(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")
_IFDEF = re.compile(r"(?m)^[ \t]*#[ \t]*(?:ifdef|ifndef|elifdef|elifndef)[ \t]+([A-Za-z_]\w*)")


def _clean(source: str) -> str:
    """``source`` without comments and string literals, its continued lines joined."""
    return _STRINGS.sub(" ", _COMMENTS.sub(" ", source.replace("\\\n", " ")))


# OpenCL C's own reserved words: keywords of its compilers, never macros worth a look
_KEYWORDS = frozenset("""__global __local __constant __private __kernel __read_only __write_only __read_write
__attribute__ __restrict __restrict__ __inline __inline__ __const __volatile__ __asm__ __typeof__ __alignof__
__generic __builtin_va_list""".split())
# macros whose value is where they stand, not what the compiler is: the probe's own line, file or count, which
# would pin the checker's build to one value
_POSITIONAL = frozenset("""__LINE__ __FILE__ __FILE_NAME__ __BASE_FILE__ __COUNTER__ __INCLUDE_LEVEL__ __DATE__
__TIME__ __TIMESTAMP__""".split())
# the names a compiler may predefine: reserved ones (__X, _X), ALL-CAPS ones (CLK_*, FLT_MAX, FP_FAST_FMAF),
# extension names (cl_khr_fp16)
_PREDEFINABLE = re.compile(r"^(?:_[_A-Z]\w*|[A-Z][A-Z0-9_]*|cl_\w+)$")
_SKIPPED_LINES = re.compile(r"(?m)^[ \t]*#[ \t]*(?:pragma|include|line|error|warning)\b.*$")


def source_names(source: str) -> list[str]:
    """The names of ``source`` whose meaning a compiler's predefined macros may change: every identifier a
    conditional directive (``#if``, ``#ifdef``...) reads, and every other one a compiler may predefine
    (:data:`_PREDEFINABLE`), outside comments, strings and ``#pragma``/``#include`` lines; never one that
    is followed by ``(`` anywhere (a function-like macro keeps each build's own, and so do ``__has_builtin(x)``
    and its kin), a keyword or a positional macro (``__LINE__``)."""
    text = _SKIPPED_LINES.sub(" ", _clean(source))
    called = set(_CALLED.findall(text))
    tested = {w for line in _CONDITIONAL.findall(text) for w in _WORD.findall(line)}
    words = _WORD.findall(_DIRECTIVE_WORD.sub(lambda m: m.group(1), text))
    found = tested | {w for w in words if _PREDEFINABLE.match(w)}
    return sorted(found - called - _KEYWORDS - _POSITIONAL - {"defined"})


def split_options(options: Sequence[str]) -> tuple[tuple[str, ...], set[str]]:
    """``options`` without their ``-D``/``-U`` macros, and the names those set: both builds get the same
    ones after their predefined macros, so those names are alike in both, and the rest of the options
    (``-cl-fast-relaxed-math``, ``-cl-std``) is what the probe builds with, the same for every
    configuration of a template."""
    rest, names, it = [], set(), iter(options)
    for opt in it:
        if opt in ("-D", "-U"):
            value = next(it, "")
        elif opt[:2] in ("-D", "-U"):
            value = opt[2:]
        else:
            rest.append(opt)
            continue
        names.add(value.split("=", 1)[0].strip())
    return tuple(rest), names


def presence_only(source: str) -> set[str]:
    """The names ``source`` only ever tests for being defined (``#ifdef X``, ``defined(X)``): for these,
    ``-DX`` is as good as the device's value."""
    text = _clean(source)
    tested = {a or b for a, b in _DEFINED_TEST.findall(text)} | set(_IFDEF.findall(text))
    stripped = _IFDEF.sub(" ", _DEFINED_TEST.sub(" ", text))
    elsewhere = set(_WORD.findall(stripped))
    return tested - elsewhere


def probe_source(names: Sequence[str], values: bool) -> str:
    """A kernel writing, for each name i, 1 into r[2i] where it is a macro, and where ``values`` its
    value in ``#if`` arithmetic into r[2i + 1], bit by bit (a macro that is no integer expression, in
    ``#if`` and in C alike, fails the build)."""
    lines = ["__kernel void kerntune_macros(__global long* r) {"]
    for i, name in enumerate(names):
        lines += [f"#ifdef {name}", f"  r[{2 * i}] = 1;"]
        if values:
            # the same value as C: a macro naming no integer (`#define kernel __kernel` reads as 0 in #if)
            # fails the build here
            lines.append(f"  r[{2 * i + 1}] = 0 * (long)(({name}) + 0);")
            for k in range(64):
                lines += [f"#if ((({name}) + 0) >> {k}) & 1", f"  r[{2 * i + 1}] |= (long)(1UL << {k});", "#endif"]
        lines.append("#endif")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _run_probe(cl, ctx, queue, names: Sequence[str], options: Sequence[str], values: bool):
    """r as int64 values; None where the probe does not build."""
    import numpy as np

    r = np.zeros(max(2 * len(names), 1), dtype=np.int64)
    try:
        prg = cl.Program(ctx, probe_source(names, values)).build(options=list(options))
    except cl.Error:
        return None
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=r)
    prg.kerntune_macros(queue, (1,), None, buf)
    cl.enqueue_copy(queue, r, buf)
    queue.finish()
    return [int(x) for x in r]


def measure(platform: int, device: int, names: Sequence[str], options: Sequence[str]) -> Probe:
    """What each of ``names`` is (None, an int, DEFINED) for OpenCL device ``opencl:platform:device``
    building with ``options``. Run in a throwaway process (kerntune.engine.supervisor.run_isolated)."""
    from kerntune.backends.opencl import _cl, find_device
    from kerntune.errors import ErrorCode, KerntuneError

    cl = _cl()
    dev = find_device(platform, device)
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    names = list(names)
    found = _run_probe(cl, ctx, queue, names, options, values=False)
    if found is None:
        raise KerntuneError(ErrorCode.COMPILE, "the predefined-macro probe does not build with the kernel's options")
    out: Probe = {n: (DEFINED if found[2 * i] else None) for i, n in enumerate(names)}
    macros = [n for n in names if out[n] is not None]
    together = _run_probe(cl, ctx, queue, macros, options, values=True) if macros else []
    for i, n in enumerate(macros):
        got = together if together is not None else _run_probe(cl, ctx, queue, [n], options, values=True)
        j = i if together is not None else 0
        if got is not None:
            out[n] = got[2 * j + 1]
    return out


def equalize(device: Probe, checker: Probe, presence: set[str]) -> tuple[list[str], list[str]]:
    """The build options that give the checker's build the device's macros, and the names that cannot
    be given (they differ, and the source uses their values, which are no integers)."""
    options, cannot = [], []
    for name in sorted(device):
        want, have = device[name], checker.get(name)
        if want == have and want != DEFINED:
            continue
        if want is None:
            options.append(f"-U{name}")
        elif isinstance(want, int):
            options.append(f"-D{name}={want}")
        elif name in presence:
            if have is None:
                options.append(f"-D{name}")
        elif have == DEFINED:
            continue          # a macro in both builds whose value no probe reads (a float constant): left as is
        else:
            cannot.append(name)
    return options, cannot


def refusal(names: Sequence[str]) -> str:
    return ("refused: the source uses predefined macro(s) " + ", ".join(names) + " whose value differs between the "
            "device's build and the memory checker's and cannot be given to the checker's (not an integer); a kernel "
            "may take another path on the device than the one the checker sees. Hint: test them with #ifdef or "
            "integer #if only, or leave them out")


__all__ = ["DEFINED", "equalize", "measure", "presence_only", "probe_source", "refusal", "source_names",
           "split_options"]
