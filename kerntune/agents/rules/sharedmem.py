"""The static shared memory (OpenCL: local memory) a catalog template's
instance declares, as an expression of the template's parameters.

A rule that ties an array's size to the block (``__shared__ float
tile[TILE][TILE + 1]`` with ``#define TILE KT_BLOCK_X``) makes some
configurations need more than a block may have: 128 x 129 floats is 66 KB,
past CUDA's 48 KB of static shared memory. Without an estimate the tuner learns
this from a failed compile; with one (the template's ``shared_estimate``) it
prunes the configuration before compiling it, with the reason
``shared_memory``.

The estimate is a lower bound, so that it never prunes a configuration that
fits: it counts the arrays of the kernel and of the functions it calls at a call
site outside any preprocessor conditional (directly or not; every instance runs
them), declared outside any conditional, whose element type it knows and whose
every dimension it can write in the parameters (integer literals, object-like
macros defined once, and the ``KT_*`` macros of the parameters); any other
array is left out.
"""

from __future__ import annotations

import re

from kerntune.agents.rules.base import RewriteState, callee, function_name
from kerntune.source.parse import walk

_SCALAR_BYTES = {
    "char": 1, "uchar": 1, "unsigned char": 1, "signed char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "ushort": 2, "unsigned short": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2, "int16_t": 2,
    "uint16_t": 2, "int": 4, "uint": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4, "uint32_t": 4,
    "__half2": 4, "__nv_bfloat162": 4, "double": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8,
}
_OPENCL_ONLY = {"long": 8, "ulong": 8, "unsigned long": 8}      # 64-bit in OpenCL C; CUDA's long is the host's
_VECTOR = re.compile(r"^(char|uchar|short|ushort|int|uint|long|ulong|float|double|half)(2|3|4|8|16)$")
_CONDITIONALS = ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef")
_PARAM_MACRO = re.compile(r"#define\s+(KT_\w+)\s+\{\{\s*(\w+)\s*\}\}\s*$")
_TOKEN = re.compile(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|[A-Za-z_]\w*|\S")


def element_bytes(type_text: str, lang: str) -> int | None:
    t = " ".join(type_text.replace("const", " ").replace("volatile", " ").split())
    if t in _SCALAR_BYTES:
        return _SCALAR_BYTES[t]
    if lang == "opencl" and t in _OPENCL_ONLY:
        return _OPENCL_ONLY[t]
    m = _VECTOR.match(t)
    if m is None:
        return None
    base = element_bytes(m.group(1), "opencl" if m.group(1) in ("long", "ulong") else lang)
    n = int(m.group(2))
    if base is None or (lang == "cuda" and n > 4):
        return None
    return base * (4 if n == 3 and lang == "opencl" else n)   # an OpenCL 3-vector takes the room of 4


def _macros(st: RewriteState) -> dict[str, str]:
    """Object-like macros defined exactly once in the file (outside or inside conditionals: a name
    defined twice, say in both branches of an #if, is not known)."""
    seen: dict[str, list[str]] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type == "preproc_def":
            name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
            if name is not None:
                seen.setdefault(st.text(name), []).append(st.text(value).strip() if value is not None else "")
    return {k: v[0] for k, v in seen.items() if len(v) == 1 and v[0]}


def _expression(text: str, macros: dict[str, str], params: dict[str, str], depth: int = 0) -> str | None:
    """``text`` (a C constant expression) in the parameters, in kerntune's expression language; None when
    a name is neither a parameter's macro nor a known macro, or an operator is not + - * / %."""
    if depth > 16 or "{" in text:
        return None
    out = []
    for tok in _TOKEN.findall(text):
        if tok[0].isdigit():
            digits = tok.rstrip("uUlL")
            out.append(str(int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits)))
        elif tok[0].isalpha() or tok[0] == "_":
            if tok in params:
                out.append(params[tok])
            elif tok in macros:
                inner = _expression(macros[tok], macros, params, depth + 1)
                if inner is None:
                    return None
                out.append(f"({inner})")
            else:
                return None
        elif tok in "+-*%()":
            out.append(tok)
        elif tok == "/":
            out.append("//")              # C's integer division
        else:
            return None
    return " ".join(out) or None


def _is_shared(st: RewriteState, decl) -> bool:
    if st.lang == "cuda":
        kinds = {st.text(c) for c in decl.children if c.type in ("type_qualifier", "storage_class_specifier",
                                                                 "attribute_specifier")}
        return "__shared__" in kinds and "extern" not in kinds
    before = st.raw[max(0, decl.start_byte - 32):decl.start_byte].decode(errors="replace")
    return re.search(r"\b(__local|local)\s*$", before) is not None   # the parser sees address spaces as blanks


def _dims(decl_node) -> list | None:
    dims, d = [], decl_node
    while d is not None and d.type == "array_declarator":
        size = d.child_by_field_name("size")
        if size is None:
            return None
        dims.append(size)
        d = d.child_by_field_name("declarator")
    return dims[::-1] if dims and d is not None and d.type == "identifier" else None


def _in_conditional(node, stop) -> bool:
    up = node.parent
    while up is not None and up.id != stop.id:
        if up.type in _CONDITIONALS:
            return True
        up = up.parent
    return False


def _always_run(st: RewriteState) -> list:
    """The kernel and the functions every instance runs: those it calls (directly or not) at a call
    site outside any preprocessor conditional; a name with several definitions (overloads) is left
    out, since which one runs is not known. Empty when the kernel is not defined exactly once."""
    defs: dict[str, list] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type == "function_definition":
            defs.setdefault(function_name(st, n), []).append(n)
    if len(defs.get(st.kernel_fn, [])) != 1:
        return []
    out, seen, todo = [], set(), [st.kernel_fn]
    while todo:
        name = todo.pop()
        if name in seen or len(defs.get(name, [])) != 1:
            continue
        seen.add(name)
        fn = defs[name][0]
        out.append(fn)
        for c in walk(fn):
            if c.type == "call_expression" and not _in_conditional(c, fn):
                f = callee(st, c)
                if f is not None:
                    todo.append(st.text(f))
    return sorted(out, key=lambda n: n.start_byte)


def shared_estimate(st: RewriteState) -> str | None:
    """A lower bound on the instance's static shared memory in bytes, as an expression of the template's
    parameters; None when no array can be counted."""
    params = {}
    for p in st.params.values():
        for line in (p.header or "").splitlines():
            m = _PARAM_MACRO.match(line.strip())
            if m:
                params[m.group(1)] = m.group(2)
    macros = _macros(st)
    terms, seen = [], set()
    for fn in _always_run(st):
        for decl in walk(fn):
            if decl.type != "declaration" or decl.id in seen or not _is_shared(st, decl) or _in_conditional(decl, fn):
                continue
            seen.add(decl.id)
            t = decl.child_by_field_name("type")
            size = element_bytes(st.text(t), st.lang) if t is not None else None
            if size is None:
                continue
            for d in decl.named_children:
                dims = _dims(d) if d.type == "array_declarator" else None
                exprs = [_expression(st.text(x), macros, params) for x in dims or []]
                if dims and None not in exprs:
                    terms.append(" * ".join(f"({e})" for e in exprs) + f" * {size}")
    return " + ".join(terms) if terms else None
