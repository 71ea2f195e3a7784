"""Structural rules: warp-shuffle (sub-group) reductions in place of
shared-memory trees, several elements per thread for element-wise kernels,
and vectorized (16-byte) accesses in block-strided loops.

Each recognizes its pattern on the tree-sitter parse, checks what makes the
rewrite semantics-preserving, and keeps the original code reachable as the
parameter's first value (through ``#if``), so the template's baseline is the
original kernel.
"""

from __future__ import annotations

import ast
import re

from kerntune.agents.rules.access import (
    accessor_call, accessor_functions, affine_base, every_trip, identifiers, squash,
)
from kerntune.agents.rules.base import (
    Applied, Edit, Param, Rule, RuleDeclined, RewriteState, apply_edits, builtin_dim, builtin_x, int_literal,
    opencl_space, pragma_start, unwrap, why_not,
)
from kerntune.agents.rules.generic import GENERATED, is_generated
from kerntune.source.parse import walk

BARRIERS = {"cuda": "__syncthreads", "opencl": "barrier"}
REDUCE_OPS = {"cuda": {"max": "max", "fmaxf": "max", "min": "min", "fminf": "min"},
              "opencl": {"max": "max", "fmax": "max", "min": "min", "fmin": "min"}}


def guarded(name: str, code: str) -> str:
    """Helper code that may meet a copy of itself in a later round (rewrites of rewritten kernels)."""
    return f"#ifndef KT_HAVE_{name}\n#define KT_HAVE_{name} 1\n{code}\n#endif"


def _calls(st: RewriteState, node, name: str) -> bool:
    return any(n.type == "call_expression" and st.text(n.child_by_field_name("function")) == name
               for n in walk(node))


def decl_value(st: RewriteState, fn, name: str):
    """The initializer of a local variable ``name`` in function ``fn``, if declared once."""
    found = []
    for n in walk(fn):
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier" and st.text(d) == name:
                found.append(n.child_by_field_name("value"))
    return found[0] if len(found) == 1 else None


def _is_thread_x(st: RewriteState, fn, node) -> bool:
    node = unwrap(node)
    if builtin_dim(st, node, "thread") == "x":
        return True
    if node is not None and node.type == "identifier":
        value = decl_value(st, fn, st.text(node))
        return value is not None and builtin_dim(st, value, "thread") == "x"
    return False


def _is_block_dim_x(st: RewriteState, node, fn=None) -> bool:
    node = unwrap(node)
    if node is None:
        return False
    if builtin_dim(st, node, "block_dim") == "x" or st.text(node) == "KT_BLOCK":
        return True
    if node.type != "identifier":
        return False
    # a macro standing for the block size (#define THREADS KT_BLOCK, after launch-config)
    if st.macro_value(st.text(node)) == "KT_BLOCK":
        return True
    # a local variable holding it (const int threads = get_local_size(0);)
    value = decl_value(st, fn, st.text(node)) if fn is not None else None
    return value is not None and builtin_dim(st, value, "block_dim") == "x"


def _line_indent(st: RewriteState, node) -> str:
    start = st.raw.rfind(b"\n", 0, node.start_byte) + 1
    pre = st.raw[start:node.start_byte].decode()
    return pre if not pre.strip() else ""


def _indent_before(st: RewriteState, offset: int) -> str:
    start = st.raw.rfind(b"\n", 0, offset) + 1
    pre = st.raw[start:offset].decode()
    return pre if not pre.strip() else ""


# --- warp-shuffle reductions ---------------------------------------------------------------

def _tree_step(st: RewriteState, fn, body, var: str):
    """(array, op) when ``body`` is one tree step: if (guard) A[t] op= A[t + s]; barrier."""
    stmts = [c for c in body.named_children if c.type != "comment"] if body.type == "compound_statement" else [body]
    if len(stmts) != 2 or stmts[0].type != "if_statement" or stmts[1].type != "expression_statement":
        return None
    if not _calls(st, stmts[1], BARRIERS[st.lang]) or stmts[0].child_by_field_name("alternative") is not None:
        return None
    cons = stmts[0].child_by_field_name("consequence")
    if cons.type == "compound_statement":
        inner = [c for c in cons.named_children if c.type != "comment"]
        if len(inner) != 1:
            return None
        cons = inner[0]
    if cons.type != "expression_statement" or not cons.named_children:
        return None
    a = cons.named_children[0]
    if a.type != "assignment_expression":
        return None
    left, right, op = a.child_by_field_name("left"), a.child_by_field_name("right"), \
        st.text(a.child_by_field_name("operator"))

    def elem(n, plus_s: bool):
        n = unwrap(n)
        if n is None or n.type != "subscript_expression":
            return None
        arr = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices")
        idx = unwrap(idx.named_children[0]) if idx is not None and idx.named_children else None
        if arr is None or arr.type != "identifier" or idx is None:
            return None
        if not plus_s:
            return st.text(arr) if _is_thread_x(st, fn, idx) else None
        if idx.type != "binary_expression" or st.text(idx.child_by_field_name("operator")) != "+":
            return None
        l, r = idx.child_by_field_name("left"), idx.child_by_field_name("right")
        if _is_thread_x(st, fn, l) and st.text(unwrap(r)) == var:
            return st.text(arr)
        return None

    target = elem(left, False)
    if target is None:
        return None
    if op == "+=" and elem(right, True) == target:
        return target, "sum"
    if op != "=":
        return None
    r = unwrap(right)
    if r.type == "binary_expression" and st.text(r.child_by_field_name("operator")) == "+":
        l2, r2 = r.child_by_field_name("left"), r.child_by_field_name("right")
        if elem(l2, False) == target and elem(r2, True) == target:
            return target, "sum"
    if r.type == "call_expression":
        name = st.text(r.child_by_field_name("function"))
        args = r.child_by_field_name("arguments").named_children
        if name in REDUCE_OPS[st.lang] and len(args) == 2 and elem(args[0], False) == target \
                and elem(args[1], True) == target:
            return target, REDUCE_OPS[st.lang][name]
    return None


