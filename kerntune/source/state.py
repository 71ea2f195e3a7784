"""Device variables that outlive a launch: program-scope variables (OpenCL C
2.0), ``__device__``/``__managed__`` variables (CUDA) and ``static`` locals of
device code, unless they are in a constant address space (``__constant``,
``__constant__``) or a CUDA ``constexpr`` (a ``const`` in global memory is
written through a cast like any variable).

kerntune measures a kernel by launching it many times on the same inputs and
verifies it on the launches it inspects. A kernel that keeps results between
launches can return what an earlier launch computed: an adversarial tour's
row_sum kept each row's sum in program-scope memory, keyed on four sampled
elements of the row, and was verified and confirmed 9.57x faster while it
returned stale sums for a row changed elsewhere. Such a kernel is not a
function of its arguments, so neither its results nor its times say what one
launch does; :func:`persistent_state` finds it in the source, before it runs.

The scan reads the source as written (tree-sitter), and again after the C
preprocessor (``cpp``, where one is installed) has expanded the file's own
macros, so a declaration spelled through a macro is seen too. A header that
kerntune's flattening did not inline but cpp can read (``#include <path>``,
``#include MACRO``: an adversarial tour's memo hid in one) is followed, and
the scan reads the whole expansion; headers cpp cannot find (the compiler's
own, <cuda_fp16.h>) are read as empty, and includes cpp cannot follow are
refused (Unscannable). A declaration the parser cannot read is not seen. The OpenCL runtimes cannot be asked
instead: ``CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE`` is 4 bytes for a
kernel with no variable at all on Intel's CPU runtime 2026.22 and 0 for the
tour's 48 KiB of them on PoCL 3.0. What the scan misses, the run after timing
on changed inputs (kerntune.engine.timed) is there to catch.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from kerntune.source.parse import _blank_opencl, _parser, walk

_KEEPS_CUDA = ("__device__", "__managed__")


def _words(node, data: bytes) -> set[str]:
    return set(data[node.start_byte:node.end_byte].decode(errors="replace").replace("*", " ").split())


def _declared(node, data: bytes) -> list[str]:
    names = []
    for d in node.children_by_field_name("declarator"):
        n = d
        while n is not None and n.type not in ("identifier", "field_identifier", "qualified_identifier"):
            if n.type in ("function_declarator",):
                return []                                 # a prototype
            n = n.child_by_field_name("declarator")
        if n is not None:
            names.append(data[n.start_byte:n.end_byte].decode())
    return names


def _function_of(node):
    """The function definition ``node`` is in; the ERROR node the parser could not place it in (read
    as local, so that a construct the grammar lacks never makes a function's variables look like the
    program's); None at program scope."""
    p = node.parent
    while p is not None:
        if p.type in ("function_definition", "ERROR") or p.type.endswith("_statement"):
            while p.parent is not None and p.type != "function_definition" and p.parent.type != "translation_unit":
                p = p.parent
            return p
        p = p.parent
    return None


_CPP_DEFINES = {"opencl": ("-D__OPENCL_VERSION__=200", "-D__OPENCL_C_VERSION__=200"),
                "cuda": ("-D__CUDACC__", "-D__CUDA_ARCH__=900", "-D__NVCC__")}


def _option_args(options: Sequence[str], flag: str) -> list[str]:
    """The ``FLAG VALUE`` / ``FLAGVALUE`` arguments among compile ``options``, each as ``FLAGVALUE``."""
    out, it = [], iter(options)
    for opt in it:
        if opt == flag:
            nxt = next(it, None)
            if nxt:
                out.append(flag + nxt)
        elif opt.startswith(flag) and len(opt) > len(flag):
            out.append(opt)
    return out


def option_defines(options: Sequence[str]) -> list[str]:
    """The ``-DNAME[=VALUE]`` macros among compile ``options`` (``-D NAME`` too), as cpp arguments."""
    return _option_args(options, "-D")


# an #error directive (with its continued lines): a CUDA file's `#if CUDA_VERSION < 11000 / #error ...` fires
# under cpp, whose headers are stubs, and refused a kernel the compiler builds; dropped, nothing can hide (where
# it fires for the compiler, nothing runs)
_ERROR_DIRECTIVE = re.compile(r"(?m)^[ \t]*#[ \t]*error\b(?:.*\\\n)*.*$")


def _expanded(text: str, lang: str, defines: Sequence[str] = ()) -> str | None:
    """``text`` with its own macros, and ``defines`` (cpp ``-D`` arguments), expanded by the C
    preprocessor (None: no cpp, or it failed)."""
    body = _ERROR_DIRECTIVE.sub("", re.sub(r"(?m)^[ \t]*#[ \t]*include\b.*$", "", text))
    try:
        r = _cpp_run(["-P", "-undef", "-nostdinc", *_CPP_DEFINES[lang], *defines], body)
    except Unscannable:        # it did not finish: the scan goes on with the text as written
        return None
    return r.stdout if r is not None and r.returncode == 0 else None


class Unscannable(Exception):
    """The scan cannot read everything the compiler will: an include it cannot follow."""


def option_include_dirs(options: Sequence[str]) -> list[str]:
    """The ``-I DIR`` / ``-IDIR`` folders among compile ``options``, as cpp arguments."""
    return _option_args(options, "-I")


def _cpp_run(args: Sequence[str], text: str) -> subprocess.CompletedProcess | None:
    cpp = shutil.which("cpp")
    if cpp is None:
        return None
    try:
        return subprocess.run([cpp, *args, "-"], input=text, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unscannable(f"the C preprocessor did not finish reading its includes ({type(e).__name__})") from None


def _with_headers(text: str, lang: str, defines: Sequence[str], dirs: Sequence[str]) -> str | None:
    """``text`` preprocessed with its ``#include`` lines followed, as the compiler follows them (the
    compile options' ``-I`` folders, quoted names from the working directory), when it includes a file
    cpp can read: a header kerntune did not inline (``#include <path>``, ``#include MACRO``). Headers cpp
    cannot find (the compiler's own: <cuda_fp16.h>, <stdint.h>, <cub/...>) are read as empty. None: no
    such header, or no cpp. Unscannable: cpp could not follow them."""
    with tempfile.TemporaryDirectory(prefix="kt-state-") as tmp:
        stubs = Path(tmp, "s", "s", "s", "s")
        stubs.mkdir(parents=True)
        text = _ERROR_DIRECTIVE.sub("", text)
        base = ["-undef", "-nostdinc", *_CPP_DEFINES[lang], *defines, *dirs]
        r = _cpp_run([*base, f"-I{stubs}", "-M", "-MG"], text)
        if r is None:
            return None
        if r.returncode != 0:
            raise Unscannable(_first_error(r.stderr))
        names = r.stdout.replace("\\\n", " ").split(":", 1)[-1].split()
        found = [n for n in names if Path(n).is_file()]
        if not found:
            return None
        for n in names:
            if n in found:
                continue
            stub = (stubs / n).resolve()
            if Path(tmp).resolve() not in stub.parents:
                raise Unscannable(f"cannot place the missing header {n!r}")
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.touch()
        r = _cpp_run(["-P", *base, f"-I{stubs}"], text)
        if r is None or r.returncode != 0:
            raise Unscannable(_first_error(r.stderr if r is not None else ""))
        return r.stdout


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if "error" in ln]
    return (lines[0] if lines else stderr.strip().splitlines()[0] if stderr.strip() else "cpp failed")[:160]


def persistent_state(text: str, lang: str, options: Sequence[str] = ()) -> list[str]:
    """The names of the variables in ``text`` that can keep a value from one launch to the next, each
    with where it is declared ("cache (line 3)"; "cache (after macros)" where only the preprocessed
    text declares it, "cache (after includes)" where it is in a header kerntune did not inline). []
    when there is none. Unscannable: the text includes what the scan cannot follow.

    Read-only means a constant address space (OpenCL ``__constant``, CUDA ``__constant__``) or a
    CUDA ``constexpr``: a ``const`` in global memory is written through a cast as easily as any
    variable (a tour's cache was ``global const float memo[...]``, another a ``global const uint *``
    pointer, which is not const at all). Macros the compile ``options`` define (``-DG=global``) are
    expanded too: a tour declared its cache as ``G ulong memo[1024]``, which only they make global."""
    found = _scan(text, lang)
    defines = option_defines(options)
    # every directive may be an include (`#include MACRO`, `%:include`, a line continued inside the word)
    expanded = _with_headers(text, lang, defines, option_include_dirs(options)) if "#" in text or "%:" in text \
        else None
    where = "after includes"
    if expanded is None and ("#" in text or defines):
        expanded, where = _expanded(text, lang, defines), "after macros"
    if expanded is not None:
        seen = {f.split(" (")[0] for f in found}
        found += [f"{n} ({where})" for n in dict.fromkeys(f.split(" (")[0] for f in _scan(expanded, lang))
                  if n not in seen]
    return found


def _scan(text: str, lang: str) -> list[str]:
    # attributes blanked byte for byte (a trailing __attribute__((aligned(64))) left the declaration
    # unparsed, and an unparsed one was skipped: a tour's cache hid behind it)
    src = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", lambda m: " " * len(m.group(0)), text)
    keywords: dict[int, str] = {}
    if lang == "opencl":
        src, keywords = _blank_opencl(src)
    data = src.encode()
    # keyword offsets in bytes, as tree-sitter's (a non-ASCII comment shifted characters from bytes)
    keywords = {len(src[:at].encode()): w for at, w in keywords.items()}
    tree = _parser().parse(data)
    # a keyword in a comment or a string qualifies nothing (a comment saying `__local` above a global
    # memo made it look local)
    quiet = [(n.start_byte, n.end_byte) for n in walk(tree.root_node)
             if n.type in ("comment", "string_literal", "char_literal")]
    keywords = {at: w for at, w in keywords.items() if not any(a <= at < b for a, b in quiet)}
    found = []
    for node in walk(tree.root_node):
        if node.type != "declaration" or node.has_error:     # unparsed: often a function the grammar misread
            continue
        fn = _function_of(node)
        words = _words(node, data)
        if fn is not None and "static" not in words:
            continue
        # qualifiers written before the declaration's first token (blanked OpenCL keywords, or ones the
        # parser left outside it): back to the previous code, comments skipped
        prev = node.prev_sibling
        while prev is not None and prev.type == "comment":
            prev = prev.prev_sibling
        start = prev.end_byte if prev is not None else 0
        spaces = {w for at, w in keywords.items() if start <= at < node.end_byte}
        words |= {w for at, w in keywords.items() if start <= at < node.start_byte}
        if "typedef" in words:
            continue
        if lang == "opencl":
            if spaces & {"__constant", "constant", "__local", "local"}:
                continue
        else:
            if words & {"__constant__", "__shared__", "constexpr"}:
                continue
            if fn is None and not words & set(_KEEPS_CUDA):
                continue                          # a host variable: device code cannot reach it
            if fn is not None and not _device_code(fn, data):
                continue                          # a static local of a host function
        line = data.count(b"\n", 0, node.start_byte) + 1
        found += [f"{name} (line {line})" for name in _declared(node, data)]
    return found


def _device_code(fn, data: bytes) -> bool:
    """A CUDA function that runs on the device (__global__ or __device__), or code that could not be placed."""
    if fn.type != "function_definition":
        return True
    body = fn.child_by_field_name("body")
    head = data[fn.start_byte:body.start_byte if body is not None else fn.end_byte].decode(errors="replace")
    return "__global__" in head or "__device__" in head


def refusal(names: list[str]) -> str:
    """Why a kernel with ``names`` is not run (one line: a candidate's status message keeps 300 characters)."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (f"refused: keeps state between launches ({shown}); such a kernel can return what an earlier launch "
            "computed, so its results and times are not one launch's (pass the state as an argument, or put it in "
            "__constant / __constant__ memory)")


def unscannable(reason: str) -> str:
    """Why a kernel whose includes the scan cannot follow is not run (one line)."""
    return (f"refused: the state scan cannot read its includes ({reason}); kerntune refuses what it cannot check for "
            "state kept between launches (inline the header, or name it as #include \"file.h\" beside the kernel)")


__all__ = ["Unscannable", "persistent_state", "refusal", "unscannable"]
