"""row-column-grid: an element-wise kernel over a [rows, cols] array that
recovers the row and the column from a flat index by division
(``t = gid / d; i = gid % d``) gets a 2-D grid instead: the column from the
x axis, the rows from the y axis through a grid-stride loop (``for (t =
y index; t < rows; t += y threads)``; a CUDA grid's y size is at most 65535).
No integer division or remainder is left per element (there is no vector
integer division on CPUs, and a GPU spends ~20 instructions on one), and
neighbouring threads still take neighbouring columns."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kerntune.agents.rules.access import (
    assigned_names, call_name, declared_names, identifiers, independent_kernel, is_flat_index, line_start, reads_thread_index, reindent,
    squash,
)
from kerntune.agents.rules.base import Applied, Edit, Param, Rule, RuleDeclined, RewriteState, apply_edits, unwrap
from kerntune.source.parse import walk

CUDA_MAX_GRID_Y = 65535


@dataclass
class SplitPlan:
    kernel: object
    index_stmt: object
    gid: str
    gid_type: str
    body: list                  # the statements of one element (after the bounds check)
    end: int
    rows: str                   # the number of rows (kernel expression)
    cols: str                   # the divisor: the row length (kernel expression)
    row_decl: object | None     # t = gid / cols
    col_decl: object | None     # i = gid % cols (or gid - t * cols)
    row_name: str
    col_name: str
    x_builtin: str              # how the original wrote the global index ('global' or 'group*size+local')


def decl_parts(st: RewriteState, stmt):
    if stmt.type != "declaration":
        return None
    ds = [d for d in stmt.named_children if d.type == "init_declarator"]
    if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
        return None
    return st.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")


def _binary(st: RewriteState, node, op: str):
    n = unwrap(node)
    if n is not None and n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) == op:
        return unwrap(n.child_by_field_name("left")), unwrap(n.child_by_field_name("right"))
    return None


def row_of(st: RewriteState, value, gid: str) -> str | None:
    """D when ``value`` is ``gid / D``."""
    parts = _binary(st, value, "/")
    if parts and st.text(parts[0]) == gid and gid not in identifiers(st, parts[1]):
        return squash(st.text(parts[1]))
    return None


def col_of(st: RewriteState, value, gid: str, row: str | None) -> str | None:
    """D when ``value`` is ``gid % D``, ``gid - row * D``, ``gid - D * row`` or ``gid - (gid / D) * D``."""
    parts = _binary(st, value, "%")
    if parts and st.text(parts[0]) == gid and gid not in identifiers(st, parts[1]):
        return squash(st.text(parts[1]))
    parts = _binary(st, value, "-")
    if not parts or st.text(parts[0]) != gid:
        return None
    prod = _binary(st, parts[1], "*")
    if not prod:
        return None
    for a, b in (prod, prod[::-1]):
        if (row is not None and st.text(a) == row) or row_of(st, a, gid) == squash(st.text(b)):
            if gid not in identifiers(st, b):
                return squash(st.text(b))
    return None


def rows_of_bound(st: RewriteState, bound, cols: str) -> str | None:
    """A when the bound is ``A * cols`` or ``cols * A``."""
    prod = _binary(st, bound, "*")
    if not prod:
        return None
    a, b = prod
    if squash(st.text(b)) == cols:
        return st.text(a)
    if squash(st.text(a)) == cols:
        return st.text(b)
    return None


def _declared_value(st: RewriteState, before: list, bound, kernel):
    """The value of the local ``bound`` names when one of the statements ``before`` the index declares
    it with a value (``int n = batch * channels * hw;``) and nothing in the kernel assigns it again;
    None otherwise."""
    if bound is None or bound.type != "identifier":
        return None
    name = st.text(bound)
    for stmt in before:
        parts = decl_parts(st, stmt)
        if parts is not None and parts[0] == name and parts[1] is not None:
            changed = assigned_names(st, kernel.node)
            if name in changed or identifiers(st, parts[1]) & set(changed):
                return None          # n, or a name its value reads, is assigned again somewhere
            return unwrap(parts[1])
    return None


def plan_split(st: RewriteState) -> SplitPlan:
    kernel, body = independent_kernel(st, "not element-wise", any_preproc_if=True)
    stmts = [c for c in body.named_children if c.type != "comment"]
    for i, s in enumerate(stmts):
        parts = decl_parts(st, s)
        if parts and is_flat_index(st, parts[1]):
            gid = parts[0]
            break
    else:
        raise RuleDeclined("no flat global index (get_global_id(0), blockIdx.x * blockDim.x + threadIdx.x)")
    if any(reads_thread_index(st, p) for p in stmts[:i]):
        raise RuleDeclined("the statements before the index read thread indices")
    guard = stmts[i + 1] if i + 1 < len(stmts) else None
    cond = unwrap(guard.child_by_field_name("condition")) if guard is not None and guard.type == "if_statement" \
        and guard.child_by_field_name("alternative") is None else None
    if cond is None or cond.type != "binary_expression" or st.text(unwrap(cond.child_by_field_name("left"))) != gid:
        raise RuleDeclined(f"the statement after {gid} is not a bounds check on it")
    op, bound = st.text(cond.child_by_field_name("operator")), cond.child_by_field_name("right")
    cons = guard.child_by_field_name("consequence")
    inner = [c for c in cons.named_children if c.type != "comment"] if cons.type == "compound_statement" else [cons]
    if op == ">=" and len(inner) == 1 and inner[0].type == "return_statement" and not inner[0].named_children:
        rest = stmts[i + 2:]
    elif op == "<" and i + 2 == len(stmts):
        rest = inner
    else:
        raise RuleDeclined(f"the statement after {gid} is not a bounds check on it")
    if not rest:
        raise RuleDeclined("the kernel does nothing after its bounds check")
    for r in rest:
        if reads_thread_index(st, r):
            raise RuleDeclined("the element's code reads thread indices")
        if any(n.type in ("return_statement", "goto_statement") for n in walk(r)):
            raise RuleDeclined("the element's code returns early")
    assigned = {}
    for r in rest:
        assigned.update(assigned_names(st, r))
    if gid in assigned:
        raise RuleDeclined(f"the index {gid} is modified")
    # the row and column: declarations t = gid / D, i = gid % D (or gid - t * D), or the expressions inline
    row_decl = col_decl = None
    row_name = col_name = ""
    cols = None
    for r in rest:
        parts = decl_parts(st, r)
        if parts is None:
            continue
        name, value = parts
        d = row_of(st, value, gid)
        if d is not None and row_decl is None:
            row_decl, row_name, cols = r, name, d
            continue
        d = col_of(st, value, gid, row_name or None)
        if d is not None and col_decl is None and (cols is None or d == cols):
            col_decl, col_name, cols = r, name, d
    inline = []
    for r in rest:
        for n in walk(r):
            if n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) in ("/", "%"):
                if st.text(unwrap(n.child_by_field_name("left"))) == gid:
                    inline.append(n)
    if cols is None:
        if not inline:
            raise RuleDeclined(f"the index {gid} is not split into a row and a column ({gid} / d, {gid} % d)")
        cols = squash(st.text(inline[0].child_by_field_name("right")))
    for n in inline:
        if squash(st.text(n.child_by_field_name("right"))) != cols:
            raise RuleDeclined(f"{gid} is divided by more than one number")
    for name in (row_name, col_name):
        if name and name in assigned:
            raise RuleDeclined(f"{name} is modified")
    rows = rows_of_bound(st, bound, cols)
    if rows is None:
        # the bound named by a local declared before the index (int n = batch * channels * hw;), never assigned
        named = _declared_value(st, stmts[:i], unwrap(bound), kernel)
        rows = rows_of_bound(st, named, cols) if named is not None else None
        if rows is None:
            raise RuleDeclined(f"the bound on {gid} ({st.text(bound)}) is not rows * {cols}")
        bound = named
    if set(assigned) & (identifiers(st, bound) | {cols}):
        raise RuleDeclined("the bound or the row length is modified")
    taken = declared_names(st, kernel.node)
    if not row_name:
        row_name = "kt_row"
    if not col_name:
        col_name = "kt_col"
    if row_name in taken and row_decl is None or col_name in taken and col_decl is None:
        raise RuleDeclined("kt_row or kt_col is taken")
    value = decl_parts(st, s)[1]
    x_builtin = "global" if call_name(st, unwrap(value)) == "get_global_id" else "parts"
    gtype = " ".join(t for t in st.text(s.child_by_field_name("type")).split())
    return SplitPlan(kernel, s, gid, gtype, rest, stmts[-1].end_byte, rows, cols, row_decl, col_decl, row_name,
                     col_name, x_builtin)


def spec_expression(st: RewriteState, kernel, text: str) -> str | None:
    """A kernel expression of its scalar parameters in the spec's terms (each parameter replaced by
    the spec argument's value), or None when some name is not a scalar argument with a value."""
    names = [p.name for p in kernel.params]
    values = {}
    for name, arg in zip(names, st.spec.args):
        if not arg.is_array and arg.value is not None:
            values[name] = arg.value
    try:
        tree = ast.parse(text.replace("/", "//"), mode="eval")
    except SyntaxError:
        return None
    bad = []

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id not in values:
                bad.append(node.id)
                return node
            v = values[node.id]
            return ast.parse(f"({v})", mode="eval").body

    out = ast.unparse(Sub().visit(tree))
    return None if bad else out