def _launch_blocks(st: RewriteState) -> list[int]:
    """The block sizes (x) the template may launch: the literal, or the BLOCK parameter's values."""
    b = st.launch.block[0] if st.launch.block else 1
    if isinstance(b, int) or str(b).isdigit():
        return [int(b)]
    p = st.params.get(str(b))
    return [int(v) for v in p.values] if p is not None else [32, 64, 128, 256, 512, 1024]


def _tree_loops(st: RewriteState, reasons: list[str] | None = None) -> list[tuple]:
    """The loops of whole-block tree steps; ``reasons`` collects why other tree loops are left."""
    from kerntune.agents.rules.treecover import covers_block

    found = []
    for fn in st.functions():
        for loop in (n for n in walk(fn) if n.type == "for_statement"):
            init = loop.child_by_field_name("initializer")
            if init is None:
                continue
            if init.type == "declaration":
                d = init.child_by_field_name("declarator")
                if d is None or d.type != "init_declarator":
                    continue
                var = st.text(d.child_by_field_name("declarator"))
            elif init.type == "assignment_expression":
                var = st.text(init.child_by_field_name("left"))
            else:
                continue
            body = loop.child_by_field_name("body")
            step = _tree_step(st, fn, body, var)
            if step is None:
                continue
            array, op = step
            start = d.child_by_field_name("value") if init.type == "declaration" else init.child_by_field_name("right")
            guard = next(c for c in (body.named_children if body.type == "compound_statement" else [body])
                         if c.type == "if_statement").child_by_field_name("condition")
            why = covers_block(st, fn, start, loop.child_by_field_name("condition"), loop.child_by_field_name("update"),
                               guard, var, _launch_blocks(st), lambda n: _is_thread_x(st, fn, n),
                               lambda n: _is_block_dim_x(st, n, fn))
            if why:
                if reasons is not None:
                    reasons.append(why)
                continue
            decl = next((n for n in walk(fn) if n.type == "declaration" and any(
                c.type == "array_declarator" and st.text(c.child_by_field_name("declarator")) == array
                for c in n.named_children)), None)
            if decl is None:   # a pointer parameter to shared (local) memory
                decl = next((p for p in walk(fn) if p.type == "parameter_declaration" and any(
                    d.type == "pointer_declarator" and st.text(d.child_by_field_name("declarator")) == array
                    for d in p.named_children)), None)
                if decl is None or st.lang == "cuda":
                    continue
            shared = ("__shared__" in st.text(decl)) if st.lang == "cuda" else opencl_space(st, decl) == "local"
            if not shared:
                continue
            elem_type = st.text(decl.child_by_field_name("type"))
            found.append((fn, loop, array, op, elem_type, var))
    return found


CUDA_REDUCE = """template <typename T>
__device__ __forceinline__ T kt_combine_{op}(T a, T b) {{ return {expr}; }}
template <typename T>
__device__ __forceinline__ void kt_block_reduce_{op}(T* sh, unsigned int tid)
{{
    // each thread's value is in sh[tid]; leaves the block's {op} in sh[0] for every thread
    T v = sh[tid];
    __syncthreads();
    for (int o = 16; o > 0; o >>= 1) v = kt_combine_{op}(v, __shfl_down_sync(0xffffffffu, v, o));
    if ((tid & 31u) == 0u) sh[tid >> 5] = v;
    __syncthreads();
    if (tid < 32u) {{
        const unsigned int warps = (blockDim.x + 31u) >> 5;
        v = tid < warps ? sh[tid] : {identity};
        for (int o = 16; o > 0; o >>= 1) v = kt_combine_{op}(v, __shfl_down_sync(0xffffffffu, v, o));
        if (tid == 0u) sh[0] = v;
    }}
    __syncthreads();
}}"""
CUDA_COMBINE = {"sum": "a + b", "max": "a > b ? a : b", "min": "a < b ? a : b"}
CUDA_IDENTITY = {"sum": "T(0)", "max": "sh[0]", "min": "sh[0]"}

OPENCL_REDUCE = """inline void kt_block_reduce_{op}_{tname}(__local {ctype}* sh, uint tid)
{{
    // each work-item's value is in sh[tid]; leaves the group's {op} in sh[0] for every work-item
    {ctype} v = sh[tid];
    barrier(CLK_LOCAL_MEM_FENCE);
    v = sub_group_reduce_{op2}(v);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0) {{
        {ctype} t = sh[0];
        for (uint k = 1; k < get_num_sub_groups(); ++k) t = {combine};
        sh[0] = t;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
}}"""
OPENCL_COMBINE = {"sum": "t + sh[k]", "max": "max(t, sh[k])", "min": "min(t, sh[k])"}
OPENCL_OP = {"sum": "add", "max": "max", "min": "min"}


