"""Reads of what earlier iterations of a loop wrote (``kerntune init``'s intents).

A top-k picks one element a pass: ``for (j = 0; j < k; ++j) { ... for (p = 0; p < j; ++p)
ids[row * k + p] ...; ids[row * k + j] = best; }`` reads, at pass j, the picks of passes 0 .. j - 1,
which it stored itself: the array's old contents are never read. The analysis's intervals lose that
p < j, so this checks the pattern on the code: the read's index is the write's with the inner loop's
variable for the outer one, the rest of the index stays the same in every pass, every pass from the
first runs to the write, and a thread's write under a condition on the thread index reaches the
others through a barrier. Anything else stays a read of the old contents: when unsure, inout."""

from __future__ import annotations

import re

from kerntune.source.parse import walk

_EXITS = ("break_statement", "continue_statement", "return_statement", "goto_statement")
_BARRIER = re.compile(r"\b(__syncthreads|barrier|work_group_barrier)\s*\(")
# a condition at least one thread of every block meets: the first thread
_FIRST_THREAD = re.compile(r"(threadIdx\.[xyz]|get_local_id\(\d\))==0|0==(threadIdx\.[xyz]|get_local_id\(\d\))")


def _text(node, data: bytes) -> str:
    return data[node.start_byte:node.end_byte].decode()


def _index_text(node, data: bytes) -> str | None:
    if node is None or node.type != "subscript_expression":
        return None
    idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
    if idx is not None and idx.type == "subscript_argument_list":
        kids = idx.named_children
        idx = kids[0] if len(kids) == 1 else None
    return re.sub(r"\s+", "", _text(idx, data)) if idx is not None else None


def _inner_loop_var(read, loop, outer: str, start: int, data: bytes) -> str | None:
    """The variable p of a loop ``for (int p = c; p < outer; ++p)`` (c >= ``start``) between ``read``
    and ``loop``."""
    n = read.parent
    while n is not None and n != loop:
        if n.type == "for_statement":
            init, cond, upd = (n.child_by_field_name(f) for f in ("initializer", "condition", "update"))
            m = re.fullmatch(r"(?:[\w:]+\s+)?(\w+)\s*=\s*(\d+)\s*;?", _text(init, data).strip()) \
                if init is not None else None
            if m and cond is not None and upd is not None and int(m.group(2)) >= start:
                p = m.group(1)
                if re.sub(r"\s+", "", _text(cond, data)) == f"{p}<{outer}" and \
                        re.sub(r"\s+", "", _text(upd, data)) in (f"++{p}", f"{p}++", f"{p}+=1"):
                    return p
        n = n.parent
    return None


def written_before(loop, outer: str, start: int, read, read_conds: frozenset[str], writes, data: bytes) -> bool:
    """Whether ``read`` (a subscript inside ``loop``, whose variable ``outer`` counts up by 1 from
    ``start``) reads only elements that earlier passes wrote at one of ``writes`` ((node, conds) of
    the loop's writes of the same array, each of every element of its span)."""
    body = loop.child_by_field_name("body")
    if body is None or any(c.type in _EXITS for c in walk(body)):
        return False
    p = _inner_loop_var(read, loop, outer, start, data)
    r = _index_text(read, data)
    if p is None or r is None:
        return False
    names = set(re.findall(r"[A-Za-z_]\w*", r)) - {p}
    if (names | {outer}) & _assigned_names(body, data):     # the rest of the index changes from pass to pass
        return False
    for node, conds in writes:
        if _under_loop_or_switch(node, loop):       # may run no time in a pass
            continue
        if _index_text(node, data) != re.sub(rf"\b{re.escape(p)}\b", outer, r):
            continue
        extra = {re.sub(r"\s+", "", c) for c in conds - read_conds}
        if not all(_FIRST_THREAD.fullmatch(c) for c in extra):
            continue
        if extra and (not _BARRIER.search(_text(body, data)[node.end_byte - body.start_byte:])
                      or _per_thread(names, loop, data)):
            continue        # the first thread's writes reach the others through a barrier, of its block's row
        return True
    return False


def _assigned_names(body, data: bytes) -> set[str]:
    out = set()
    for c in walk(body):
        target = None
        if c.type == "assignment_expression":
            target = c.child_by_field_name("left")
        elif c.type == "update_expression":
            target = c.child_by_field_name("argument")
        elif c.type == "init_declarator":
            target = c.child_by_field_name("declarator")
        if target is not None and target.type == "identifier":
            out.add(_text(target, data))
    return out


def _under_loop_or_switch(node, loop) -> bool:
    n = node.parent
    while n is not None and n != loop:
        if n.type in ("for_statement", "while_statement", "do_statement", "switch_statement"):
            return True
        n = n.parent
    return False


_THREAD = re.compile(r"threadIdx|get_local_id|get_global_id|laneid|\(")


def _per_thread(names: set[str], loop, data: bytes, depth: int = 4) -> bool:
    """Whether any of ``names`` may differ between the threads of a block (by the text of what the
    kernel assigns them: a thread index, or a call it does not follow): the first thread's row is then
    not the one another thread reads."""
    fn = loop
    while fn.parent is not None and fn.type != "function_definition":
        fn = fn.parent
    found: dict[str, list[str]] = {}
    for c in walk(fn):
        if c.type in ("init_declarator", "assignment_expression"):
            left = c.child_by_field_name("declarator" if c.type == "init_declarator" else "left")
            right = c.child_by_field_name("value" if c.type == "init_declarator" else "right")
            if left is not None and right is not None:
                found.setdefault(_text(left, data), []).append(_text(right, data))
    seen: set[str] = set()
    todo = set(names)
    for _ in range(depth):
        nxt: set[str] = set()
        for name in todo - seen:
            seen.add(name)
            for expr in found.get(name, []):
                if _THREAD.search(re.sub(r"\b(int|int64_t|long|unsigned|size_t)\s*\(", "", expr)):
                    return True
                nxt |= set(re.findall(r"[A-Za-z_]\w*", expr))
        todo = nxt
    return bool(todo - seen)     # deeper than followed: unsure
