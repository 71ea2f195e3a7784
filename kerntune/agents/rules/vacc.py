"""vector-accumulators: a thread's serial sum over consecutive elements

    for (int c = 0; c < n; ++c) acc += A[base + c] * x[c];

becomes a sum of VACC-wide slices, with a scalar loop for the tail,

    OpenCL:  floatN v = 0;  for (; c + vec_step(v) <= n; c += vec_step(v)) v += vloadN(0, A + base + c) * vloadN(0, x + c);
             acc += (v.s0 + v.s1) + ...;   for (; c < n; ++c) acc += A[base + c] * x[c];
    CUDA:    N partial sums, the slices loaded with 16-byte loads where aligned (kt_vload)

so a compiler that vectorizes across threads (CPU OpenCL runtimes put one
work-item in each SIMD lane, and a row per work-item makes every load a
gather) gets whole vectors along the row instead, and a GPU thread issues wide
loads and N independent additions.

Precondition: a counted loop of step 1 (``for (T c = start; c < n; ++c)``)
whose body is one statement ``acc += E``: ``acc`` a float or double variable
declared before the loop, every use of ``c`` in ``E`` a load ``p[base + c]``
with ``base`` loop-invariant and ``p`` an array of ``acc``'s type, nothing in
``E`` assigned, and ``E`` made of arithmetic, other loads, and math functions
(which OpenCL defines on vectors too). The sum is taken in another order:
equal up to rounding, which verification's tolerance judges (the same as
cooperative-rows' tree of partial sums).
"""

from __future__ import annotations

from dataclasses import dataclass

from kerntune.agents.rules.access import affine_base, counted_loop, identifiers
from kerntune.agents.rules.base import (
    Applied, Edit, Param, Rule, RewriteState, apply_edits, pragma_start, unwrap,
)
from kerntune.agents.rules.generic import GENERATED, is_generated
from kerntune.agents.rules.rows import _ctype_of
from kerntune.agents.rules.base import guarded, indent_before
from kerntune.agents.rules.vectorize import CUDA_VEC, pointee_type
from kerntune.source.parse import walk

TYPES = ("float", "double")
OPS = ("+", "-", "*", "/")
# OpenCL's math functions take vectors as well as scalars; CUDA's are applied element by element
MATH = {
    "opencl": {"fabs", "exp", "exp2", "exp10", "log", "log2", "sqrt", "rsqrt", "fmax", "fmin", "fma", "mad", "sin",
               "cos", "tanh", "native_exp", "native_log", "native_sqrt", "native_rsqrt", "half_exp"},
    "cuda": {"fabsf", "fabs", "expf", "exp", "exp2f", "logf", "log", "sqrtf", "sqrt", "rsqrtf", "fmaxf",
             "fminf", "fmax", "fmin", "fmaf", "fma", "sinf", "cosf", "tanhf", "tanh", "__expf", "__logf"},
}
HSUM = """#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#endif"""
# the width's names: object-like macros of the parameter header, so that baking writes them out
# (vload4, float4, KT_VACC_HSUM4) and helper code never depends on the width. The code spells the
# width only inside these names (the step is vec_step of the accumulator): baked, it holds no bare
# number that a later round could take for something else (launch-config rewrites every literal
# equal to the block size into KT_BLOCK; a 2-D block of 4x4 beside VACC=4 once made the step and the
# horizontal add follow the block while float4 and vload4 stayed)
OPENCL_HEADER = ("#define KT_VACC {{ VACC }}\n#define KT_VACC_LOAD vload{{ VACC }}\n"
                 "#define KT_VACC_float float{{ VACC }}\n#define KT_VACC_double double{{ VACC }}\n"
                 "#define KT_VACC_HSUMV KT_VACC_HSUM{{ VACC }}")


def is_double_constant(st: RewriteState, node) -> bool:
    """A floating literal without the f suffix (OpenCL will not mix it with float vectors)."""
    if node.type != "number_literal":
        return False
    t = st.text(node).lower()
    return ("." in t or "e" in t) and not t.startswith("0x") and not t.endswith("f")


@dataclass
class Plan:
    loop: object
    var: str
    vtype: str
    start: str
    bound: str
    acc: str
    ctype: str
    expr: object                 # E of acc += E
    loads: list                  # (subscript node, array, base text)