class ShuffleReduction(Rule):
    name = "shuffle-reduction"
    summary = "warp-shuffle (OpenCL: sub-group) reductions in place of shared-memory trees, as a parameter"

    def check(self, st: RewriteState) -> str:
        reasons: list[str] = []
        if not _tree_loops(st, reasons):
            return reasons[0] if reasons else \
                "no shared-memory tree reduction over the block (if (t < s) a[t] += a[t + s]; barrier)"
        if st.lang == "opencl" and not st.subgroups:
            return "the device has no sub-groups (cl_khr_subgroups) to reduce with"
        block = st.launch.block
        if len(block) > 1 and any(str(b) not in ("1",) for b in block[1:]):
            return "the block is not one-dimensional"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        loops = sorted(_tree_loops(st), key=lambda x: x[1].start_byte)
        edits, names, helpers = [], [], {}          # helper code -> the parameters that call it
        for fn, loop, array, op, elem_type, _ in loops:
            name = st.fresh("REDUCE")
            while name in names:
                name += "x"
            names.append(name)
            tid = "threadIdx.x" if st.lang == "cuda" else "get_local_id(0)"
            if st.lang == "cuda":
                call = f"kt_block_reduce_{op}({array}, {tid});"
                helpers.setdefault(CUDA_REDUCE.format(op=op, expr=CUDA_COMBINE[op], identity=CUDA_IDENTITY[op]),
                                   []).append(name)
            else:
                tname = "_".join(elem_type.split())
                call = f"kt_block_reduce_{op}_{tname}({array}, {tid});"
                helpers.setdefault(OPENCL_REDUCE.format(op=op, tname=tname, ctype=elem_type, op2=OPENCL_OP[op],
                                                        combine=OPENCL_COMBINE[op]), []).append(name)
            start = pragma_start(st, loop)         # the loop's unroll pragma goes with it into #else
            indent, lead = _line_indent(st, loop), _indent_before(st, start)
            new = (f"\n#if KT_{name}\n{indent}{call}\n#else\n{lead}{st.raw[start:loop.end_byte].decode()}"
                   f"\n#endif\n{lead}")
            edits.append(Edit(start, loop.end_byte, new.lstrip("\n") if not lead else new))
            st.add_param(Param(name, ("tree", "shuffle"),
                               f"#define KT_{name} {{{{ 1 if {name} == 'shuffle' else 0 }}}}",
                               why=f"{op} over {array}[] ({elem_type})"))
            if st.lang == "cuda":
                blocks = [b for b in st.launch.block]
                b0 = blocks[0]
                if isinstance(b0, str) and b0.startswith("BLOCK"):
                    st.restrictions.append(f"{name} == 'tree' or {b0} % 32 == 0")
                elif int(b0) % 32:
                    raise RuleDeclined(f"the block of {b0} threads is not a whole number of warps")
        st.source = apply_edits(st.raw, edits)
        # a helper exists only where a parameter chose it: the 'tree' baseline compiles without sub-groups
        st.prelude.extend("#if " + " || ".join(f"KT_{n}" for n in helpers[h]) + "\n"
                          + guarded("REDUCE_" + h.split("kt_block_reduce_")[1].split("(")[0].upper(), h) + "\n#endif"
                          for h in sorted(helpers))
        return Applied(self.name, f"{len(names)} shared-memory tree(s) may reduce with "
                                  f"{'warp shuffles' if st.lang == 'cuda' else 'sub-group reductions'}",
                       tuple(names))


# --- elements per thread ---------------------------------------------------------------------

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


def _elementwise(st: RewriteState):
    """(function, index declaration, index name, guard if, kind) for the element-wise pattern."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        return None, "no kernel named " + st.kernel
    body = kernel.node.child_by_field_name("body")
    if _calls(st, body, BARRIERS[st.lang]):
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
                len(rest) >= 1 and rest[0].type == "if_statement" and _is_exit_guard(st, rest[0], var)):
            return None, "the kernel returns from inside its element loop"
        assigned = [n for r in rest for n in walk(r) if n.type in ("assignment_expression", "update_expression")
                    and st.text(unwrap(n.child_by_field_name("left") or n.child_by_field_name("argument"))) == var]
        if assigned:
            return None, f"the index {var} is modified"
        if len(rest) == 1 and rest[0].type == "if_statement" and _bound_guard(st, rest[0], var) \
                and rest[0].child_by_field_name("alternative") is None:
            return (kernel, s, var, rest, "guard"), ""
        if rest and rest[0].type == "if_statement" and _is_exit_guard(st, rest[0], var):
            if any(n.type == "return_statement" for r in rest[1:] for n in walk(r)):
                return None, "the kernel returns from inside its element loop"
            return (kernel, s, var, rest, "exit"), ""
        return None, "the statements after the global index are not a single bounds check"
    return None, "no global thread index (blockIdx.x * blockDim.x + threadIdx.x / get_global_id(0))"


def _bound_guard(st: RewriteState, if_node, var: str) -> bool:
    cond = unwrap(if_node.child_by_field_name("condition"))
    return cond is not None and cond.type == "binary_expression" and \
        st.text(cond.child_by_field_name("operator")) == "<" and st.text(unwrap(cond.child_by_field_name("left"))) == var


def _is_exit_guard(st: RewriteState, if_node, var: str) -> bool:
    cond = unwrap(if_node.child_by_field_name("condition"))
    cons = if_node.child_by_field_name("consequence")
    if cond is None or cond.type != "binary_expression" or st.text(cond.child_by_field_name("operator")) != ">=":
        return False
    if st.text(unwrap(cond.child_by_field_name("left"))) != var:
        return False
    inner = cons.named_children if cons.type == "compound_statement" else [cons]
    return len(inner) == 1 and inner[0].type == "return_statement"


def _scale_grid(grid_x, param: str) -> str | None:
    tree = ast.parse(str(grid_x), mode="eval")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ("ceil_div", "cdiv")
            and len(call.args) == 2):
        return None
    call.args[1] = ast.BinOp(left=call.args[1], op=ast.Mult(), right=ast.Name(id=param, ctx=ast.Load()))
    return ast.unparse(tree)


EPT_CHOICES = (1, 2, 4, 8)


def _baked_ept(st: RewriteState):
    """(the literals to rewrite, K) when the kernel is this rule's own output with EPT baked to K
    (a later round): ``kt_first = (...) * K + tid`` and ``for (int kt_e = 0; kt_e < K; ++kt_e)``."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel), None)
    if kernel is None:
        return None
    first = loop = None
    for n in walk(kernel.node.child_by_field_name("body")):
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


