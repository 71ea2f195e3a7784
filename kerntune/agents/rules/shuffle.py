"""The `shuffle-reduction` rule: a shared-memory (local-memory) tree reduction over the block becomes warp
shuffles (CUDA) or sub-group reductions (OpenCL), the original tree kept reachable through ``#if``."""

from __future__ import annotations

from kerntune.agents.rules.base import (
    BARRIERS, Applied, Edit, Param, RewriteState, Rule, RuleDeclined, apply_edits, guarded, has_call,
    indent_before, is_block_dim_x, is_thread_x, line_indent, opencl_space, pragma_start, unwrap,
)
from kerntune.source.parse import walk


REDUCE_OPS = {"cuda": {"max": "max", "fmaxf": "max", "min": "min", "fminf": "min"},
              "opencl": {"max": "max", "fmax": "max", "min": "min", "fmin": "min"}}


def _tree_step(st: RewriteState, fn, body, var: str):
    """(array, op) when ``body`` is one tree step: if (guard) A[t] op= A[t + s]; barrier."""
    stmts = [c for c in body.named_children if c.type != "comment"] if body.type == "compound_statement" else [body]
    if len(stmts) != 2 or stmts[0].type != "if_statement" or stmts[1].type != "expression_statement":
        return None
    if not has_call(st, stmts[1], BARRIERS[st.lang]) or stmts[0].child_by_field_name("alternative") is not None:
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
            return st.text(arr) if is_thread_x(st, fn, idx) else None
        if idx.type != "binary_expression" or st.text(idx.child_by_field_name("operator")) != "+":
            return None
        l, r = idx.child_by_field_name("left"), idx.child_by_field_name("right")
        if is_thread_x(st, fn, l) and st.text(unwrap(r)) == var:
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
                               guard, var, _launch_blocks(st), lambda n: is_thread_x(st, fn, n),
                               lambda n: is_block_dim_x(st, n, fn))
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
            indent, lead = line_indent(st, loop), indent_before(st, start)
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