def _split_version(st: RewriteState, plan: SplitPlan, indent: str) -> str:
    raw = st.raw
    start, end = line_start(raw, plan.body[0].start_byte), plan.body[-1].end_byte
    flat = f"({plan.row_name} * {plan.cols} + {plan.col_name})"
    edits = []
    for d in (plan.row_decl, plan.col_decl):
        if d is not None:
            s0 = line_start(raw, d.start_byte)
            e0 = d.end_byte + 1 if raw[d.end_byte:d.end_byte + 1] == b"\n" else d.end_byte
            edits.append(Edit(max(s0, start) - start, min(e0, end) - start, ""))
    skip = [(d.start_byte, d.end_byte) for d in (plan.row_decl, plan.col_decl) if d is not None]
    for r in plan.body:
        for n in walk(r):
            if any(a <= n.start_byte < b for a, b in skip):
                continue
            if n.type == "binary_expression" and st.text(unwrap(n.child_by_field_name("left"))) == plan.gid \
                    and st.text(n.child_by_field_name("operator")) in ("/", "%") \
                    and squash(st.text(n.child_by_field_name("right"))) == plan.cols:
                name = plan.row_name if st.text(n.child_by_field_name("operator")) == "/" else plan.col_name
                edits.append(Edit(n.start_byte - start, n.end_byte - start, name))
    covered = [(e.start + start, e.end + start) for e in edits]
    for r in plan.body:
        for n in walk(r):
            if n.type == "identifier" and st.text(n) == plan.gid and \
                    not any(a <= n.start_byte < b for a, b in covered + skip):
                edits.append(Edit(n.start_byte - start, n.end_byte - start, flat))
    text = reindent(apply_edits(raw[start:end], edits), indent + "        ")
    it = plan.gid_type
    if st.lang == "cuda":
        col = f"({it})(blockIdx.x * blockDim.x + threadIdx.x)"
        first, step = f"({it})blockIdx.y", f"({it})gridDim.y"
    else:
        col = f"({it})get_global_id(0)" if plan.x_builtin == "global" else \
            f"({it})(get_group_id(0) * get_local_size(0) + get_local_id(0))"
        first, step = f"({it})get_global_id(1)", f"({it})get_global_size(1)"
    return (f"{indent}const {it} {plan.col_name} = {col};\n"
            f"{indent}if ({plan.col_name} < {plan.cols}) {{\n"
            f"{indent}    for ({it} {plan.row_name} = {first}; {plan.row_name} < {plan.rows}; "
            f"{plan.row_name} += {step}) {{\n"
            f"{text}\n{indent}    }}\n{indent}}}")