def _rescale_grid(grid_x, k: int, param: str) -> str | None:
    """``ceil_div(n, B * K)`` (a baked EPT of K) with K replaced by ``param``."""
    tree = ast.parse(str(grid_x), mode="eval")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ("ceil_div", "cdiv")
            and len(call.args) == 2):
        return None
    d = call.args[1]
    if not (isinstance(d, ast.BinOp) and isinstance(d.op, ast.Mult) and isinstance(d.right, ast.Constant)
            and d.right.value == k):
        return None
    d.right = ast.Name(id=param, ctx=ast.Load())
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
        found, why = _elementwise(st)
        if found is None:
            return why
        if _scale_grid(st.launch.grid[0], "EPT") is None:
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
        (kernel, decl, var, rest, kind), _ = _elementwise(st)
        d = decl.child_by_field_name("declarator")
        vtype = st.text(decl.child_by_field_name("type"))
        quals = " ".join(st.text(c) for c in decl.children if c.type == "type_qualifier" and st.text(c) != "const")
        vtype = (quals + " " + vtype).strip()
        indent = _line_indent(st, decl)
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
        st.launch = st.launch.model_copy(update={"grid": [_scale_grid(st.launch.grid[0], "EPT"), *st.launch.grid[1:]]})
        st.add_param(Param("EPT", EPT_CHOICES, "#define KT_EPT {{ EPT }}",
                           why="consecutive blocks of threads each take EPT elements, strided by the block"))
        del d
        return Applied(self.name, f"{st.kernel}: EPT elements per thread, grid divided by EPT", ("EPT",))


# --- vectorized accesses -------------------------------------------------------------------

def block_strided(st: RewriteState, fn, loop):
    """(variable, bound node) of ``for (T i = thread x; i < bound; i += block size x)`` (the bound
    free of ``i``), else None."""
    init, cond, upd = (loop.child_by_field_name(k) for k in ("initializer", "condition", "update"))
    if init is None or cond is None or upd is None or init.type != "declaration":
        return None
    d = init.child_by_field_name("declarator")
    if d is None or d.type != "init_declarator":
        return None
    start = unwrap(d.child_by_field_name("value"))
    split = _split_share(st, fn, start)
    if not _is_thread_x(st, fn, start) and split is None:
        return None
    var = st.text(d.child_by_field_name("declarator"))
    c = unwrap(cond)
    if c.type != "binary_expression" or st.text(c.child_by_field_name("operator")) != "<" or \
            st.text(unwrap(c.child_by_field_name("left"))) != var:
        return None
    bound_node = c.child_by_field_name("right")
    if any(n.type == "identifier" and st.text(n) == var for n in walk(bound_node)):
        return None
    u = unwrap(upd)
    if not (u.type == "assignment_expression" and st.text(u.child_by_field_name("operator")) == "+="
            and st.text(u.child_by_field_name("left")) == var):
        return None
    step = u.child_by_field_name("right")
    if not (_is_block_dim_x(st, step, fn) if split is None else squash(st.text(step)) == squash(split[1])):
        return None
    return var, bound_node


def _split_share(st: RewriteState, fn, start):
    """split-groups' start of a block-strided loop, ``tid + (group % K) * block`` stepping ``block * K``
    (K the parameter KT_SPLIT, or the number a later round baked in): (start, step) as text; else None.
    The split replaced every other use of the group index by ``group / K``, so the loop is a block of K
    times as many threads; a number other than 1 counts only where the function's every read of the
    group index is such a quotient or remainder."""
    from kerntune.agents.rules.groupsplit import split_factor, split_start

    if start is None or start.type != "binary_expression" or st.text(start.child_by_field_name("operator")) != "+":
        return None
    k = split_factor(st, start.child_by_field_name("right"))
    if k is None or not _is_thread_x(st, fn, start.child_by_field_name("left")):
        return None
    if k not in ("KT_SPLIT", "1"):
        from kerntune.agents.rules.groupsplit import group_reads, quotient_or_remainder

        if any(quotient_or_remainder(st, g) != k for g in group_reads(st, fn)):
            return None
    return st.text(start), split_start(st, k)[1]


