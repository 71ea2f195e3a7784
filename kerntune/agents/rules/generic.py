"""Generic rules: loop unrolling, restrict-qualified pointers, fast-math
intrinsics, and fast-math compiler flags."""

from __future__ import annotations

from kerntune.agents.rules.base import (Applied, Edit, Param, Rule, RewriteState, apply_edits, called_names, marker,
                                       opencl_space)
from kerntune.source.parse import walk

MAX_UNROLLED_LOOPS = 2
UNROLL_CHOICES = (0, 2, 4, 8)            # 0: no pragma (the compiler's own choice, as in the original)
GENERATED = "/*kt:generated*/"           # written before loops rules generated (tails, fills): left alone

FAST_MATH = {
    "cuda": {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf", "tanf": "__tanf",
             "powf": "__powf", "log2f": "__log2f", "log10f": "__log10f", "exp10f": "__exp10f"},
    "opencl": {"exp": "native_exp", "log": "native_log", "sin": "native_sin", "cos": "native_cos",
               "tan": "native_tan", "sqrt": "native_sqrt", "rsqrt": "native_rsqrt", "exp2": "native_exp2",
               "log2": "native_log2", "powr": "native_powr", "exp10": "native_exp10", "recip": "native_recip"},
}
FLAGS = {"cuda": "-use_fast_math", "opencl": "-cl-fast-relaxed-math"}


def is_generated(st: RewriteState, loop) -> bool:
    prev = loop.prev_sibling
    return prev is not None and prev.type == "comment" and st.text(prev) == GENERATED


def _has_pragma(st: RewriteState, loop) -> bool:
    prev = loop.prev_sibling
    if is_generated(st, loop):
        return True
    return prev is not None and prev.type in ("preproc_call", "preproc_def") and "unroll" in st.text(prev)


def _candidate_loops(st: RewriteState) -> list:
    loops = []
    for fn in st.functions():
        for node in walk(fn):
            if node.type == "for_statement" and not _has_pragma(st, node):
                body = node.child_by_field_name("body")
                touches_memory = body is not None and any(n.type == "subscript_expression" or
                                                          (n.type == "call_expression" and "vload" in st.text(n))
                                                          for n in walk(body))
                if touches_memory:
                    inner = sum(1 for n in walk(node) if n.type == "for_statement") - 1
                    loops.append((inner, node.start_byte, node))
    loops.sort(key=lambda x: (x[0], x[1]))          # innermost first, then in source order
    return [n for _, _, n in loops[:MAX_UNROLLED_LOOPS]]


class Unroll(Rule):
    name = "unroll"
    summary = "an unroll factor for each loop that touches memory (innermost first)"

    def check(self, st: RewriteState) -> str:
        return "" if _candidate_loops(st) else "no loop over memory without an unroll pragma"

    def apply(self, st: RewriteState) -> Applied:
        edits, names = [], []
        for loop in sorted(_candidate_loops(st), key=lambda n: n.start_byte):
            name = st.fresh("UNROLL")
            while name in names:
                name = f"{name}x"
            names.append(name)
            line_start = st.raw.rfind(b"\n", 0, loop.start_byte) + 1
            indent = st.raw[line_start:loop.start_byte].decode()
            indent = indent if not indent.strip() else ""
            edits.append(Edit(loop.start_byte, loop.start_byte, marker(name) + "\n" + indent))
            # the pragma carries its own newline: Jinja's trim_blocks eats the one after {% endif %}
            st.snippets[name] = "{% if " + name + " > 0 %}#pragma unroll {{ " + name + " }}\n{% endif %}"
            st.add_param(Param(name, UNROLL_CHOICES, "", why="0 keeps the compiler's choice"))
        st.source = apply_edits(st.raw, edits)
        return Applied(self.name, f"unroll pragmas on {len(names)} loop(s)", tuple(names))


def _pointer_params(st: RewriteState) -> list:
    out = []
    for fn in st.functions():
        declarator = fn.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        params = declarator.child_by_field_name("parameters") if declarator is not None else None
        for p in params.named_children if params is not None else []:
            d = p.child_by_field_name("declarator")
            if d is None or d.type != "pointer_declarator":
                continue
            quals = [st.text(c) for c in d.children if c.type == "type_qualifier"]
            if any(q in ("__restrict__", "restrict", "__restrict") for q in quals):
                continue
            if opencl_space(st, p) == "local":
                continue
            out.append(d)
    return out


class Restrict(Rule):
    name = "restrict"
    summary = "restrict-qualified pointers (read-only loads for inputs), on or off"

    def check(self, st: RewriteState) -> str:
        if not st.spec.noalias:
            return "the spec does not promise that the arrays never overlap (noalias: true)"
        return "" if _pointer_params(st) else "every pointer parameter is already restrict-qualified"

    def apply(self, st: RewriteState) -> Applied:
        edits = []
        for d in _pointer_params(st):
            star = next(c for c in d.children if c.type == "*")
            edits.append(Edit(star.end_byte, star.end_byte, " " + marker("RESTRICT")))
        qualifier = "__restrict__" if st.lang == "cuda" else "restrict"
        st.snippets["RESTRICT"] = "{% if RESTRICT %}" + qualifier + "{% endif %}"
        st.source = apply_edits(st.raw, edits)
        st.add_param(Param("RESTRICT", (False, True), "", why="the spec says the arrays never overlap"))
        return Applied(self.name, f"{qualifier} on {len(edits)} pointer parameter(s)", ("RESTRICT",))


def _math_calls(st: RewriteState) -> list:
    return called_names(st, FAST_MATH[st.lang])


class FastMath(Rule):
    name = "fast-math"
    summary = "hardware math intrinsics (__expf, native_exp, ...) instead of the precise functions, on or off"

    def check(self, st: RewriteState) -> str:
        if any(a.dtype == "fp64" for a in st.spec.args):
            return "fp64 kernels keep the precise functions"
        return "" if _math_calls(st) else "no call to a function with a fast intrinsic"

    def apply(self, st: RewriteState) -> Applied:
        table = FAST_MATH[st.lang]
        used = sorted({st.text(f) for f in _math_calls(st)})
        edits = [Edit(f.start_byte, f.end_byte, f"KT_FM_{st.text(f).upper()}") for f in _math_calls(st)]
        st.source = apply_edits(st.raw, edits)
        # inline expressions, not block tags: trim_blocks would eat the newlines between the defines
        header = "\n".join(f"#define KT_FM_{fn.upper()} {{{{ '{table[fn]}' if FAST_MATH else '{fn}' }}}}"
                           for fn in used)
        st.add_param(Param("FAST_MATH", (False, True), header, why=", ".join(f"{f} -> {table[f]}" for f in used)))
        return Applied(self.name, f"{len(edits)} call(s) of {', '.join(used)} may use intrinsics", ("FAST_MATH",))


class CompilerFlags(Rule):
    name = "compiler-flags"
    summary = "the compiler's fast-math flag, on or off"

    def check(self, st: RewriteState) -> str:
        if any(a.dtype == "fp64" for a in st.spec.args):
            return "fp64 kernels keep precise arithmetic"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        st.flags.setdefault(st.lang, {})[FLAGS[st.lang]] = "FAST_FLAGS"
        st.add_param(Param("FAST_FLAGS", (False, True), "", why=FLAGS[st.lang]))
        return Applied(self.name, f"{FLAGS[st.lang]} as a parameter", ("FAST_FLAGS",))
