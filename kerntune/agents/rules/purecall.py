"""Pure helper functions: which functions of a file compute from their
arguments alone, and which of their parameters are outputs.

A helper is pure when its body touches no memory but its own locals and
writes its results only through output parameters: a pointer parameter used
only as ``*p = value`` (OpenCL, C) or a non-const reference parameter used
only as ``r = value`` (CUDA), never read. It calls only math builtins and
other pure helpers of the file, and names no variable declared at file scope.
A call of such a helper whose inputs do not change in a loop computes the same
outputs on every trip (hoist-invariants moves it before the loop).
"""

from __future__ import annotations

import re

from kerntune.agents.rules.access import assigned_names, parameter_list
from kerntune.agents.rules.base import RewriteState
from kerntune.source import calls
from kerntune.source.parse import walk

VALUE, OUT_PTR, OUT_REF = "value", "pointer", "reference"   # an input; an output as *p = v; as r = v

# math and conversion builtins of OpenCL C and CUDA that read no memory and have no effect
_MATH = {
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "pown", "powr", "rootn", "sqrt", "rsqrt",
    "cbrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh",
    "erf", "erfc", "fabs", "abs", "fmax", "fmin", "fma", "mad", "fmod", "floor", "ceil", "round", "trunc", "rint",
    "copysign", "hypot", "isnan", "isinf", "isfinite", "signbit", "min", "max", "clamp", "mix", "step", "sign",
    "select", "fdim", "ldexp", "logb", "nextafter", "remainder", "frcp", "fdividef", "saturate", "rcp",
}
_MATH_PREFIXES = ("native_", "half_", "convert_", "as_", "__half2float", "__float2half", "__bfloat162float",
                  "__float2bfloat16", "__float_as_", "__int_as_", "__uint_as_", "__f", "__h")


def math_builtin(name: str) -> bool:
    """Whether ``name`` is a builtin that computes from its arguments alone (``expf``, ``__expf``,
    ``native_exp``, ``convert_float``, ``__float2half_rn``)."""
    if name.startswith(_MATH_PREFIXES):
        return True
    bare = name[2:] if name.startswith("__") else name
    return bare in _MATH or (bare.endswith("f") and bare[:-1] in _MATH)


def _param_name(p):
    d = p.child_by_field_name("declarator")
    while d is not None and d.type != "identifier":     # a C++ reference declarator has no 'declarator' field
        d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
    return d


def _file_variables(st: RewriteState) -> set[str]:
    """Names of variables declared at file scope (program-scope globals, __constant tables)."""
    out = set()
    for n in st.parsed.tree.root_node.named_children:
        if n.type == "declaration":
            for d in n.named_children:
                d0 = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                while d0 is not None and d0.type not in ("identifier", "function_declarator"):
                    d0 = d0.child_by_field_name("declarator")
                if d0 is not None and d0.type == "identifier":
                    out.add(st.text(d0))
    return out


def _kinds(st: RewriteState, fn, pure: dict, globals_: set[str]) -> tuple[str, ...] | None:
    """Each parameter's kind (VALUE, OUT_PTR or OUT_REF) when ``fn`` is pure, else None."""
    body = fn.child_by_field_name("body")
    params = [p for p in parameter_list(fn) if p.type == "parameter_declaration"]
    if body is None or len(params) != len(parameter_list(fn)):
        return None
    kinds, outs = [], {}
    for p in params:
        ident = _param_name(p)
        if ident is None:
            return None
        d = p.child_by_field_name("declarator")
        const = "const" in st.text(p.child_by_field_name("type") or p) or \
            any(c.type == "type_qualifier" and st.text(c) == "const" for c in p.children)
        if d is not None and d.type in ("pointer_declarator", "reference_declarator") and not \
                (d.type == "reference_declarator" and const):
            if d.type == "pointer_declarator" and (const or "*" in st.text(d)[1:]):
                return None          # a pointer to const data is an input in memory; a pointer to pointer
            outs[st.text(ident)] = d.type
            kinds.append(OUT_PTR if d.type == "pointer_declarator" else OUT_REF)
        elif d is not None and d.type not in ("identifier",) and d.type != "reference_declarator":
            return None              # an array parameter, a function pointer
        else:
            kinds.append(VALUE)
    assigned = assigned_names(st, body)
    if any(name in assigned and kind == "pointer_declarator" for name, kind in outs.items()):
        return None
    for n in walk(body):
        if n.type in ("subscript_expression", "field_expression", "asm_statement", "goto_statement"):
            return None
        if n.type == "call_expression":
            f = n.child_by_field_name("function")
            name = st.text(f) if f is not None and f.type == "identifier" else ""
            if not name or not (math_builtin(name) or pure.get(name) is not None):
                return None
        if n.type == "pointer_expression" and st.text(n).lstrip().startswith("&"):
            return None
        if n.type == "identifier" and st.text(n) in globals_:
            return None
        if n.type == "identifier" and st.text(n) in outs:
            use = n.parent
            if outs[st.text(n)] == "pointer_declarator":
                if use is None or use.type != "pointer_expression" or not st.text(use).lstrip().startswith("*"):
                    return None
                use = use.parent
                target = use.child_by_field_name("left") if use is not None and use.type == "assignment_expression" \
                    else None
                if target is None or target.id != n.parent.id:
                    return None
            else:
                target = use.child_by_field_name("left") if use is not None and use.type == "assignment_expression" \
                    else None
                if target is None or target.id != n.id:
                    return None
            if st.text(use.child_by_field_name("operator")) != "=":
                return None          # *p += x reads the output
    return tuple(kinds)


def pure_helpers(st: RewriteState) -> dict[str, tuple[str, ...]]:
    """The file's pure functions by name, with each parameter's kind; a name with several definitions
    (overloads, one per element type) is pure when every definition is, with the same kinds."""
    defs: dict[str, list] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type == "function_definition":
            name = calls.function_name(n, st.raw)
            if name and not re.search(r"__global__|__kernel\b|\bkernel\b", st.text(n)[:st.text(n).find("(") + 1]):
                defs.setdefault(name, []).append(n)
    globals_ = _file_variables(st)
    pure: dict[str, tuple[str, ...] | None] = {}
    for _ in range(4):                # helpers calling helpers: a few passes reach the fixed point
        before = dict(pure)
        for name, fns in defs.items():
            kinds = {_kinds(st, fn, pure, globals_) for fn in fns}
            pure[name] = next(iter(kinds)) if len(kinds) == 1 else None
        if pure == before:
            break
    return {k: v for k, v in pure.items() if v is not None}