def loop_share(st: RewriteState, fn, loop) -> tuple[str, str] | None:
    """(start, step) of a block-strided loop split-groups dealt out, else None."""
    d = loop.child_by_field_name("initializer").child_by_field_name("declarator")
    return _split_share(st, fn, unwrap(d.child_by_field_name("value")))


def _strided_loops(st: RewriteState):
    """Loops `for (int i = tid; i < N; i += blockDim)` whose body touches memory only as P[i]."""
    out, reasons = [], []
    for fn in st.functions():
        for loop in (n for n in walk(fn) if n.type == "for_statement" and not is_generated(st, n)):
            head = block_strided(st, fn, loop)
            if head is None:
                continue
            var, bound_node = head
            body = loop.child_by_field_name("body")
            why = _vectorizable_body(st, body, var)
            if why:
                reasons.append(why)
                continue
            out.append((fn, loop, var, st.text(bound_node), body))
    return out, reasons


class Stream:
    """The elements of one array at ``base + i`` for the loop's ``i``: loaded or stored VEC at a time."""

    def __init__(self, array: str, base: str, name: str):
        self.array, self.base, self.name = array, base, name
        self.read = self.write = self.cond_write = False
        self.every_trip = False         # some access of it is made on every trip (not only under a branch)
        self.nodes: list = []           # subscripts p[base + i]
        self.calls: list = []           # accessor calls' (pointer, index) arguments

    def address(self, start: str) -> str:
        return f"{self.array} + {self.base} + {start}" if self.base else f"{self.array} + {start}"

    def element(self, start: str) -> str:
        return f"{self.array}[{self.base} + {start}]" if self.base else f"{self.array}[{start}]"


_IMPURE = ("call_expression", "subscript_expression", "assignment_expression", "update_expression",
           "pointer_expression", "comma_expression")


def _substituted(text: str, consts: dict[str, str]) -> str:
    if not consts:
        return text
    return re.sub(r"\b(" + "|".join(map(re.escape, consts)) + r")\b", lambda m: consts[m.group(1)], text)


def _local_constants(st: RewriteState, body, var: str, assigned: set[str]):
    """What the body's leading declarations compute: (constants, aliases). A constant is a name declared
    once at the top of the body from names the loop does not change, with no load or call (the same
    value for every element): name -> its definition, cast to its type and parenthesized, to be used
    outside the body. An alias is a name declared once as ``base + var`` (``idx = row * cols + c``):
    name -> base, the constants in it written out."""
    counts: dict[str, int] = {}
    for n in walk(body):
        if n.type == "init_declarator" and n.child_by_field_name("declarator").type == "identifier":
            name = st.text(n.child_by_field_name("declarator"))
            counts[name] = counts.get(name, 0) + 1
    consts: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for stmt in body.named_children if body.type == "compound_statement" else []:
        if stmt.type != "declaration":
            continue
        ds = [d for d in stmt.named_children if d.type == "init_declarator"]
        if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
            continue
        name, value = st.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
        if value is None or name in assigned or counts.get(name) != 1 or any(n.type in _IMPURE for n in walk(value)):
            continue
        names = identifiers(st, value)
        locals_ = {x for x in names if x in counts} - {var}
        if not locals_ <= consts.keys():
            continue
        if var not in names:
            ctype = " ".join(st.text(stmt.child_by_field_name("type")).split())
            consts[name] = f"(({ctype})({_substituted(st.text(value), consts)}))"
        else:
            base = affine_base(st, value, var)
            if base is not None:
                aliases[name] = _substituted(base, consts)
    return consts, aliases


def _conditional(node, body) -> bool:
    """Whether ``node`` runs under a condition (or a loop) inside ``body``."""
    p = node.parent
    while p is not None and p != body:
        if p.type in ("if_statement", "conditional_expression", "while_statement", "for_statement"):
            return True
        p = p.parent
    return False


