"""row-loop: a block-strided loop over a flattened ``rows x cols`` range that
recovers the row and the column by division,

    for (int i = tid; i < rows * cols; i += block) {
        const int r = i / cols;
        const int c = i % cols;          // or i - r * cols
        ...
    }

becomes a loop over the rows around a block-strided loop over the columns,

    for (int r = 0; r < rows; ++r)
        for (int c = tid; c < cols; c += block) { ... }

as a parameter (``ROW_LOOP``, off first). No integer division is left per
element, and what the body computes from the row alone (a row's scale, the
weights of a (token, head) pair) is loop-invariant in the inner loop, where a
compiler computes it once per row and thread instead of once per element;
with a block smaller than the row, a thread then takes several elements of
each row.

Every thread visits its elements in the same increasing flat order as before
(row by row), but which thread takes which element changes when the row
length is not a multiple of the block. The rule therefore holds only where
that cannot matter: no barrier, atomic, exit or jump in the loop; no value
carried from one element to the next (no variable declared outside the loop
is assigned in it, has its address taken there or is bound to a C++
reference parameter); an array the loop writes is read in it only at the
index it writes, and is not touched elsewhere in the function; an array the
loop reads is not written elsewhere in the function (a call of an accessor
function, ``load_value(p, i)``, counts as the access it makes); and when the
loop both reads and writes arrays, the spec says that arrays never overlap
(``noalias``). The element code's leading declarations of the row alone
(``const long pair = first + h;``) are computed once per row, before the
column loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerntune.agents.rules.access import (
    accesses, accessor_call, accessor_functions, assigned_names, declared_names, identifiers, line_start,
    local_pointers, parameter_list, reindent, squash, synchronizes,
)
from kerntune.agents.rules.base import (
    Applied, Edit, Param, Rule, RuleDeclined, RewriteState, apply_edits, pragma_start, unwrap,
)
from kerntune.agents.rules.generic import is_generated
from kerntune.agents.rules.rowcolgrid import col_of, decl_parts, row_of, rows_of_bound
from kerntune.agents.rules.base import decl_value
from kerntune.agents.rules.vectorize import block_strided
from kerntune.source import calls
from kerntune.source.parse import walk


@dataclass
class RowLoopPlan:
    fn: object
    loop: object
    var: str                # the flat index
    rows: str               # the number of rows (expression text)
    cols: str               # the row length (expression text)
    row: tuple[str, str]    # (name, type) of the row variable
    col: tuple[str, str]    # (name, type) of the column variable
    decls: tuple            # the two declarations the nested loops replace
    rest: list              # the body's other statements


def _type_of(st: RewriteState, decl) -> str:
    t = st.text(decl.child_by_field_name("type"))
    quals = [st.text(q) for q in decl.children if q.type == "type_qualifier" and st.text(q) != "const"]
    return " ".join([*quals, *t.split()])


def _rows_and_bound(st: RewriteState, fn, bound, cols: str) -> str | None:
    """The number of rows when the loop's bound is ``rows * cols`` (written out, or a local variable
    declared once as that and never assigned)."""
    rows = rows_of_bound(st, bound, cols)
    if rows is not None:
        return rows
    b = unwrap(bound)
    if b is not None and b.type == "identifier" and st.text(b) not in assigned_names(st, fn):
        value = decl_value(st, fn, st.text(b))
        if value is not None:
            return rows_of_bound(st, value, cols)
    return None


def _touches(st: RewriteState, node, ptrs, accessors, skip=()):
    """(array, name, index text, read, write) for every subscript in ``node`` (outside the byte ranges
    ``skip``) and every call of an accessor function (``load_value(p, i)``): the array is what a local
    pointer points into, the name as written."""
    out = []
    for n in walk(node):
        if any(a <= n.start_byte < b for a, b in skip):
            continue
        call = accessor_call(st, n, accessors)
        if call is not None:
            acc, ptr, idx = call
            p = unwrap(ptr)
            if p is None or p.type != "identifier":
                raise RuleDeclined(f"{st.text(n)[:40]} is not given an array by name")
            out.append((st.text(p), squash(st.text(idx)), acc.read, acc.write))
            continue
        if n.type != "subscript_expression":
            continue
        a = unwrap(n.child_by_field_name("argument"))
        if a is None or a.type != "identifier":
            continue
        up = n.parent
        write = up is not None and ((up.type == "assignment_expression" and up.child_by_field_name("left") == n)
                                    or up.type == "update_expression")
        read = not write or up.type == "update_expression" or st.text(up.child_by_field_name("operator")) != "="
        out.append((st.text(a), squash(st.text(n.child_by_field_name("indices"))), read, write))
    resolved = []
    for a, ix, r, w in out:
        root = ptrs.resolve(a)
        resolved.append((root[0] if root else a, a, ix, r, w))
    return resolved


def _references_outside(st: RewriteState, body, inside: set[str]) -> str:
    """A call that binds a C++ reference parameter to a variable declared outside ``body`` (it can
    write it, as ``&x`` could): its text, else ''."""
    defs: dict[str, set[int]] = {}
    for n in walk(st.parsed.tree.root_node):
        if n.type != "function_definition":
            continue
        params = [c for c in parameter_list(n) if c.type == "parameter_declaration"]
        refs = {k for k, p in enumerate(params) if p.child_by_field_name("declarator") is not None
                and p.child_by_field_name("declarator").type == "reference_declarator"}
        defs.setdefault(calls.function_name(n, st.raw), set()).update(refs)
    for n in walk(body):
        if n.type != "call_expression":
            continue
        f = n.child_by_field_name("function")
        refs = defs.get(st.text(f), set()) if f is not None and f.type == "identifier" else set()
        args = n.child_by_field_name("arguments")
        for k in refs:
            if args is not None and k < len(args.named_children):
                a = unwrap(args.named_children[k])
                if a is None or a.type != "identifier" or st.text(a) not in inside:
                    return st.text(n)
    return ""


def check_independent(st: RewriteState, fn, loop, body, elsewhere=()) -> None:
    """Raise RuleDeclined unless the loop's elements may be dealt to the threads differently.
    ``elsewhere``: byte ranges of the function that never run with the loop (the other branch of a
    rule's ``#if``), left out where the loop's arrays must not be touched elsewhere."""
    for n in walk(body):
        if n.type in ("return_statement", "break_statement", "continue_statement", "goto_statement"):
            raise RuleDeclined("the loop body leaves the loop (return, break, continue or goto)")
    if synchronizes(st, body):
        raise RuleDeclined("the loop body synchronizes or uses atomics")
    inside = declared_names(st, body)
    carried = sorted(set(assigned_names(st, body)) - inside)
    if carried:
        raise RuleDeclined(f"the loop carries {', '.join(carried)} from one element to the next")
    for n in walk(body):
        if n.type == "pointer_expression" and st.text(n).lstrip().startswith("&"):
            target = unwrap(n.named_children[0]) if n.named_children else None
            if target is None or target.type != "identifier" or st.text(target) not in inside:
                raise RuleDeclined(f"the loop takes the address of {st.text(n)[1:].strip()[:40]}, declared outside it")
    bound = _references_outside(st, body, inside)
    if bound:
        raise RuleDeclined(f"{bound[:50]} binds a reference to a variable declared outside the loop")
    ptrs = local_pointers(st, fn)
    accessors = accessor_functions(st)
    _, why = accesses(st, body, ptrs, accessors)
    if why:
        raise RuleDeclined(why)
    written: dict[str, set[str]] = {}
    read: dict[str, set[str]] = {}
    for root, name, ix, r, w in _touches(st, body, ptrs, accessors):
        if name in inside:
            continue                # a private array of one element's own
        if w:
            written.setdefault(root, set()).add(ix)
        if r:
            read.setdefault(root, set()).add(ix)
    for a, at in written.items():
        if len(at) > 1 or read.get(a, at) != at:
            raise RuleDeclined(f"{a} is written at one index in the loop and accessed at another")
    if written and set(read) - set(written) and not st.spec.noalias:
        raise RuleDeclined("the loop reads and writes arrays, and the spec does not say they never overlap "
                           "(noalias: true)")
    others = _touches(st, fn.child_by_field_name("body"), ptrs, accessors, ((loop.start_byte, loop.end_byte), *elsewhere))
    touched = {root for root, *_ in others}
    changed = {root for root, _, _, _, w in others if w}
    if set(written) & touched:
        raise RuleDeclined(f"{', '.join(sorted(set(written) & touched))} is written in the loop and accessed "
                           "elsewhere in the function")
    if set(read) & changed:
        raise RuleDeclined(f"{', '.join(sorted(set(read) & changed))} is read in the loop and written "
                           "elsewhere in the function")


def plan(st: RewriteState, fn, loop) -> RowLoopPlan:
    head = block_strided(st, fn, loop)
    if head is None:
        raise RuleDeclined("no block-strided loop (for (i = threadIdx.x; i < n; i += blockDim.x))")
    var, bound = head
    body = loop.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        raise RuleDeclined("the loop body is not a block")
    stmts = [c for c in body.named_children if c.type != "comment"]
    if len(stmts) < 3:
        raise RuleDeclined("the loop body is not a row and a column, then the element's code")
    first = [(decl_parts(st, s), s) for s in stmts[:2]]
    if any(p is None for p, _ in first):
        raise RuleDeclined(f"the loop body does not begin with the row and the column of {var} (r = {var} / cols)")
    row = col = None
    cols = None
    for (name, value), s in first:
        d = row_of(st, value, var)
        if d is not None and row is None:
            row, cols = (name, s), d
    if row is None:
        raise RuleDeclined(f"the loop body does not begin with the row of {var} ({var} / cols)")
    for (name, value), s in first:
        if s is row[1]:
            continue
        d = col_of(st, value, var, row[0])
        if d is not None and d == cols:
            col = (name, s)
    if col is None:
        raise RuleDeclined(f"the loop body does not begin with the column of {var} ({var} % {cols})")
    rows = _rows_and_bound(st, fn, bound, cols)
    if rows is None:
        raise RuleDeclined(f"the bound on {var} ({st.text(bound)}) is not rows * {cols}")
    rest = [s for s in stmts if s is not row[1] and s is not col[1]]
    in_body, in_fn = assigned_names(st, body), assigned_names(st, fn)
    for name in {var, row[0], col[0]}:
        if name in in_body:
            raise RuleDeclined(f"{name} is modified in the loop")
    for name in identifiers(st, unwrap(bound)) | set(_names(rows)) | set(_names(cols)):
        if name in in_fn:
            raise RuleDeclined(f"{name} (in the loop's bound) is modified")
    for name in set(_names(rows)) | set(_names(cols)):
        if name in declared_names(st, body):
            raise RuleDeclined(f"{name} is declared again in the loop")
    check_independent(st, fn, loop, body)
    return RowLoopPlan(fn, loop, var, rows, cols, (row[0], _type_of(st, row[1])), (col[0], _type_of(st, col[1])),
                   (row[1], col[1]), rest)


def _names(text: str) -> list[str]:
    import re

    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)


def _loops(st: RewriteState) -> tuple[list[RowLoopPlan], list[str]]:
    found, reasons = [], []
    for fn in st.functions():
        for loop in (n for n in walk(fn) if n.type == "for_statement" and not is_generated(st, n)):
            if block_strided(st, fn, loop) is None:
                continue
            try:
                found.append(plan(st, fn, loop))
            except RuleDeclined as e:
                reasons.append(str(e))
    return found, reasons


_PURE_OPS = {"+", "-", "*"}


def _row_constants(st: RewriteState, p: RowLoopPlan) -> list:
    """The leading statements of the element's code that declare a value of the row alone
    (``const long pair = first + h;``): one name, never assigned, computed with + - * and casts from the
    row and names declared outside the loop. The nested version computes them once per row, before the
    column loop, where what uses them (a load at ``p[pair]``, the row's weights) becomes loop-invariant
    for the rules after it and for the compiler. No division (it could trap on a row no column runs for)."""
    body = p.loop.child_by_field_name("body")
    inside = declared_names(st, body)
    assigned = assigned_names(st, body)
    known: set[str] = set()
    out = []
    for stmt in p.rest:
        ds = [d for d in stmt.named_children if d.type == "init_declarator"] if stmt.type == "declaration" else []
        if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
            break
        name, value = st.text(ds[0].child_by_field_name("declarator")), ds[0].child_by_field_name("value")
        if value is None or name in assigned:
            break
        nodes = list(walk(value))
        if any(n.type not in ("identifier", "number_literal", "parenthesized_expression", "cast_expression",
                              "type_descriptor", "primitive_type", "sized_type_specifier", "type_identifier",
                              "binary_expression", "(", ")", "+", "-", "*") for n in nodes) or \
                any(n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) not in _PURE_OPS
                    for n in nodes):
            break
        names = identifiers(st, value)
        if p.var in names or p.col[0] in names or any(x in inside and x not in known and x != p.row[0]
                                                     for x in names):
            break
        out.append(stmt)
        known.add(name)
    return out


def _nested(st: RewriteState, p: RowLoopPlan, indent: str) -> str:
    raw = st.raw
    upd = unwrap(p.loop.child_by_field_name("update"))
    init = p.loop.child_by_field_name("initializer").child_by_field_name("declarator")
    tid, step = st.text(init.child_by_field_name("value")), st.text(upd.child_by_field_name("right"))
    flat = f"({p.row[0]} * {p.cols} + {p.col[0]})"

    def block(stmts, at: str) -> str:
        start, end = line_start(raw, stmts[0].start_byte), stmts[-1].end_byte
        edits = [Edit(n.start_byte - start, n.end_byte - start, flat)
                 for s in stmts for n in walk(s) if n.type == "identifier" and st.text(n) == p.var]
        return reindent(apply_edits(raw[start:end], edits), at)

    hoisted = _row_constants(st, p)
    rest = p.rest[len(hoisted):]
    (r, rt), (c, ct) = p.row, p.col
    head = f"{block(hoisted, indent + '    ')}\n" if hoisted else ""
    inner = block(rest, indent + "        ") if rest else ""
    return (f"{indent}for ({rt} {r} = 0; {r} < {p.rows}; ++{r}) {{\n{head}"
            f"{indent}    for ({ct} {c} = {tid}; {c} < {p.cols}; {c} += {step}) {{\n"
            f"{inner}\n{indent}    }}\n{indent}}}")


class RowLoop(Rule):
    name = "row-loop"
    summary = ("a block-strided loop over rows * cols that recovers row and column by division -> a loop over "
               "the rows around a block-strided loop over the columns, as a parameter")

    def check(self, st: RewriteState) -> str:
        found, reasons = _loops(st)
        if found:
            return ""
        return reasons[0] if reasons else "no block-strided loop (for (i = threadIdx.x; i < n; i += blockDim.x))"

    def apply(self, st: RewriteState) -> Applied:
        found, _ = _loops(st)
        edits = []
        for p in found:
            start = pragma_start(st, p.loop)
            ls = st.raw.rfind(b"\n", 0, start) + 1
            lead = st.raw[ls:start].decode()
            indent = lead if not lead.strip() else "    "
            original = st.raw[start:p.loop.end_byte].decode()
            new = f"#if KT_ROW_LOOP == 0\n{indent}{original}\n#else\n{_nested(st, p, indent)}\n#endif\n"
            end = p.loop.end_byte + 1 if st.raw[p.loop.end_byte:p.loop.end_byte + 1] == b"\n" else p.loop.end_byte
            edits.append(Edit(ls, end, new))
        st.source = apply_edits(st.raw, edits)
        st.add_param(Param("ROW_LOOP", (False, True), "#define KT_ROW_LOOP {{ 1 if ROW_LOOP else 0 }}",
                           why="rows outside, columns block-strided inside: no division per element, row values "
                               "computed once per row"))
        what = "; ".join(f"{p.var} < {p.rows} * {p.cols} -> rows {p.row[0]}, columns {p.col[0]}" for p in found)
        return Applied(self.name, f"{len(found)} flattened loop(s) split into a row loop and a column loop ({what})",
                       ("ROW_LOOP",))