def _why_not(st: RewriteState, fn, loop) -> tuple[Plan | None, str]:
    cl = counted_loop(st, loop)
    if cl is None:
        return None, ""
    body = cl.body
    if body is not None and body.type == "compound_statement":
        stmts = [c for c in body.named_children if c.type != "comment"]
        body = stmts[0] if len(stmts) == 1 else None
    if body is None or body.type != "expression_statement" or not body.named_children:
        return None, f"the loop over {cl.var} is not one accumulation (acc += ...)"
    a = body.named_children[0]
    if a.type != "assignment_expression" or st.text(a.child_by_field_name("operator")) != "+=":
        return None, f"the loop over {cl.var} is not one accumulation (acc += ...)"
    left = unwrap(a.child_by_field_name("left"))
    if left is None or left.type != "identifier":
        return None, f"the loop over {cl.var} accumulates into {st.text(a.child_by_field_name('left'))}, not a variable"
    acc, expr = st.text(left), a.child_by_field_name("right")
    ctype = _ctype_of(st, fn, acc)
    if ctype is None or ctype.replace("const ", "") not in TYPES:
        return None, f"{acc} is not a float or double variable"
    if acc in identifiers(st, expr):
        return None, f"the sum's term uses {acc} itself"
    loads, math = [], MATH[st.lang]
    for n in walk(expr):
        if n.type in ("assignment_expression", "update_expression", "pointer_expression", "field_expression",
                      "conditional_expression", "comma_expression", "sizeof_expression"):
            return None, f"the sum's term has {n.type.replace('_', ' ')}s"
        if n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) not in OPS:
            return None, f"the sum's term uses {st.text(n.child_by_field_name('operator'))}"
        if n.type == "cast_expression":
            return None, "the sum's term has a cast"
        if n.type == "call_expression" and st.text(n.child_by_field_name("function")) not in math:
            return None, f"the sum's term calls {st.text(n.child_by_field_name('function'))}"
        if ctype == "float" and is_double_constant(st, n):
            return None, f"the sum's term has the double constant {st.text(n)}"
        if n.type == "subscript_expression":
            idx = n.child_by_field_name("indices")
            index = idx.named_children[0] if idx is not None and len(idx.named_children) == 1 else None
            if index is None or cl.var not in identifiers(st, index):
                continue                   # a load the loop does not move along: the same in every slice
            arr = n.child_by_field_name("argument")
            base = affine_base(st, index, cl.var)
            if arr is None or arr.type != "identifier" or base is None:
                return None, f"the loop index {cl.var} is used in {st.text(n)}, not as p[base + {cl.var}]"
            if " ".join((pointee_type(st, fn, st.text(arr)) or "").replace("const", "").split()) != ctype:
                return None, f"{st.text(arr)} is not an array of {ctype}"
            loads.append((n, st.text(arr), base))
    if not loads:
        return None, f"the sum over {cl.var} loads nothing along {cl.var}"
    subs = {n.id for n, _, _ in loads}
    for n in walk(expr):
        if n.type == "identifier" and st.text(n) == cl.var:
            p = n
            while p is not None and p.id not in subs and p != expr:
                p = p.parent
            if p is None or p.id not in subs:
                return None, f"the loop index {cl.var} is used other than as p[base + {cl.var}]"
    return Plan(loop, cl.var, cl.vtype, st.text(cl.start), st.text(cl.bound), acc, ctype, expr, loads), ""


def _plans(st: RewriteState) -> tuple[list[Plan], list[str]]:
    plans, reasons = [], []
    for fn in st.functions():
        for loop in (n for n in walk(fn) if n.type == "for_statement" and not is_generated(st, n)):
            plan, why = _why_not(st, fn, loop)
            if plan is not None:
                plans.append(plan)
            elif why:
                reasons.append(why)
    return plans, reasons


def at_offset(array: str, base: str, at: str) -> str:
    """The address of element ``base + at`` of ``array`` (``base`` may be empty)."""
    return f"{array} + {base} + {at}" if base else f"{array} + {at}"