def _accesses(st: RewriteState, body, var: str):
    """The streams (one per array and base) the body touches as ``p[base + var]``, with ``base`` loop
    invariant, and whether ``var`` has other uses; None (with why) when an access is of another form.
    An index may also be a name the body declares as ``base + var`` (``p[idx]`` after
    ``const long idx = row * cols + c;``), and a base may use names the body declares from values the
    loop does not change (:func:`_local_constants`: they are written out in the stream's address)."""
    assigned = {st.text(unwrap(n.child_by_field_name("left") or n.child_by_field_name("argument")))
                for n in walk(body) if n.type in ("assignment_expression", "update_expression")}
    declared = {st.text(n.child_by_field_name("declarator")) for n in walk(body) if n.type == "init_declarator"}
    consts, aliases = _local_constants(st, body, var, assigned)
    # CUDA only: an OpenCL accessor's pointer parameter has an address space, and a lane's buffer is private
    accessors = accessor_functions(st) if st.lang == "cuda" else {}
    streams: dict[tuple[str, str], Stream] = {}
    other_uses = False
    subs = set()
    for n in walk(body):
        call = accessor_call(st, n, accessors)
        if call is not None:
            index, arr = call[2], unwrap(call[1])
        elif n.type == "subscript_expression":
            idx = n.child_by_field_name("indices")
            if idx is None or len(idx.named_children) != 1:
                continue
            index, arr = idx.named_children[0], n.child_by_field_name("argument")
        else:
            continue
        alias = unwrap(index)
        alias = aliases.get(st.text(alias)) if alias is not None and alias.type == "identifier" else None
        if alias is None and var not in identifiers(st, index):
            continue
        if arr is None or arr.type != "identifier":
            return None, f"{st.text(n)} indexes something other than an array with the loop index {var}"
        if alias is not None:
            base = alias
        else:
            base = affine_base(st, index, var)
            if base is None or ((identifiers(st, index) - {var}) & (assigned | declared)) - consts.keys():
                return None, f"the loop index {var} is used in {st.text(n)}, not as p[base + {var}]"
            base = _substituted(base, consts)
        key = (st.text(arr), squash(base))
        if key not in streams:
            streams[key] = Stream(st.text(arr), base, f"kt_v_{st.text(arr)}{len([k for k in streams if k[0] == key[0]]) or ''}")
        stream = streams[key]
        stream.every_trip = stream.every_trip or every_trip(st, n, body)
        if call is not None:          # an accessor: its pointer and index arguments become the lane's buffer
            stream.calls.append((call[1], call[2]))
            subs.add(call[2].id)
            stream.read = stream.read or call[0].read
            if call[0].write:
                stream.write = True
                stream.cond_write = stream.cond_write or _conditional(n, body)
            continue
        stream.nodes.append(n)
        subs.add(n.id)
        parent = n.parent
        if parent is not None and parent.type == "assignment_expression" and parent.child_by_field_name("left") == n:
            stream.write = True
            if st.text(parent.child_by_field_name("operator")) != "=":
                stream.read = True
            stream.cond_write = stream.cond_write or _conditional(parent, body)
        elif parent is not None and parent.type == "update_expression":
            stream.read = stream.write = True
        else:
            stream.read = True
    for n in walk(body):
        if n.type == "identifier" and st.text(n) == var:
            p = n
            while p is not None and p != body and p.id not in subs:
                p = p.parent
            if p is None or p == body:
                other_uses = True
    for s in streams.values():
        if not s.every_trip:
            return None, (f"{s.element(var)} is accessed only under a branch of the loop body: a vector step would "
                          "touch elements the original skips (past an array's end when the branch is a bounds check)")
    written = {s.array for s in streams.values() if s.write}
    for arr in written:
        if len([s for s in streams.values() if s.array == arr]) > 1:
            return None, f"{arr} is written at one offset from {var} and accessed at another"
    return (list(streams.values()), other_uses), ""


def _vectorizable_body(st: RewriteState, body, var: str) -> str:
    for n in walk(body):
        if n.type in ("return_statement", "break_statement", "continue_statement", "goto_statement"):
            return "the loop body leaves the loop"
        if n.type == "call_expression" and st.text(n.child_by_field_name("function")) in (
                BARRIERS[st.lang], "atomicAdd", "atomic_add", "atomic_inc"):
            return "the loop body synchronizes or uses atomics"
        if n.type == "for_statement" or n.type == "while_statement":
            return "the loop body has an inner loop"
    acc, why = _accesses(st, body, var)
    if acc is None:
        return why
    if not acc[0]:
        return "the loop body does not access memory through the index"
    return ""


CUDA_VEC = """template <typename T, int N> struct kt_vec { alignas(16) T v[N]; };
template <typename R> struct kt_elem { typedef R type; };
template <typename R> struct kt_elem<R&> { typedef R type; };
template <typename R> struct kt_elem<const R&> { typedef R type; };
template <typename R> struct kt_elem<const R> { typedef R type; };
template <int N, typename T>
__device__ __forceinline__ void kt_vload(const T* p, T* v)
{
    // 16-byte loads when the address allows, else element by element
    if ((sizeof(T) * N) % 16 == 0 && (reinterpret_cast<unsigned long long>(p) & 15ull) == 0ull) {
#pragma unroll
        for (int k = 0; k < (int)(sizeof(T) * N / 16); ++k)
            reinterpret_cast<uint4*>(v)[k] = reinterpret_cast<const uint4*>(p)[k];
    } else if (sizeof(T) * N == 8 && (reinterpret_cast<unsigned long long>(p) & 7ull) == 0ull) {
        *reinterpret_cast<uint2*>(v) = *reinterpret_cast<const uint2*>(p);
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) v[k] = p[k];
    }
}
template <int N, typename T>
__device__ __forceinline__ void kt_vstore(T* p, const T* v)
{
    if ((sizeof(T) * N) % 16 == 0 && (reinterpret_cast<unsigned long long>(p) & 15ull) == 0ull) {
#pragma unroll
        for (int k = 0; k < (int)(sizeof(T) * N / 16); ++k)
            reinterpret_cast<uint4*>(p)[k] = reinterpret_cast<const uint4*>(v)[k];
    } else if (sizeof(T) * N == 8 && (reinterpret_cast<unsigned long long>(p) & 7ull) == 0ull) {
        *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(v);
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k) p[k] = v[k];
    }
}"""


def _pointee_type(st: RewriteState, fn, name: str) -> str | None:
    """The element type of pointer ``name`` (OpenCL needs it spelled out)."""
    for n in walk(fn):
        if n.type in ("parameter_declaration", "declaration"):
            for d in walk(n):
                if d.type == "pointer_declarator":
                    inner = d.child_by_field_name("declarator")
                    while inner is not None and inner.type not in ("identifier",):
                        inner = inner.child_by_field_name("declarator")
                    if inner is not None and st.text(inner) == name:
                        t = n.child_by_field_name("type")
                        return st.text(t) if t is not None else None
    return None


