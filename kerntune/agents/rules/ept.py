"""The `elements-per-thread` rule: an element-wise kernel (global index, one bounds check, no barriers) takes
EPT elements per thread, strided by the block, and its grid is divided by EPT."""

from __future__ import annotations

import ast

from kerntune.agents.rules.base import (
    BARRIERS, Applied, Edit, Param, RewriteState, Rule, apply_edits, builtin_dim, has_call, int_literal,
    line_indent, unwrap,
)
from kerntune.source.parse import walk


def _global_index(st: RewriteState, value) -> bool:
    v = unwrap(value)
    if v is None:
        return False
    if st.lang == "opencl":
        return builtin_dim(st, v, "global") == "x"
    if v.type != "binary_expression" or st.text(v.child_by_field_name("operator")) != "+":
        return False
    parts = [unwrap(v.child_by_field_name("left")), unwrap(v.child_by_field_name("right"))]
    thread = [p for p in parts if builtin_dim(st, p, "thread") == "x"]
    prod = [p for p in parts if p.type == "binary_expression" and st.text(p.child_by_field_name("operator")) == "*"]
    if len(thread) != 1 or len(prod) != 1:
        return False
    f = [builtin_dim(st, prod[0].child_by_field_name(k), "block") or
         ("bdim" if builtin_dim(st, prod[0].child_by_field_name(k), "block_dim") == "x" else None)
         for k in ("left", "right")]
    return sorted(map(str, f)) == ["bdim", "x"]


