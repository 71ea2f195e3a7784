"""cooperative-rows: a kernel that gives each thread a whole row (``r =
global index; if (r >= rows) return; for (c = 0; c < cols; ++c) ...``) gets
the row to a warp (OpenCL: a sub-group) or to a whole block (work-group)
instead: the threads of the row take its columns in turn, and each
accumulation over the row (a sum, a maximum, a minimum, the online
maximum-and-sum that ``online-softmax`` writes, or an arg-max / arg-min, the
first column where the row's maximum / minimum is) is combined across them by
a cooperative reduction. A running sum the loop reads after adding to it (a
prefix sum, a scan) goes to a warp (sub-group) alone: each step takes as
many consecutive columns as it has threads, scans them across the threads and
carries the step's total to the next. The precondition (docs/rules.md) makes sure that no
thread reads what another thread of the row wrote.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kerntune.agents.rules.access import (
    Access, CountedLoop, accesses, affine_base, assigned_names, call_name, counted_loop, declared_names,
    identifiers, independent_kernel, is_flat_index, line_start, row_statements, local_pointers, reads_thread_index, reindent, squash,
)
from kerntune.agents.rules.base import (
    Applied, Edit, Param, Rule, RuleDeclined, RewriteState, apply_edits, int_literal, unwrap, why_not,
)
from kerntune.agents.rules.base import guarded
from kerntune.source.parse import walk

ONLINE_MARK = "/*kt:online"          # online-softmax's marker before the loop it fused: /*kt:online m s*/
OPENCL_SUBGROUP = 16                 # the sub-group size the warp mode's OpenCL grid assumes (any size is correct)
SCRATCH = 1024                       # OpenCL work-group mode: a slot per sub-group (or per work-item without
                                     # sub-groups), for blocks up to 1024
MAX_OPS = {"fmax": "max", "fmaxf": "max", "max": "max", "fmin": "min", "fminf": "min", "min": "min"}
INT_TYPES = {"int", "unsigned", "unsigned int", "uint", "long", "unsigned long", "ulong", "size_t", "long long",
             "unsigned long long", "short", "unsigned short", "ushort"}
REDUCE_TYPES = {"float", "double", "int", "uint", "unsigned", "unsigned int"}
# an arg-max's column, and the value no column reaches (the identity of its min-reduction)
ARG_INDEX_TYPES = {"int": "0x7fffffff", "uint": "0xffffffffu", "unsigned": "0xffffffffu",
                   "unsigned int": "0xffffffffu"}
ARG_OPS = {">": "argmax", "<": "argmin"}


@dataclass
class Reduction:
    name: str
    op: str                # sum, max, min, online (the running maximum m of an online max-and-sum), or
                           # argmax / argmin (the best value m, with the column where it first is)
    ctype: str
    zero: bool = False     # a sum that starts from a literal zero: no lane needs zeroing
    partner: str = ""      # online: the sum s rescaled with m; argmax / argmin: the column's variable
    partner_ctype: str = ""
    term: str = ""         # scan: what each column adds (E of acc += E)
    update: object = None  # scan: the statement acc += E (a direct child of the loop's body)


def _primitive_ops(op: str) -> set[str]:
    """The plain reductions (sum, max, min) that combining ``op`` across threads takes."""
    return {"online": {"max", "sum"}, "argmax": {"max", "min"}, "argmin": {"min"}, "scan": set()}.get(op, {op})


def has_scan(plan) -> bool:
    return any(r.op == "scan" for cl in plan.loops for r in cl.reductions)


@dataclass
class ColumnLoop:
    loop: CountedLoop
    reductions: list[Reduction] = field(default_factory=list)


@dataclass
class RowPlan:
    kernel: object
    index_stmt: object
    row: str
    row_type: str
    bound: str
    body: list
    end: int                                # where the original region ends (the kernel's last statement)
    loops: list[ColumnLoop]
    lane0: list                             # top-level statements that write memory: the row's first lane does
    rows_expr: str                          # the number of rows in the spec's terms
    grid: str                               # the original grid's x size
    block: object                           # the block's x size (a number, or BLOCK)


def _ctype_of(st: RewriteState, scope, name: str) -> str | None:
    for n in walk(scope):
        if n.type != "declaration":
            continue
        for d in n.named_children:
            d0 = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if d0 is not None and d0.type == "identifier" and st.text(d0) == name:
                t = n.child_by_field_name("type")
                return " ".join(st.text(t).split()) if t is not None else None
    return None


def _init_of(st: RewriteState, scope, name: str):
    for n in walk(scope):
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier" and st.text(d) == name:
                return n.child_by_field_name("value")
    return None


def _is_zero(st: RewriteState, node) -> bool:
    node = unwrap(node)
    if node is None or node.type != "number_literal":
        return False
    text = st.text(node).lower().rstrip("fulh")
    try:
        return float(text) == 0.0
    except ValueError:
        return int_literal(st, node) == 0


def _reduction_op(st: RewriteState, stmt, acc: str) -> str | None:
    """'sum', 'max' or 'min' when ``stmt`` (an assignment to ``acc``) is one step of that reduction
    whose other operand does not mention ``acc``."""
    op = st.text(stmt.child_by_field_name("operator"))
    right = stmt.child_by_field_name("right")
    if op in ("+=", "-="):
        return "sum" if acc not in identifiers(st, right) else None
    if op != "=":
        return None
    r = unwrap(right)
    if r is None:
        return None
    if r.type == "binary_expression" and st.text(r.child_by_field_name("operator")) in "+-":
        a, b = r.child_by_field_name("left"), r.child_by_field_name("right")
        if st.text(unwrap(a)) == acc and acc not in identifiers(st, b):
            return "sum"
        if st.text(r.child_by_field_name("operator")) == "+" and st.text(unwrap(b)) == acc \
                and acc not in identifiers(st, a):
            return "sum"
        return None
    if r.type == "call_expression" and call_name(st, r) in MAX_OPS:
        args = r.child_by_field_name("arguments").named_children
        if len(args) == 2:
            mine = [a for a in args if st.text(unwrap(a)) == acc]
            other = [a for a in args if st.text(unwrap(a)) != acc]
            if len(mine) == 1 and len(other) == 1 and acc not in identifiers(st, other[0]):
                return MAX_OPS[call_name(st, r)]
    return None


def _online_pair(st: RewriteState, loop) -> tuple[str, str] | None:
    prev = loop.prev_sibling
    while prev is not None and prev.type == "preproc_call" and st.text(prev).lstrip().startswith("#pragma"):
        prev = prev.prev_sibling           # an unroll pragma a later rule put between marker and loop
    if prev is None or prev.type != "comment" or not st.text(prev).startswith(ONLINE_MARK):
        return None
    words = st.text(prev)[len(ONLINE_MARK):].rstrip("*/").split()
    return (words[0], words[1]) if len(words) == 2 else None


def _rows_of_grid(st: RewriteState, grid, block) -> str | None:
    """X when the grid's x size is ceil_div(X, block)."""
    try:
        tree = ast.parse(str(grid), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id in ("ceil_div", "cdiv") \
            and len(tree.args) == 2 and ast.unparse(tree.args[1]) == str(block):
        return ast.unparse(tree.args[0])
    return None


def _guard(st: RewriteState, stmt, row: str):
    """('exit', bound) for ``if (row >= bound) return;``, ('block', bound) for ``if (row < bound) {...}``."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    cond = unwrap(stmt.child_by_field_name("condition"))
    if cond is None or cond.type != "binary_expression":
        return None
    op = st.text(cond.child_by_field_name("operator"))
    left, right = unwrap(cond.child_by_field_name("left")), cond.child_by_field_name("right")
    if st.text(left) != row or row in identifiers(st, right):
        return None
    cons = stmt.child_by_field_name("consequence")
    inner = [c for c in cons.named_children if c.type != "comment"] if cons.type == "compound_statement" else [cons]
    if op == ">=" and len(inner) == 1 and inner[0].type == "return_statement" and not inner[0].named_children:
        return "exit", right
    if op == "<":
        return "block", right
    return None


def plan_rows(st: RewriteState) -> RowPlan:
    kernel, body = independent_kernel(st, "not one independent row per thread")
    block = list(st.launch.block)
    b0 = block[0]
    if not (isinstance(b0, int) or str(b0).isdigit() or str(b0) == "BLOCK"):
        raise RuleDeclined(f"the block size {b0} is neither a number nor launch-config's parameter")
    if isinstance(b0, int) or str(b0).isdigit():
        b0 = int(b0)
        if b0 > SCRATCH:
            raise RuleDeclined(f"the block of {b0} threads is larger than {SCRATCH}")
    stmts = [c for c in body.named_children if c.type != "comment"]
    for i, s in enumerate(stmts):
        if s.type != "declaration":
            continue
        d = s.child_by_field_name("declarator")
        if d is None or d.type != "init_declarator" or d.child_by_field_name("declarator").type != "identifier" \
                or not is_flat_index(st, d.child_by_field_name("value")):
            continue
        row = st.text(d.child_by_field_name("declarator"))
        break
    else:
        raise RuleDeclined("no row index (a global thread index, then a bounds check and loops over the row)")
    if any(reads_thread_index(st, p) for p in stmts[:i]):
        raise RuleDeclined("the statements before the row index read thread indices")
    if i + 1 >= len(stmts):
        raise RuleDeclined(f"no bounds check on {row}")
    g = _guard(st, stmts[i + 1], row)
    if g is None:
        raise RuleDeclined(f"the statement after {row} is not a bounds check (if ({row} >= rows) return; or "
                           f"if ({row} < rows) {{...}})")
    kind, bound = g
    if kind == "exit":
        rest = stmts[i + 2:]
    else:
        if i + 2 != len(stmts):
            raise RuleDeclined(f"statements follow the bounds check on {row}")
        cons = stmts[i + 1].child_by_field_name("consequence")
        rest = [c for c in cons.named_children if c.type != "comment"] if cons.type == "compound_statement" \
            else [cons]
    rest = row_statements(st, rest)
    if not rest:
        raise RuleDeclined("the row does nothing")
    stype = st.text(s.child_by_field_name("type"))
    quals = [st.text(q) for q in s.children if q.type == "type_qualifier" and st.text(q) != "const"]
    row_type = " ".join([*quals, stype])
    if " ".join(stype.split()) not in INT_TYPES:
        raise RuleDeclined(f"the row index has type {stype}")
    # the row body: every variable it assigns is its own, it reads no thread index, it returns nowhere
    for r in rest:
        if reads_thread_index(st, r):
            raise RuleDeclined("the row's code reads thread indices other than its row")
        if any(n.type in ("return_statement", "goto_statement") for n in walk(r)):
            raise RuleDeclined("the row's code returns early")
    own = set()
    for r in rest:
        own |= declared_names(st, r)
    assigned: dict[str, list] = {}
    for r in rest:
        for k, v in assigned_names(st, r).items():
            assigned.setdefault(k, []).extend(v)
    if row in assigned:
        raise RuleDeclined(f"the row index {row} is modified")
    outside = sorted(set(assigned) - own)
    if outside:
        raise RuleDeclined(f"the row's code assigns {', '.join(outside)}, declared before the row")
    if bound.type != "identifier" and any(n.type in ("call_expression", "subscript_expression") for n in walk(bound)):
        raise RuleDeclined(f"the row bound {st.text(bound)} is not a plain expression")
    # the grid and the number of rows
    rows_expr = _rows_of_grid(st, st.launch.grid[0], b0)
    if rows_expr is None:
        raise RuleDeclined(f"the grid's x size ({st.launch.grid[0]}) is not ceil_div(rows, threads per block)")
    # the loops over the row's columns, and what each accumulates
    ptrs = local_pointers(st, kernel.node)
    loops: list[ColumnLoop] = []
    lane0 = []
    scope = kernel.node.child_by_field_name("body")
    for r in rest:
        cl = counted_loop(st, r) if r.type == "for_statement" else None
        if cl is None:
            acc, why = accesses(st, r, ptrs)
            if why:
                raise RuleDeclined(why)
            if any(a.write for a in acc):
                if r.type == "declaration":
                    raise RuleDeclined(f"a declaration writes memory: {st.text(r)[:60]}")
                lane0.append(r)
            continue
        loops.append(_column_loop(st, cl, own, scope))
    if not loops:
        raise RuleDeclined("no loop over the row (for (int c = 0; c < cols; ++c)) at the row's top level")
    if any(r.op == "scan" for cl in loops for r in cl.reductions):
        if st.lang == "opencl" and not st.subgroups:
            raise RuleDeclined("a running sum read in its loop (a scan) is shared out only to a sub-group, and "
                               "the device has none")
        if any(len(cl.reductions) > 1 and any(r.op == "scan" for r in cl.reductions) for cl in loops):
            raise RuleDeclined("a loop keeps a running sum (a scan) beside other accumulators")
    _check_memory(st, rest, loops, lane0, ptrs)
    if not st.spec.noalias and any(a.write for r in rest for a in accesses(st, r, ptrs)[0]):
        raise RuleDeclined("the spec does not promise that the arrays never overlap (noalias: true): another "
                           "thread of the row could read what one writes through another array")
    return RowPlan(kernel, s, row, row_type, st.text(bound), rest, stmts[-1].end_byte, loops, lane0, rows_expr,
                   str(st.launch.grid[0]), b0)


def _column_loop(st: RewriteState, cl: CountedLoop, own: set[str], scope) -> ColumnLoop:
    body = cl.body
    for n in walk(body):
        if n.type in ("break_statement", "goto_statement", "return_statement"):
            raise RuleDeclined(f"the loop over {cl.var} leaves early")
    if any(reads_thread_index(st, x) for x in (cl.start, cl.bound)):
        raise RuleDeclined(f"the loop over {cl.var} has bounds that read thread indices")
    inner = declared_names(st, body)
    assigned = assigned_names(st, body)
    if cl.var in assigned:
        raise RuleDeclined(f"the loop over {cl.var} modifies {cl.var}")
    online = _online_pair(st, cl.node)
    out = ColumnLoop(cl)
    args = _arg_updates(st, body, cl.var)
    taken = set()
    for best, (op, idx, update) in args.items():
        if best in inner or idx in inner or {best, idx} & taken:
            continue
        for name in (best, idx):
            mine = [n for n in walk(update) if n.type == "identifier" and st.text(n) == name]
            uses = [n for n in walk(body) if n.type == "identifier" and st.text(n) == name]
            if len(assigned.get(name, ())) != 1 or len(uses) != len(mine):
                raise RuleDeclined(f"the loop over {cl.var} uses {name} outside its {op} update "
                                   f"(if (... {'>' if op == 'argmax' else '<'} {best}) {{ {best} = ...; {idx} = "
                                   f"{cl.var}; }})")
        vtype, itype = _ctype_of(st, scope, best), _ctype_of(st, scope, idx)
        if vtype is None or _rtype(vtype) not in REDUCE_TYPES:
            raise RuleDeclined(f"the {op} value {best} has type {vtype}, which the reduction does not cover")
        if itype is None or _rtype(itype) not in ARG_INDEX_TYPES:
            raise RuleDeclined(f"the {op} column {idx} has type {itype} (int or unsigned int are covered)")
        out.reductions.append(Reduction(best, op, vtype, zero=True, partner=idx, partner_ctype=itype))
        taken |= {best, idx}
    for name, sites in assigned.items():
        if name in inner or name in taken:
            continue
        ctype = _ctype_of(st, scope, name)
        if online is not None and name in online:
            if name == online[0]:
                out.reductions.append(Reduction(name, "online", ctype or "", partner=online[1]))
            continue
        ops = {_reduction_op(st, s, name) if s.type == "assignment_expression" else None for s in sites}
        if len(ops) != 1 or None in ops:
            raise RuleDeclined(f"the loop over {cl.var} assigns {name} other than by accumulating a sum, "
                               "maximum or minimum")
        uses = sum(1 for n in walk(body) if n.type == "identifier" and st.text(n) == name)
        mentions = sum(1 for s in sites for n in walk(s) if n.type == "identifier" and st.text(n) == name)
        if ctype is None or ctype.replace("const ", "") not in REDUCE_TYPES:
            raise RuleDeclined(f"the accumulator {name} has type {ctype}, which the reduction does not cover")
        op = ops.pop()
        if uses != mentions:
            why = _scan_why(st, cl, name, sites) if op == "sum" else "not a sum"
            if why:
                raise RuleDeclined(f"the loop over {cl.var} reads the accumulator {name} outside its update "
                                   f"({'a running sum, but ' + why if op == 'sum' else why})")
            update = sites[0].parent
            out.reductions.append(Reduction(name, "scan", ctype, zero=True, term=_scan_term(st, sites[0], name),
                                            update=update))
            continue
        out.reductions.append(Reduction(name, op, ctype, zero=op != "sum" or _is_zero(st, _init_of(st, scope, name))))
    if online is not None:
        for name in online:
            ctype = _ctype_of(st, scope, name)
            if ctype not in ("float", "double"):
                raise RuleDeclined(f"the online accumulator {name} is not floating-point")
    return out


SCAN_PURE_CALLS = {"exp", "expf", "log", "logf", "sqrt", "sqrtf", "fabs", "fabsf", "fmax", "fmaxf", "fmin",
                   "fminf", "min", "max", "tanh", "tanhf", "rsqrt", "rsqrtf"}


def _scan_term(st: RewriteState, site, acc: str) -> str:
    """E of ``acc += E``, ``acc = acc + E`` or ``acc = E + acc``."""
    right = site.child_by_field_name("right")
    if st.text(site.child_by_field_name("operator")) == "+=":
        return st.text(right)
    r = unwrap(right)
    a, b = r.child_by_field_name("left"), r.child_by_field_name("right")
    return st.text(b) if st.text(unwrap(a)) == acc else st.text(a)


def _scan_why(st: RewriteState, cl: CountedLoop, acc: str, sites) -> str:
    """Why the loop's running sum ``acc`` is not a scan it can give a warp ('' when it is): its one
    update ``acc += E`` a statement of the loop's body, before it only declarations with no side
    effect (which threads past the row's end evaluate at its last column), ``acc`` read only after
    it, no ``continue``."""
    body = cl.body
    if len(sites) != 1 or body.type != "compound_statement":
        return "updated more than once"
    site = sites[0]
    stmt = site.parent
    if stmt is None or stmt.type != "expression_statement" or stmt.parent is None or stmt.parent.id != body.id:
        return "updated other than as a statement of the loop's body"
    op = st.text(site.child_by_field_name("operator"))
    if op == "-=" or (op == "=" and st.text(unwrap(site.child_by_field_name("right")).child_by_field_name(
            "operator")) != "+"):
        return "a subtraction"
    if any(n.type == "continue_statement" for n in walk(body)):
        return "the loop has a continue"
    for n in walk(body):
        if n.type == "identifier" and st.text(n) == acc and n.start_byte < stmt.start_byte:
            return "read before its update"
    for prev in body.named_children:
        if prev.start_byte >= stmt.start_byte:
            break
        if prev.type == "comment":
            continue
        if prev.type != "declaration":
            return f"a statement other than a declaration precedes its update: {st.text(prev)[:50]}"
        for n in walk(prev):
            if n.type in ("assignment_expression", "update_expression", "comma_expression") or (
                    n.type == "call_expression" and call_name(st, n) not in SCAN_PURE_CALLS):
                return f"a declaration before its update has a side effect or a call: {st.text(prev)[:50]}"
    return ""


def _arg_updates(st: RewriteState, body, var: str) -> dict[str, tuple[str, str, object]]:
    """The arg-max / arg-min updates in a loop over ``var``: ``if (E > m) { m = E; i = var; }`` (or
    ``m < E``; with ``<``, an arg-min), no else, E not reading m or i: best -> (op, i, the if).

    Only a strict comparison: a thread then keeps the first column where its maximum is, and the
    threads' pairs combine into the row's first (the smallest column among those whose value is the
    row's maximum), whatever the values the pair starts from."""
    out = {}
    for n in walk(body):
        if n.type != "if_statement" or n.child_by_field_name("alternative") is not None:
            continue
        cond = unwrap(n.child_by_field_name("condition"))
        if cond is None or cond.type != "binary_expression":
            continue
        rel = st.text(cond.child_by_field_name("operator"))
        if rel not in ("<", ">"):
            continue
        left, right = unwrap(cond.child_by_field_name("left")), unwrap(cond.child_by_field_name("right"))
        for mine, other, flip in ((right, left, False), (left, right, True)):
            if mine is None or other is None or mine.type != "identifier":
                continue
            best = st.text(mine)
            op = ARG_OPS[rel if not flip else {"<": ">", ">": "<"}[rel]]
            cons = n.child_by_field_name("consequence")
            stmts = [c for c in cons.named_children if c.type != "comment"] if cons.type == "compound_statement" \
                else [cons]
            sets = {}
            for c in stmts:
                e = c.named_children[0] if c.type == "expression_statement" and c.named_children else None
                if e is None or e.type != "assignment_expression" or st.text(e.child_by_field_name("operator")) != "=":
                    break
                target = unwrap(e.child_by_field_name("left"))
                if target is None or target.type != "identifier":
                    break
                sets[st.text(target)] = squash(st.text(e.child_by_field_name("right")))
            else:
                idx = [k for k, v in sets.items() if k != best and v == var]
                if len(stmts) == 2 and sets.get(best) == squash(st.text(other)) and len(idx) == 1 \
                        and not {best, idx[0]} & identifiers(st, other):
                    out[best] = (op, idx[0], n)
    return out


def _check_memory(st: RewriteState, rest, loops: list[ColumnLoop], lane0: list, ptrs) -> None:
    """Every array the row writes is either written only by statements outside the column loops (which
    the row's first thread runs) and touched by nothing else, or written and read only in column
    loops, at one index ``base + c`` and from the same start: the thread that writes an element is
    the one that reads it."""
    where: list[tuple[Access, ColumnLoop | None, bool]] = []
    loop_nodes = {id(c.loop.node): c for c in loops}
    first = {id(s) for s in lane0}
    for r in rest:
        acc, why = accesses(st, r, ptrs)
        if why:
            raise RuleDeclined(why)
        where += [(a, loop_nodes.get(id(r)), id(r) in first) for a in acc]
    written = {a.array for a, _, _ in where if a.write}
    for arr in sorted(written):
        mine = [(a, c, f) for a, c, f in where if a.array == arr]
        if any(f for a, c, f in mine if a.write):
            if not all(f for a, c, f in mine):
                raise RuleDeclined(f"the row writes {arr} outside its loops and reads it elsewhere")
            continue
        keys = set()
        for a, c, f in mine:
            if c is None:
                raise RuleDeclined(f"the row reads {arr}, which its loops write, outside them")
            base = affine_base(st, a.index, c.loop.var)
            if base is None:
                raise RuleDeclined(f"{a.via}[{st.text(a.index)}] is not {a.via}[base + {c.loop.var}]: the thread "
                                   "that writes an element might not be the one that reads it")
            keys.add((squash(a.offset), squash(base), squash(st.text(c.loop.start))))
        if len(keys) > 1:
            raise RuleDeclined(f"{arr} is accessed at more than one index (base + column) or from loops with "
                               "different starts: another thread of the row might read what one writes")


# --- emission -----------------------------------------------------------------------------------------------

def _rtype(ctype: str) -> str:
    return " ".join(t for t in ctype.split() if t not in ("const", "volatile"))


def _tname(ctype: str) -> str:
    return "_".join(_rtype(ctype).split())


OPENCL_GROUP = """inline {t} kt_rows_group_{op}_{n}({t} v, __local {t}* sh)
{{
    // the {op} over the work-group, in every work-item (sh: one slot per sub-group)
    v = sub_group_reduce_{op2}(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {{
        {t} t = {init};
        for (uint k = get_sub_group_local_id(); k < get_num_sub_groups(); k += get_sub_group_size())
            t = {combine};
        t = sub_group_reduce_{op2}(t);
        sub_group_barrier(CLK_LOCAL_MEM_FENCE);
        if (get_sub_group_local_id() == 0) sh[0] = t;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    return sh[0];
}}"""
OPENCL_LOCAL_GROUP = """inline {t} kt_rows_group_{op}_{n}({t} v, __local {t}* sh)
{{
    // the {op} over the work-group, in every work-item, through local memory alone (the device has
    // no sub-groups; sh: one slot per work-item). The first barrier keeps this call's writes from
    // overtaking the last call's reads of sh[0].
    const uint l = get_local_id(0), n = get_local_size(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    sh[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 1; s < n; s <<= 1) {{
        if ((l & (2 * s - 1)) == 0 && l + s < n) sh[l] = {pair};
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    return sh[0];
}}"""
OPENCL_COMBINE = {"sum": "t + sh[k]", "max": "max(t, sh[k])", "min": "min(t, sh[k])"}
OPENCL_PAIR = {"sum": "sh[l] + sh[l + s]", "max": "max(sh[l], sh[l + s])", "min": "min(sh[l], sh[l + s])"}
OPENCL_OP2 = {"sum": "add", "max": "max", "min": "min"}

CUDA_ROWS = """template <typename T> __device__ __forceinline__ T kt_rows_combine_sum(T a, T b) { return a + b; }
template <typename T> __device__ __forceinline__ T kt_rows_combine_max(T a, T b) { return b > a ? b : a; }
template <typename T> __device__ __forceinline__ T kt_rows_combine_min(T a, T b) { return b < a ? b : a; }
#define KT_ROWS_REDUCERS(OP)                                                                     \\
template <typename T> __device__ __forceinline__ T kt_rows_warp_##OP(T v)                        \\
{                                                                                                \\
    for (int o = 16; o > 0; o >>= 1) v = kt_rows_combine_##OP(v, __shfl_xor_sync(0xffffffffu, v, o)); \\
    return v;                                                                                    \\
}                                                                                                \\
template <typename T> __device__ __forceinline__ T kt_rows_block_##OP(T v)                       \\
{                                                                                                \\
    __shared__ T sh[32];                                                                         \\
    v = kt_rows_warp_##OP(v);                                                                    \\
    __syncthreads();                                                                             \\
    if ((threadIdx.x & 31u) == 0u) sh[threadIdx.x >> 5] = v;                                     \\
    __syncthreads();                                                                             \\
    T t = sh[0];                                                                                 \\
    for (unsigned k = 1; k < (blockDim.x + 31u) >> 5; ++k) t = kt_rows_combine_##OP(t, sh[k]);  \\
    return t;                                                                                    \\
}
KT_ROWS_REDUCERS(sum)
KT_ROWS_REDUCERS(max)
KT_ROWS_REDUCERS(min)
#undef KT_ROWS_REDUCERS"""


CUDA_SCAN = """template <typename T> __device__ __forceinline__ T kt_rows_warp_scan(T v)
{
    // the inclusive prefix sum over the warp's lanes
    for (int o = 1; o < 32; o <<= 1) {
        const T t = __shfl_up_sync(0xffffffffu, v, o);
        if ((int)(threadIdx.x & 31u) >= o) v += t;
    }
    return v;
}"""


def _reduce_call(st: RewriteState, mode: str, op: str, ctype: str, value: str) -> str:
    if st.lang == "cuda":
        return f"kt_rows_{'warp' if mode == 'warp' else 'block'}_{op}({value})"
    if mode == "warp":
        return f"sub_group_reduce_{OPENCL_OP2[op]}({value})"
    return f"kt_rows_group_{op}_{_tname(ctype)}({value}, kt_rows_sh_{_tname(ctype)})"


def _after_loop(st: RewriteState, mode: str, cl: ColumnLoop, indent: str) -> str:
    lines = []
    for red in cl.reductions:
        if red.op == "online":
            m, s, t = red.name, red.partner, _rtype(red.ctype)
            exp = ("expf" if t == "float" else "exp") if st.lang == "cuda" else "exp"
            mx = _reduce_call(st, mode, "max", t, m)
            total = _reduce_call(st, mode, "sum", t, f"{m} == kt_m ? {s} : {s} * {exp}({m} - kt_m)")
            lines.append(f"{{ const {t} kt_m = {mx}; {s} = {total}; {m} = kt_m; }}")
        elif red.op in ("argmax", "argmin"):
            # the row's best value, then the smallest column among the threads that hold it (a NaN best
            # is every thread's starting value: a strict comparison never takes a NaN, nor replaces one)
            # The value kept is the reduction's: where the row's maximum is both -0 and +0 it may be the
            # other zero than the first column's (equal as numbers; the column is exact)
            m, i, t, it = red.name, red.partner, _rtype(red.ctype), _rtype(red.partner_ctype)
            best = _reduce_call(st, mode, red.op[3:], t, m)
            col = _reduce_call(st, mode, "min", it,
                               f"({m} == kt_m || kt_m != kt_m) ? {i} : ({it}){ARG_INDEX_TYPES[it]}")
            lines.append(f"{{ const {t} kt_m = {best}; {i} = {col}; {m} = kt_m; }}")
        else:
            lines.append(f"{red.name} = {_reduce_call(st, mode, red.op, red.ctype, red.name)};")
    return "".join(f"\n{indent}{ln}" for ln in lines)


def _scan_loop(st: RewriteState, lp: CountedLoop, scan: Reduction, n: int, ind: str, pragmas=()) -> str:
    """The loop of a running sum, for a warp (sub-group): each step its threads take consecutive
    columns (one past the row's end takes the last column's values and adds nothing), scan what they
    add, and carry the step's total; the statements after the update run for columns in the row."""
    t, acc, var, vt = _rtype(scan.ctype), scan.name, lp.var, lp.vtype
    bound, first = st.text(lp.bound), st.text(lp.start)
    body = [c for c in lp.body.named_children]
    k = next(i for i, c in enumerate(body) if c.id == scan.update.id)
    inner = ind + "    "
    prefix = "".join(f"{inner}{st.statement_text(c)}\n" for c in body[:k])
    tail = "".join(f"{inner}    {st.statement_text(c)}\n" for c in body[k + 1:])
    if st.lang == "cuda":
        scan_of, last = "kt_rows_warp_scan", f"__shfl_sync(0xffffffffu, kt_s{n}, 31)"
    else:
        scan_of, last = "sub_group_scan_inclusive_add", f"sub_group_broadcast(kt_s{n}, get_sub_group_size() - 1)"
    return (f"{t} kt_carry{n} = {acc};\n"
            + "".join(f"{ind}{pr}\n" for pr in pragmas) +
            f"{ind}for ({vt} kt_c{n} = {first}; kt_c{n} < {bound}; kt_c{n} += kt_lanes) {{\n"
            f"{inner}const int kt_in{n} = kt_c{n} + kt_lane < {bound};\n"
            f"{inner}const {vt} {var} = kt_in{n} ? kt_c{n} + kt_lane : ({bound}) - 1;\n"
            f"{prefix}"
            f"{inner}const {t} kt_s{n} = {scan_of}(kt_in{n} ? ({t})({scan.term}) : ({t})0);\n"
            f"{inner}if (kt_in{n}) {{\n"
            f"{inner}    {acc} = kt_carry{n} + kt_s{n};\n"
            f"{tail}"
            f"{inner}}}\n"
            f"{inner}kt_carry{n} += {last};\n"
            f"{ind}}}\n"
            f"{ind}{acc} = kt_carry{n};")


def _types_reduced(plan: RowPlan) -> set[str]:
    out = set()
    for cl in plan.loops:
        for red in cl.reductions:
            out.add(_rtype(red.ctype))
            if red.partner_ctype:
                out.add(_rtype(red.partner_ctype))
    return out


def _row_version(st: RewriteState, plan: RowPlan, mode: str, indent: str) -> str:
    """The row body for ``mode`` ('warp' or 'block'), as one statement (the row loop)."""
    raw = st.raw
    start, end = line_start(raw, plan.body[0].start_byte), plan.body[-1].end_byte
    edits = []
    for n, cl in enumerate(plan.loops):
        lp = cl.loop
        scan = next((r for r in cl.reductions if r.op == "scan"), None)
        if scan is not None:
            ls = raw.rfind(b"\n", 0, lp.node.start_byte) + 1
            ind = raw[ls:lp.node.start_byte].decode()
            ind = ind if not ind.strip() else indent + "    "
            # an unroll pragma an earlier round wrote before the loop goes before the new loop, after
            # the carry's declaration
            first, pragmas = lp.node.start_byte, []
            prev = lp.node.prev_sibling
            while prev is not None and prev.type == "preproc_call" and st.text(prev).lstrip().startswith("#pragma"):
                first, pragmas = prev.start_byte, [st.text(prev).strip(), *pragmas]
                prev = prev.prev_sibling
            edits.append(Edit(first - start, lp.node.end_byte - start, _scan_loop(st, lp, scan, n, ind, pragmas)))
            continue
        s0 = unwrap(lp.start)
        first = "kt_lane" if _is_zero_int(st, s0) else f"({st.text(lp.start)}) + kt_lane"
        cond = lp.node.child_by_field_name("condition")
        header = f"for ({lp.vtype} {lp.var} = {first}; {st.text(cond)}; {lp.var} += kt_lanes)"
        close = raw.rfind(b")", lp.node.start_byte, lp.body.start_byte) + 1
        edits.append(Edit(lp.node.start_byte - start, close - start, header))
        ls = raw.rfind(b"\n", 0, lp.node.start_byte) + 1
        ind = raw[ls:lp.node.start_byte].decode()
        ind = ind if not ind.strip() else indent + "    "
        zeroing = "".join(f"if (kt_lane != 0) {red.name} = ({_rtype(red.ctype)})0;\n{ind}"
                          for red in cl.reductions if red.op == "sum" and not red.zero)
        if zeroing:
            edits.append(Edit(lp.node.start_byte - start, lp.node.start_byte - start, zeroing))
        after = _after_loop(st, mode, cl, ind)
        if after:
            edits.append(Edit(lp.node.end_byte - start, lp.node.end_byte - start, after))
    for s in plan.lane0:
        edits.append(Edit(s.start_byte - start, s.start_byte - start, "if (kt_lane == 0) { "))
        edits.append(Edit(s.end_byte - start, s.end_byte - start, " }"))
    text = reindent(apply_edits(raw[start:end], edits), indent + "    ")
    rt = plan.row_type
    if st.lang == "cuda":
        if mode == "warp":
            lane = "(int)(threadIdx.x % warpSize)"
            lanes = "(int)warpSize"
            first = f"({rt})(blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize)"
            step = f"({rt})(gridDim.x * (blockDim.x / warpSize))"
        else:
            lane, lanes = "(int)threadIdx.x", "(int)blockDim.x"
            first, step = f"({rt})blockIdx.x", f"({rt})gridDim.x"
    else:
        if mode == "warp":
            lane, lanes = "(int)get_sub_group_local_id()", "(int)get_sub_group_size()"
            first = f"({rt})(get_group_id(0) * get_num_sub_groups() + get_sub_group_id())"
            step = f"({rt})(get_num_groups(0) * get_num_sub_groups())"
        else:
            lane, lanes = "(int)get_local_id(0)", "(int)get_local_size(0)"
            first, step = f"({rt})get_group_id(0)", f"({rt})get_num_groups(0)"
    head = []
    if st.lang == "opencl" and mode == "block":
        head += [f"__local {t} kt_rows_sh_{_tname(t)}[{SCRATCH}];" for t in sorted(_types_reduced(plan))]
    head += [f"const int kt_lane = {lane};", f"const int kt_lanes = {lanes};"]
    out = "".join(f"{indent}{h}\n" for h in head)
    out += (f"{indent}for ({rt} {plan.row} = {first}; {plan.row} < {plan.bound}; {plan.row} += {step}) {{\n"
            f"{text}\n{indent}}}")
    return out


def _is_zero_int(st: RewriteState, node) -> bool:
    return node is not None and int_literal(st, node) == 0


class CooperativeRows(Rule):
    name = "cooperative-rows"
    summary = ("one row per thread -> one row per warp (sub-group) or per block (work-group), with cooperative "
               "reductions, as a parameter")

    def check(self, st: RewriteState) -> str:
        return why_not(plan_rows, st)

    def apply(self, st: RewriteState) -> Applied:
        plan = plan_rows(st)
        start = plan.index_stmt.start_byte
        ls = st.raw.rfind(b"\n", 0, start) + 1
        indent = st.raw[ls:start].decode()
        indent = indent if not indent.strip() else "    "
        original = st.raw[start:plan.end].decode()
        # an OpenCL device without sub-groups (PoCL's CPU device) has no warp mode, and its work-group
        # mode combines through local memory alone
        warps = st.lang == "cuda" or st.subgroups
        scans = has_scan(plan)
        block = _row_version(st, plan, "block", indent) if not scans else ""
        if scans:
            warp = _row_version(st, plan, "warp", indent)
            new = f"\n#if KT_ROWS == 0\n{indent}{original}\n#else\n{warp}\n#endif\n"
        elif warps:
            warp = _row_version(st, plan, "warp", indent)
            new = (f"\n#if KT_ROWS == 0\n{indent}{original}\n#else\n#if KT_ROWS == 1\n{warp}\n#else\n{block}\n"
                   f"#endif\n#endif\n")
        else:
            new = f"\n#if KT_ROWS == 0\n{indent}{original}\n#else\n{block}\n#endif\n"
        st.source = apply_edits(st.raw, [Edit(ls, plan.end, new.lstrip("\n"))])
        if st.lang == "cuda":
            st.prelude.append(guarded("ROWS_REDUCE", CUDA_ROWS))
            if scans:
                st.prelude.append(guarded("ROWS_SCAN", CUDA_SCAN))
        else:
            for t in sorted(_types_reduced(plan)):
                for op in sorted(set().union(*(_primitive_ops(r.op) for cl in plan.loops
                                               for r in cl.reductions))):
                    init = "0" if op == "sum" else "sh[0]"
                    if warps:
                        helper = OPENCL_GROUP.format(t=t, op=op, n=_tname(t), op2=OPENCL_OP2[op], init=init,
                                                     combine=OPENCL_COMBINE[op])
                    else:
                        helper = OPENCL_LOCAL_GROUP.format(t=t, op=op, n=_tname(t), pair=OPENCL_PAIR[op])
                    st.prelude.append(guarded(f"ROWS_GROUP_{op.upper()}_{_tname(t).upper()}", helper))
        b = plan.block
        warp_size = 32 if st.lang == "cuda" else OPENCL_SUBGROUP
        rows = plan.rows_expr
        warp_grid = f"ceil_div({rows}, max(1, {b} // {warp_size}))"
        grid = f"({plan.grid}) if ROWS == 'thread' else (({warp_grid}) if ROWS == 'warp' else ({rows}))"
        st.launch = st.launch.model_copy(update={"grid": [grid, *st.launch.grid[1:]]})
        st.add_param(Param("ROWS", ("thread", "warp") if scans else
                           ("thread", "warp", "block") if warps else ("thread", "block"),
                           "#define KT_ROWS {{ 0 if ROWS == 'thread' else (1 if ROWS == 'warp' else 2) }}",
                           why="who takes a row: one thread (the original), a warp (sub-group), a block "
                               "(work-group)"))
        if st.lang == "cuda":
            if isinstance(b, int):
                if b % 32:
                    st.restrictions.append("ROWS == 'thread'")
            else:
                st.restrictions.append(f"ROWS == 'thread' or {b} % 32 == 0")
        nred = sum(len(cl.reductions) for cl in plan.loops)
        who = "a warp (a running sum: scanned across it)" if scans else "a warp or block" if warps else "a work-group"
        return Applied(self.name, f"{st.kernel}: a row per {who} instead of per thread; {len(plan.loops)} "
                                  f"loop(s) over the row, {nred} cooperative reduction(s)", ("ROWS",))