class RowColumnGrid(Rule):
    name = "row-column-grid"
    summary = ("a flat index split into row and column by division -> a 2-D grid (columns on x, rows by a "
               "grid-stride loop on y), as a parameter")

    def check(self, st: RewriteState) -> str:
        try:
            plan = plan_split(st)
        except RuleDeclined as e:
            return str(e)
        if spec_expression(st, plan.kernel, plan.rows) is None or spec_expression(st, plan.kernel, plan.cols) is None:
            return "the number of rows or the row length is not an expression of the spec's scalar arguments"
        return ""

    def apply(self, st: RewriteState) -> Applied:
        plan = plan_split(st)
        rows_spec = spec_expression(st, plan.kernel, plan.rows)
        cols_spec = spec_expression(st, plan.kernel, plan.cols)
        start = plan.index_stmt.start_byte
        ls = st.raw.rfind(b"\n", 0, start) + 1
        indent = st.raw[ls:start].decode()
        indent = indent if not indent.strip() else "    "
        original = st.raw[start:plan.end].decode()
        new = f"#if KT_GRID2D == 0\n{indent}{original}\n#else\n{_split_version(st, plan, indent)}\n#endif\n"
        st.source = apply_edits(st.raw, [Edit(ls, plan.end, new)])
        b = st.launch.block[0]
        grid_y = f"min({rows_spec}, {CUDA_MAX_GRID_Y})" if st.lang == "cuda" else rows_spec
        st.launch = st.launch.model_copy(update={
            "grid": [f"ceil_div({cols_spec}, {b}) if GRID2D else ({st.launch.grid[0]})", f"({grid_y}) if GRID2D else 1"],
            "block": [b, 1]})
        st.add_param(Param("GRID2D", (False, True), "#define KT_GRID2D {{ 1 if GRID2D else 0 }}",
                           why=f"{plan.gid} / {plan.cols} and {plan.gid} % {plan.cols} from a 2-D grid"))
        return Applied(self.name, f"{st.kernel}: {plan.gid} split into row {plan.row_name} and column {plan.col_name} "
                                  f"by a 2-D grid (rows {plan.rows}, columns {plan.cols})", ("GRID2D",))