class Vectorize(Rule):
    name = "vectorize"
    summary = "VEC consecutive elements per thread in block-strided loops, with 16-byte loads and stores (CUDA)"

    def check(self, st: RewriteState) -> str:
        loops, reasons = _strided_loops(st)
        if loops:
            return ""
        return reasons[0] if reasons else "no block-strided loop (for (i = threadIdx.x; i < n; i += blockDim.x))"

    def apply(self, st: RewriteState) -> Applied:
        loops, _ = _strided_loops(st)
        edits = []
        for fn, loop, var, bound, body in loops:
            (streams, other_uses), _ = _accesses(st, body, var)
            ind = _line_indent(st, loop)
            tid, bdim = loop_share(st, fn, loop) or (builtin_x(st, "thread"), builtin_x(st, "block_dim"))
            vtype = st.text(loop.child_by_field_name("initializer").child_by_field_name("type"))
            # rewrite each p[base + var] -> kt_v_p[kt_v] inside the body (by byte ranges)
            b0 = body.start_byte
            buf = ".v" if st.lang == "cuda" else ""
            sub_edits = [Edit(n.start_byte - b0, n.end_byte - b0, f"{s.name}{buf}[kt_v]") for s in streams for n in s.nodes]
            sub_edits += [Edit(a.start_byte - b0, a.end_byte - b0, text) for s in streams for ptr, idx in s.calls
                          for a, text in ((ptr, s.name + buf), (idx, "kt_v"))]
            vec_body = apply_edits(st.raw[body.start_byte:body.end_byte], sub_edits)
            if other_uses:       # the index itself is still needed (a position, a guard): define it per element
                vec_body = "{ const " + vtype + " " + var + " = kt_i0 + kt_v; " + vec_body + " }"
            lines = [f"for ({vtype} kt_i0 = ({tid}) * KT_VEC; kt_i0 < {bound}; kt_i0 += ({bdim}) * KT_VEC) {{",
                     f"    if (kt_i0 + KT_VEC <= {bound}) {{"]
            for s in streams:
                if st.lang == "cuda":
                    lines.append(f"        kt_vec<typename kt_elem<decltype({s.array}[0])>::type, KT_VEC> {s.name};")
                else:
                    t = _pointee_type(st, fn, s.array)
                    if t is None:
                        raise RuleDeclined(f"cannot tell the element type of {s.array}")
                    lines.append(f"        {t} {s.name}[KT_VEC];")
            for s in streams:
                if s.read or s.cond_write:
                    if st.lang == "cuda":
                        lines.append(f"        kt_vload<KT_VEC>({s.address('kt_i0')}, {s.name}.v);")
                    else:
                        lines.append(f"        for (int kt_v = 0; kt_v < KT_VEC; ++kt_v) {s.name}[kt_v] = "
                                     f"{s.element('kt_i0 + kt_v')};")
            lines += ["#pragma unroll", "        for (int kt_v = 0; kt_v < KT_VEC; ++kt_v)",
                      "            " + vec_body]
            for s in streams:
                if s.write:
                    if st.lang == "cuda":
                        lines.append(f"        kt_vstore<KT_VEC>({s.address('kt_i0')}, {s.name}.v);")
                    else:
                        lines.append(f"        for (int kt_v = 0; kt_v < KT_VEC; ++kt_v) {s.element('kt_i0 + kt_v')} = "
                                     f"{s.name}[kt_v];")
            lines += ["    } else {", "        " + GENERATED, f"        for ({vtype} {var} = kt_i0; {var} < {bound}; ++{var})",
                      "            " + st.text(body), "    }", "}"]
            start = pragma_start(st, loop)         # the loop's unroll pragma goes with it into #else
            lead = _indent_before(st, start)
            new = ("\n#if KT_VEC > 1\n" + "\n".join(ind + ln if not ln.startswith("#") else ln for ln in lines) +
                   "\n#else\n" + lead + st.raw[start:loop.end_byte].decode() + "\n#endif\n" + lead)
            edits.append(Edit(start, loop.end_byte, new))
        st.source = apply_edits(st.raw, edits)
        if st.lang == "cuda":
            st.prelude.append(guarded("VEC_HELPERS", CUDA_VEC))
        st.add_param(Param("VEC", (1, 2, 4, 8), "#define KT_VEC {{ VEC }}",
                           why="elements per thread per step; 16-byte accesses when VEC x element size is 16"))
        return Applied(self.name, f"{len(loops)} block-strided loop(s) take VEC consecutive elements per thread",
                       ("VEC",))


# --- privatized atomics ----------------------------------------------------------------------

ATOMICS = {"cuda": {"atomicAdd": "add"}, "opencl": {"atomic_add": "add", "atomic_inc": "inc", "atom_add": "add",
                                                    "atom_inc": "inc"}}
PRIVATE_LIMIT = 4096           # elements of a privatized copy (16 KB of 32-bit counters)