class VectorAccumulators(Rule):
    name = "vector-accumulators"
    summary = "a thread's serial sum over consecutive elements taken VACC elements at a time (vector loads)"

    def check(self, st: RewriteState) -> str:
        plans, reasons = _plans(st)
        if plans:
            return ""
        return reasons[0] if reasons else "no serial loop summing consecutive elements (for (c...) acc += p[base + c] ...)"

    def apply(self, st: RewriteState) -> Applied:
        plans, _ = _plans(st)
        edits = []
        for k, p in enumerate(plans):
            e0 = p.expr.start_byte
            c, v = f"kt_c{k}", f"kt_vacc{k}"
            if st.lang == "opencl":
                subs = [Edit(n.start_byte - e0, n.end_byte - e0, f"KT_VACC_LOAD(0, {at_offset(a, b, c)})")
                        for n, a, b in p.loads]
                term = apply_edits(st.raw[p.expr.start_byte:p.expr.end_byte], subs)
                main = [f"KT_VACC_{p.ctype} {v} = (KT_VACC_{p.ctype})(0);",
                        GENERATED, f"for (; {c} + vec_step({v}) <= ({p.bound}); {c} += vec_step({v}))",
                        f"    {v} += {term};", f"{p.acc} += KT_VACC_HSUMV({v});"]
            else:
                streams = {}
                for n, a, b in p.loads:
                    streams.setdefault((a, b.replace(" ", "")), (a, b, f"kt_vs{k}_{len(streams)}"))
                name = {n.id: streams[(a, b.replace(" ", ""))][2] for n, a, b in p.loads}
                subs = [Edit(n.start_byte - e0, n.end_byte - e0, f"{name[n.id]}.v[kt_v]") for n, _, _ in p.loads]
                term = apply_edits(st.raw[p.expr.start_byte:p.expr.end_byte], subs)
                # the width spelled once, as the size of the partial sums' array (which launch-config
                # leaves alone: a rule's own array); the rest takes it from there, so that baked code
                # holds no other number equal to it (see OPENCL_HEADER)
                w = f"kt_n{k}"
                main = [f"{p.ctype} {v}[KT_VACC];", f"constexpr int {w} = (int)(sizeof({v}) / sizeof({v}[0]));",
                        "#pragma unroll", f"for (int kt_v = 0; kt_v < {w}; ++kt_v) {v}[kt_v] = 0;", GENERATED,
                        f"for (; {c} + {w} <= ({p.bound}); {c} += {w}) {{"]
                main += [f"    kt_vec<{p.ctype}, {w}> {s};  kt_vload<{w}>({at_offset(a, b, c)}, {s}.v);"
                         for a, b, s in streams.values()]
                main += ["#pragma unroll", f"    for (int kt_v = 0; kt_v < {w}; ++kt_v) {v}[kt_v] += {term};", "}",
                         "#pragma unroll", f"for (int kt_v = 0; kt_v < {w}; ++kt_v) {p.acc} += {v}[kt_v];"]
            lines = ["{", *[("    " + ln if not ln.startswith("#") else ln) for ln in
                            [f"{p.vtype} {c} = {p.start};", *main, GENERATED,
                             f"for ({p.vtype} {p.var} = {c}; {p.var} < {p.bound}; ++{p.var})",
                             "    " + st.text(p.loop.child_by_field_name("body"))]], "}"]
            start = pragma_start(st, p.loop)
            lead = indent_before(st, start)
            new = ("\n#if KT_VACC > 1\n" + "\n".join(lead + ln if not ln.startswith("#") else ln for ln in lines) +
                   "\n#else\n" + lead + st.raw[start:p.loop.end_byte].decode() + "\n#endif\n" + lead)
            edits.append(Edit(start, p.loop.end_byte, new))
        st.source = apply_edits(st.raw, edits)
        st.prelude.append(HSUM if st.lang == "opencl" else guarded("VEC_HELPERS", CUDA_VEC))
        widths = st.opencl_vector_widths() if st.lang == "opencl" else (1, 2, 4, 8)
        header = OPENCL_HEADER if st.lang == "opencl" else "#define KT_VACC {{ VACC }}"
        st.add_param(Param("VACC", widths, header,
                           why="elements per step of a thread's serial sum (vector loads, VACC partial sums)"))
        return Applied(self.name, f"{len(plans)} serial sum(s) over consecutive elements taken VACC at a time",
                       ("VACC",))