def elementwise(st: RewriteState):
    """(function, index declaration, index name, guard if, kind) for the element-wise pattern."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        return None, "no kernel named " + st.kernel
    body = kernel.node.child_by_field_name("body")
    if has_call(st, body, BARRIERS[st.lang]):
        return None, "the kernel synchronizes its block: not element-wise"
    stmts = [c for c in body.named_children if c.type != "comment"]
    for i, s in enumerate(stmts):
        if s.type != "declaration":
            continue
        d = s.child_by_field_name("declarator")
        if d is None or d.type != "init_declarator" or not _global_index(st, d.child_by_field_name("value")):
            continue
        var = st.text(d.child_by_field_name("declarator"))
        rest = stmts[i + 1:]
        if any(n.type == "return_statement" for r in rest for n in walk(r)) and not (
                len(rest) >= 1 and rest[0].type == "if_statement" and is_exit_guard(st, rest[0], var)):
            return None, "the kernel returns from inside its element loop"
        assigned = [n for r in rest for n in walk(r) if n.type in ("assignment_expression", "update_expression")
                    and st.text(unwrap(n.child_by_field_name("left") or n.child_by_field_name("argument"))) == var]
        if assigned:
            return None, f"the index {var} is modified"
        if len(rest) == 1 and rest[0].type == "if_statement" and bound_guard(st, rest[0], var) \
                and rest[0].child_by_field_name("alternative") is None:
            return (kernel, s, var, rest, "guard"), ""
        if rest and rest[0].type == "if_statement" and is_exit_guard(st, rest[0], var):
            if any(n.type == "return_statement" for r in rest[1:] for n in walk(r)):
                return None, "the kernel returns from inside its element loop"
            return (kernel, s, var, rest, "exit"), ""
        return None, "the statements after the global index are not a single bounds check"
    return None, "no global thread index (blockIdx.x * blockDim.x + threadIdx.x / get_global_id(0))"


def bound_guard(st: RewriteState, if_node, var: str) -> bool:
    cond = unwrap(if_node.child_by_field_name("condition"))
    return cond is not None and cond.type == "binary_expression" and \
        st.text(cond.child_by_field_name("operator")) == "<" and st.text(unwrap(cond.child_by_field_name("left"))) == var


def is_exit_guard(st: RewriteState, if_node, var: str) -> bool:
    cond = unwrap(if_node.child_by_field_name("condition"))
    cons = if_node.child_by_field_name("consequence")
    if cond is None or cond.type != "binary_expression" or st.text(cond.child_by_field_name("operator")) != ">=":
        return False
    if st.text(unwrap(cond.child_by_field_name("left"))) != var:
        return False
    inner = cons.named_children if cons.type == "compound_statement" else [cons]
    return len(inner) == 1 and inner[0].type == "return_statement"


def scale_grid(grid_x, param: str, fixed: bool = False) -> str | None:
    """``ceil_div(n, B)`` times ``param``: ``ceil_div(n, B * param)``; ``fixed``: ``B * fixed(param)``, for a
    rule whose baked code spells the value only in names (see launch.substitute_constant)."""
    tree = ast.parse(str(grid_x), mode="eval")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ("ceil_div", "cdiv")
            and len(call.args) == 2):
        return None
    factor = ast.Name(id=param, ctx=ast.Load())
    if fixed:
        factor = ast.Call(func=ast.Name(id="fixed", ctx=ast.Load()), args=[factor], keywords=[])
    call.args[1] = ast.BinOp(left=call.args[1], op=ast.Mult(), right=factor)
    return ast.unparse(tree)


EPT_CHOICES = (1, 2, 4, 8)


def _baked_ept_in(st: RewriteState, fn):
    """(the literals, K) when ``fn`` holds this rule's own output with EPT baked to K (a later round):
    ``kt_first = (...) * K + tid`` and ``for (int kt_e = 0; kt_e < K; ++kt_e)``."""
    body = fn.child_by_field_name("body") if fn is not None else None
    if body is None:
        return None
    first = loop = None
    for n in walk(body):
        if n.type == "init_declarator" and st.text(n.child_by_field_name("declarator")) == "kt_first":
            first = n.child_by_field_name("value")
        elif n.type == "for_statement" and first is not None and loop is None:
            init = n.child_by_field_name("initializer")
            d = init.child_by_field_name("declarator") if init is not None and init.type == "declaration" else None
            if d is not None and d.type == "init_declarator" and st.text(d.child_by_field_name("declarator")) == "kt_e":
                loop = n
    if first is None or loop is None:
        return None
    first = unwrap(first)
    scaled = unwrap(first.child_by_field_name("left")) if first.type == "binary_expression" else None
    factor = scaled.child_by_field_name("right") if scaled is not None and scaled.type == "binary_expression" \
        and st.text(scaled.child_by_field_name("operator")) == "*" else None
    cond = unwrap(loop.child_by_field_name("condition"))
    bound = cond.child_by_field_name("right") if cond is not None and cond.type == "binary_expression" \
        and st.text(cond.child_by_field_name("operator")) == "<" else None
    k = int_literal(st, factor)
    if k is None or k < 1 or int_literal(st, bound) != k:
        return None
    return [factor, bound], k


def _baked_ept(st: RewriteState):
    """(the literals to rewrite, K) when the kernel is this rule's own output with EPT baked to K."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel), None)
    return _baked_ept_in(st, kernel.node) if kernel is not None else None


def baked_ept_literals(st: RewriteState, fn) -> list:
    """The numbers K of an EPT an earlier round baked in ``fn`` (``kt_first = ... * K``, ``kt_e < K``):
    the elements per thread, not the block's. A later round's launch-config leaves them alone (a 1-D
    block of 8 beside EPT = 8 once made the elements per thread follow the block, and a block of 16
    beside EPT = 8, half of it, made launch-config decline)."""
    found = _baked_ept_in(st, fn)
    return found[0] if found is not None else []


def _rescale_grid(grid_x, k: int, param: str) -> str | None:
    """``ceil_div(n, B * fixed(K))`` (a baked EPT of K; ``B * K`` before 2026-12-05) with K replaced by
    ``fixed(param)``."""
    tree = ast.parse(str(grid_x), mode="eval")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ("ceil_div", "cdiv")
            and len(call.args) == 2):
        return None
    d = call.args[1]
    if not (isinstance(d, ast.BinOp) and isinstance(d.op, ast.Mult)):
        return None
    r = d.right
    if isinstance(r, ast.Call) and isinstance(r.func, ast.Name) and r.func.id == "fixed" and len(r.args) == 1 \
            and not r.keywords:
        r = r.args[0]
    if not (isinstance(r, ast.Constant) and r.value == k):
        return None
    d.right = ast.Call(func=ast.Name(id="fixed", ctx=ast.Load()), args=[ast.Name(id=param, ctx=ast.Load())],
                       keywords=[])
    return ast.unparse(tree)