def _atomic_targets(st: RewriteState):
    """(kernel, {array: [(call, subscript)]}, why) for additive atomics on kernel parameters."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        return None, {}, f"no kernel named {st.kernel}"
    body = kernel.node.child_by_field_name("body")
    found: dict[str, list] = {}
    for n in walk(body):
        if n.type != "call_expression":
            continue
        fname = st.text(n.child_by_field_name("function"))
        if fname not in ATOMICS[st.lang]:
            continue
        args = n.child_by_field_name("arguments").named_children
        target = unwrap(args[0]) if args else None
        if target is None or target.type != "pointer_expression":
            continue
        sub = unwrap(target.named_children[0]) if target.named_children else None
        if sub is None or sub.type != "subscript_expression":
            continue
        arr = sub.child_by_field_name("argument")
        if arr is not None and arr.type == "identifier":
            found.setdefault(st.text(arr), []).append((n, sub))
    return kernel, found, "" if found else "no atomic add on a global array"


class PrivatizeAtomics(Rule):
    name = "privatize-atomics"
    summary = "atomic adds into a small global array go to a per-block shared (local) copy first, as a parameter"

    def _plan(self, st: RewriteState):
        kernel, found, why = _atomic_targets(st)
        if not found:
            raise RuleDeclined(why)
        if any(n.type == "return_statement" for n in walk(kernel.node.child_by_field_name("body"))):
            raise RuleDeclined("the kernel returns early: not every thread would reach the merge")
        block = list(st.launch.block)
        if len(block) > 1 and any(str(b) != "1" for b in block[1:]):
            raise RuleDeclined("the block is not one-dimensional")
        names = [p.name for p in kernel.params]
        plans = []
        for array, uses in found.items():
            if array not in names or names.index(array) >= len(st.spec.args):
                continue
            arg = st.spec.args[names.index(array)]
            dims = [int(d) if isinstance(d, int) or str(d).isdigit() else None for d in (arg.shape or [])]
            if not dims or None in dims:
                continue
            size = 1
            for d in dims:
                size *= d
            if size > PRIVATE_LIMIT or arg.dtype not in ("int32", "uint32", "fp32"):
                continue
            # the array must be touched only through these atomics
            other = [n for n in walk(kernel.node.child_by_field_name("body"))
                     if n.type == "identifier" and st.text(n) == array
                     and not any(sub.start_byte <= n.start_byte < sub.end_byte for _, sub in uses)]
            if other:
                continue
            if st.has_macro(f"kt_priv_{array}"):
                raise RuleDeclined(f"the atomics on {array} are privatized already (an earlier round's rewrite)")
            plans.append((array, uses, size, arg.dt.ctype(st.lang)))
        if not plans:
            raise RuleDeclined("the atomics target no small array of constant size used only through atomics")
        return kernel, plans

    def check(self, st: RewriteState) -> str:
        return why_not(self._plan, st)

    def apply(self, st: RewriteState) -> Applied:
        kernel, plans = self._plan(st)
        body = kernel.node.child_by_field_name("body")
        cuda = st.lang == "cuda"
        tid, bdim = ("threadIdx.x", "blockDim.x") if cuda else ("get_local_id(0)", "get_local_size(0)")
        barrier = "__syncthreads();" if cuda else "barrier(CLK_LOCAL_MEM_FENCE);"
        space = "__shared__" if cuda else "__local"
        merge_fn = "atomicAdd" if cuda else "atomic_add"
        edits = []
        head, tail = [], []
        for array, uses, size, ctype in plans:
            priv = f"kt_priv_{array}"
            # the loops count the copy's size from the declaration: a literal there could be taken for
            # the block size by a later round's launch-config
            n = f"(int)(sizeof({priv}) / sizeof({priv}[0]))"
            head += [f"    {space} {ctype} {priv}[{size}];", f"    {GENERATED}",
                     f"    for (int kt_b = {tid}; kt_b < {n}; kt_b += {bdim}) {priv}[kt_b] = 0;",
                     f"    {barrier}"]
            tail += [f"    {barrier}", f"    {GENERATED}",
                     f"    for (int kt_b = {tid}; kt_b < {n}; kt_b += {bdim})",
                     f"        if ({priv}[kt_b] != 0) {merge_fn}(&{array}[kt_b], {priv}[kt_b]);"]
            for _, sub in uses:
                arr = sub.child_by_field_name("argument")
                edits.append(Edit(arr.start_byte, arr.end_byte, f"KT_ATOMICS_{array}"))
            st.add_param(Param("PRIVATE", (False, True), "#define KT_PRIVATE {{ 1 if PRIVATE else 0 }}",
                               why=f"{array}[{size}] ({ctype}) counted per block, merged once per element"))
        macros = "\n".join(f"#if KT_PRIVATE\n#define KT_ATOMICS_{a} kt_priv_{a}\n#else\n#define KT_ATOMICS_{a} {a}\n#endif"
                           for a, *_ in plans)
        open_brace = body.start_byte + 1
        close_brace = body.end_byte - 1
        edits.append(Edit(open_brace, open_brace, "\n#if KT_PRIVATE\n" + "\n".join(head) + "\n#endif"))
        edits.append(Edit(close_brace, close_brace, "#if KT_PRIVATE\n" + "\n".join(tail) + "\n#endif\n"))
        st.source = apply_edits(st.raw, edits)
        st.prelude.append(macros)
        return Applied(self.name, ", ".join(f"atomics on {a}[{n}] privatized per block" for a, _, n, _ in plans),
                       ("PRIVATE",))
