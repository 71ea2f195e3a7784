"""Compiler messages as a user reads them: the compiler's own log, without what the Python
binding wraps around it, and with its locations naming the user's file when the source compiled
is that file, line for line."""

from __future__ import annotations

import re

# PyOpenCL's build error: "clBuildProgram failed: BUILD_PROGRAM_FAILURE - " once per wrapper level,
# then "Build on <device>:" and the compiler's log, then the options and where it saved the source.
_BUILD_ON = re.compile(r"^Build on <[^\n]*>:[ \t]*$", re.M)
_TRAILER = re.compile(r"^\((options|source saved as)\b[^\n]*\)[ \t]*$", re.M)
_NOISE = {"Compilation started", "Compilation failed", "Compilation done"}

# Where compilers put the compiled text: Intel's CPU runtime numbers the programs a process builds
# ("1:4:9: error" for the first, "129:4:9" for the 129th), other clang-based runtimes say "<source>",
# "<stdin>", "<program source>" or "input.cl"; PoCL writes the kind first and the source to a
# temporary file of its cache ("error: /home/u/.cache/pocl/kcache/tempfile_Ab12Cd.cl:4:9: ...");
# nvcc gets kerntune's "kernel.cu" and NVRTC (CuPy) "default_program".
_CLANG_LOCATION = re.compile(r"^(?:\d+|<source>|<stdin>|<program source>|input\.cl):(\d+):(\d+):", re.M)
_POCL_LOCATION = re.compile(r"^(error|warning|note): (?:[^\n:]*/)?(?:tempfile[^/\n:]*|program)\.cl:(\d+):(\d+): ",
                            re.M)
_EDG_LOCATION = re.compile(r"^(?:kernel\.cu|default_program)\((\d+)\):", re.M)
_EDG_FOOTER = re.compile(r'compilation of "(?:kernel\.cu|default_program)"')


def opencl_build_log(text: str) -> str:
    """The compiler's log out of PyOpenCL's build error text (``text`` itself when it is not one)."""
    m = _BUILD_ON.search(text)
    if m is None:
        return text.strip()
    body = text[m.end():]
    saved = [ln.strip() for ln in body.splitlines() if ln.strip().startswith("(source saved as")]
    lines = [ln for ln in _TRAILER.sub("", body).splitlines() if ln.strip() not in _NOISE]
    return "\n".join(lines).strip("\n") + ("\n" + saved[0] if saved else "")


def name_locations(log: str, file: str | None) -> str:
    """``log`` with the compiler's name for the compiled text replaced by ``file`` (no change when
    ``file`` is None: the source compiled is not a file the user has)."""
    if not file:
        return log
    log = _CLANG_LOCATION.sub(lambda m: f"{file}:{m.group(1)}:{m.group(2)}:", log)
    log = _POCL_LOCATION.sub(lambda m: f"{file}:{m.group(2)}:{m.group(3)}: {m.group(1)}: ", log)
    log = _EDG_LOCATION.sub(lambda m: f"{file}({m.group(1)}):", log)
    log = _EDG_FOOTER.sub(f'compilation of "{file}"', log)
    # the binding's copy of the source says nothing more than the file named in every location
    return "\n".join(ln for ln in log.splitlines() if not ln.startswith("(source saved as"))