class ElementsPerThread(Rule):
    name = "elements-per-thread"
    summary = "several elements per thread (coalesced) for element-wise kernels, as a parameter"

    def check(self, st: RewriteState) -> str:
        baked = _baked_ept(st)
        if baked is not None:
            if _rescale_grid(st.launch.grid[0], baked[1], "EPT") is None:
                return (f"the kernel takes {baked[1]} elements per thread (an earlier round's rewrite), but the "
                        f"grid's x size is not ceil_div(elements, threads per block * {baked[1]})")
            return ""
        found, why = elementwise(st)
        if found is None:
            return why
        if scale_grid(st.launch.grid[0], "EPT") is None:
            return "the grid's x size is not ceil_div(elements, threads per block)"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        baked = _baked_ept(st)
        if baked is not None:    # an earlier round's EPT, baked: the same parameter again, from its value
            literals, k = baked
            st.source = apply_edits(st.raw, [Edit(n.start_byte, n.end_byte, "KT_EPT") for n in literals])
            st.launch = st.launch.model_copy(update={
                "grid": [_rescale_grid(st.launch.grid[0], k, "EPT"), *st.launch.grid[1:]]})
            more = (16,) if k >= max(EPT_CHOICES) else ()
            st.add_param(Param("EPT", (k, *(v for v in EPT_CHOICES + more if v != k)), "#define KT_EPT {{ EPT }}",
                               why=f"elements per thread, {k} in the kernel this round starts from"))
            return Applied(self.name, f"{st.kernel}: the {k} elements per thread of an earlier round as a parameter "
                                      "again", ("EPT",))
        (kernel, decl, var, rest, kind), _ = elementwise(st)
        d = decl.child_by_field_name("declarator")
        vtype = st.text(decl.child_by_field_name("type"))
        quals = " ".join(st.text(c) for c in decl.children if c.type == "type_qualifier" and st.text(c) != "const")
        vtype = (quals + " " + vtype).strip()
        indent = line_indent(st, decl)
        if st.lang == "cuda":
            base, step, tid = "blockIdx.x * blockDim.x", "blockDim.x", "threadIdx.x"
        else:
            base, step, tid = "get_group_id(0) * get_local_size(0)", "get_local_size(0)", "get_local_id(0)"
        if kind == "guard":
            inner = st.text(rest[0])
        else:
            bound = st.text(unwrap(rest[0].child_by_field_name("condition")).child_by_field_name("right"))
            inner = f"if ({var} < {bound}) {{\n" + "\n".join(indent + "    " + st.statement_text(r) for r in rest[1:]) + \
                f"\n{indent}    }}"
        new = (f"const {vtype} kt_first = ({vtype})({base}) * KT_EPT + ({vtype}){tid};\n"
               f"{indent}#pragma unroll\n"
               f"{indent}for (int kt_e = 0; kt_e < KT_EPT; ++kt_e) {{\n"
               f"{indent}    const {vtype} {var} = kt_first + ({vtype})kt_e * ({vtype}){step};\n"
               f"{indent}    {inner}\n"
               f"{indent}}}")
        start, end = decl.start_byte, rest[-1].end_byte
        st.source = apply_edits(st.raw, [Edit(start, end, new)])
        # EPT inside fixed(): baked, an EPT equal to the block size stays the EPT (ceil_div(n, 8 * fixed(8))),
        # which launch-config leaves alone, as it leaves the baked code's K (baked_ept_literals)
        st.launch = st.launch.model_copy(update={"grid": [scale_grid(st.launch.grid[0], "EPT", fixed=True),
                                                          *st.launch.grid[1:]]})
        st.add_param(Param("EPT", EPT_CHOICES, "#define KT_EPT {{ EPT }}",
                           why="consecutive blocks of threads each take EPT elements, strided by the block"))
        del d
        return Applied(self.name, f"{st.kernel}: EPT elements per thread, grid divided by EPT", ("EPT",))
