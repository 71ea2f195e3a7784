"""guard-first: the kernel's global index followed at once by its bounds check.

Element-wise rules (elements-per-thread, row-column-grid, cooperative-rows, vector-columns) read a
kernel as ``index; bounds check; the element's code``. Kernels often compute other values between
the index and its check (``int idx = get_global_id(0); int total = tokens * heads * half; if (idx >=
total) return;``). This rule moves such declarations out of the way, without a parameter: those that
do not use the index before it (the index's own declaration computes nothing they need), those that
do after the check (the check does not use them; a work-item the check turns away no longer
computes values it never used). Every moved initializer is free of side effects: no assignment,
increment, call (other than the work-item builtins) or pointer write, so the order is unobservable
for the work-items that pass the check.
"""

from __future__ import annotations

from kerntune.agents.rules.access import _OPENCL_INDEX_CALLS, call_name, identifiers, is_flat_index, line_start
from kerntune.agents.rules.base import Applied, Edit, RewriteState, Rule, RuleDeclined, apply_edits, why_not
from kerntune.agents.rules.ept import bound_guard, is_exit_guard
from kerntune.source.parse import walk

_SIDE_EFFECTS = ("assignment_expression", "update_expression", "comma_expression")


def _declared(st: RewriteState, stmt) -> list[tuple[str, object]] | None:
    """(name, initializer) of each declarator of a plain declaration whose every declarator is
    ``name = value`` or ``*name = value``; None for anything else (an array, no initializer)."""
    if stmt.type != "declaration":
        return None
    ds = [d for d in stmt.named_children if d.type in ("init_declarator", "identifier", "array_declarator",
                                                       "pointer_declarator")]
    out = []
    for d in ds:
        if d.type != "init_declarator":
            return None
        name = d.child_by_field_name("declarator")
        while name is not None and name.type == "pointer_declarator":      # float* p = ...
            name = name.child_by_field_name("declarator")
        if name is None or name.type != "identifier":
            return None
        out.append((st.text(name), d.child_by_field_name("value")))
    return out or None


def _pure(st: RewriteState, value) -> bool:
    for n in walk(value):
        if n.type in _SIDE_EFFECTS:
            return False
        if n.type == "call_expression" and call_name(st, n) not in _OPENCL_INDEX_CALLS:
            return False
    return True


def _bounds_check(st: RewriteState, stmt, gid: str) -> str:
    """'exit' for ``if (gid >= B) return;``, 'guard' for ``if (gid < B) {...}`` with no else (as
    elements-per-thread reads them); '' otherwise."""
    if stmt.type != "if_statement":
        return ""
    if is_exit_guard(st, stmt, gid):
        return "exit"
    if bound_guard(st, stmt, gid) and stmt.child_by_field_name("alternative") is None and \
            stmt.child_by_field_name("consequence").type == "compound_statement":
        return "guard"
    return ""


def _plan(st: RewriteState):
    """(statements to move before the index, statements to move after the check, the index
    declaration, the check, its kind); raises RuleDeclined with the reason when there is nothing to do."""
    kernel = next((k for k in st.parsed.kernels if k.name == st.kernel_fn), None)
    if kernel is None:
        raise RuleDeclined(f"no kernel named {st.kernel}")
    stmts = [c for c in kernel.node.child_by_field_name("body").named_children if c.type != "comment"]
    for i, s in enumerate(stmts):
        parts = _declared(st, s)
        if parts and len(parts) == 1 and is_flat_index(st, parts[0][1]):
            gid = parts[0][0]
            break
    else:
        raise RuleDeclined("no global index declared at the kernel's top level")
    j = next((k for k in range(i + 1, len(stmts)) if _bounds_check(st, stmts[k], gid)), None)
    if j is None:
        raise RuleDeclined(f"no bounds check on {gid} (if ({gid} >= n) return; or if ({gid} < n) {{...}}) "
                           "at the kernel's top level")
    kind = _bounds_check(st, stmts[j], gid)
    if kind == "guard" and j != len(stmts) - 1:
        raise RuleDeclined(f"code follows the check if ({gid} < ...) {{...}}")
    if j == i + 1:
        raise RuleDeclined(f"the bounds check follows the index {gid} already")
    check_names = identifiers(st, stmts[j].child_by_field_name("condition"))
    before, after, uses_index = [], [], {gid}
    for s in stmts[i + 1:j]:
        parts = _declared(st, s)
        if parts is None:
            raise RuleDeclined(f"a statement other than a declaration with initial values (T name = value;) stands "
                               f"between {gid} and its bounds check")
        for name, value in parts:
            if not _pure(st, value):
                raise RuleDeclined(f"the initializer of {name} has side effects")
        names = set().union(*(identifiers(st, v) for _, v in parts))
        if names & uses_index:
            declared = {n for n, _ in parts}
            if declared & check_names:
                raise RuleDeclined(f"the bounds check uses {', '.join(sorted(declared & check_names))}, which "
                                   f"depends on {gid}")
            uses_index |= declared
            after.append(s)
        else:
            before.append(s)
    return before, after, stmts[i], stmts[j], kind


def _line_start(src: bytes, offset: int) -> int:
    return src.rfind(b"\n", 0, offset) + 1


def _whole_lines(st: RewriteState, stmt) -> tuple[int, int, str]:
    """(start, end, text) of the lines ``stmt`` occupies, when nothing else shares them."""
    src = st.raw
    start = line_start(src, stmt.start_byte)        # the line's start, when only blanks or address spaces precede
    end = src.find(b"\n", stmt.end_byte)
    end = len(src) if end < 0 else end + 1
    if src[_line_start(src, start):start].strip() or src[stmt.end_byte:end].strip():
        raise RuleDeclined("a moved declaration shares its line with other code")
    return start, end, src[start:end].decode()


class GuardFirst(Rule):
    name = "guard-first"
    summary = "declarations between the global index and its bounds check moved before the index or after the check"

    def check(self, st: RewriteState) -> str:
        return why_not(_plan, st)

    def apply(self, st: RewriteState) -> Applied:
        before, after, index, check, kind = _plan(st)
        src = st.raw
        lines = {s.id: _whole_lines(st, s) for s in before + after}
        edits = [Edit(start, end, "") for start, end, _ in lines.values()]
        moved_before = "".join(lines[s.id][2] for s in before)
        moved_after = "".join(lines[s.id][2] for s in after)
        if moved_before:
            at = _line_start(src, index.start_byte)
            edits.append(Edit(at, at, moved_before))
        if moved_after:
            if kind == "exit":
                at = src.find(b"\n", check.end_byte)
                at = len(src) if at < 0 else at + 1
                edits.append(Edit(at, at, moved_after))
            else:      # at the top of the guarded block, one level deeper
                body = check.child_by_field_name("consequence")
                at = body.start_byte + 1
                nl = src.find(b"\n", at)
                if nl < 0 or src[at:nl].strip():
                    raise RuleDeclined("the guarded block does not start on its own line")
                edits.append(Edit(nl + 1, nl + 1, "".join("    " + ln if ln.strip() else ln
                                                          for ln in moved_after.splitlines(keepends=True))))
        st.source = apply_edits(src, edits)
        return Applied(self.name, f"{len(before)} declaration(s) moved before the global index, {len(after)} after "
                                  f"its bounds check")
