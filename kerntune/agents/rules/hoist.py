"""hoist-invariants: loop-invariant code motion for what a compiler may not
move on its own.

* **Loads at a loop-invariant index** (``scale[r]`` inside a loop over the
  columns) are read once before the loop. A compiler keeps such a load in the
  loop whenever the loop stores through another pointer that might alias it;
  the rule moves it when nothing in the loop can write that element: the
  array is not written in the loop, and either the spec promises that arrays
  never overlap (``noalias``) or the loop writes no memory at all. A loop
  with a barrier or an atomic (another thread may write) is left alone; only
  a load that every trip evaluates moves (not one in a branch of the body,
  such as ``if (r < rows)``, or after a ``break``), and it stays conditional
  on the loop running at least once (it never reads an element the original
  would not have read).
* **Loop-invariant index arithmetic** (the row offset ``r * cols`` of
  ``x[r * cols + c]``) is computed once before the loop: the index becomes
  ``offset + c`` (strength reduction of the multiply, which also leaves
  each access in the ``p[base + i]`` form vectorize looks for).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerntune.agents.rules.access import (
    accesses, affine_base, every_trip, assigned_names, declared_names, identifiers, line_start, local_pointers, squash,
    sum_terms, synchronizes,
)
from kerntune.agents.rules.base import Applied, Edit, Param, Rule, RewriteState, apply_edits, unwrap
from kerntune.agents.rules.generic import is_generated
from kerntune.source.parse import walk


@dataclass
class LoopPlan:
    loop: object
    var: str
    start: str
    bound: str
    loads: list = field(default_factory=list)      # (subscript node, element type)
    offsets: list = field(default_factory=list)    # (index or address node, offset text, pointer or '')


def _pointee_ctype(st: RewriteState, fn, name: str) -> str | None:
    for n in walk(fn):
        if n.type in ("parameter_declaration", "declaration"):
            for d in walk(n):
                if d.type == "pointer_declarator":
                    inner = d.child_by_field_name("declarator")
                    while inner is not None and inner.type != "identifier":
                        inner = inner.child_by_field_name("declarator")
                    if inner is not None and st.text(inner) == name:
                        t = n.child_by_field_name("type")
                        return " ".join(st.text(t).split()) if t is not None else None
    return None


WIDE = ("long", "size_t", "ulong", "ptrdiff_t", "int64_t", "uint64_t")


def _offset_type(st: RewriteState, fn, base_node_text: str) -> str:
    """The integer type of a hoisted offset: 64-bit when anything in it is (a cast or a variable),
    else int (the usual arithmetic conversions of int operands)."""
    wide = any(w in base_node_text for w in WIDE)
    if not wide:
        names = set(__import__("re").findall(r"[A-Za-z_][A-Za-z0-9_]*", base_node_text))
        for n in walk(fn):
            if n.type in ("parameter_declaration", "declaration"):
                declared = {st.text(x) for x in walk(n) if x.type == "identifier"}
                t = n.child_by_field_name("type")
                if names & declared and t is not None and any(w in st.text(t) for w in WIDE):
                    wide = True
    if not wide:
        return "int"
    return "long long" if st.lang == "cuda" else "long"


def _taken_numbers(st: RewriteState) -> set[int]:
    import re

    return {int(m.group(2)) for m in re.finditer(r"\bkt_(o|h)(\d+)\b", st.source)}


def _loop_header(st: RewriteState, loop):
    """(var, start text, bound text) for ``for (T v = s; v < b; ...)``."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    if init is None or cond is None or init.type != "declaration":
        return None
    ds = [d for d in init.named_children if d.type == "init_declarator"]
    if len(ds) != 1 or ds[0].child_by_field_name("declarator").type != "identifier":
        return None
    var = st.text(ds[0].child_by_field_name("declarator"))
    c = unwrap(cond)
    if c is None or c.type != "binary_expression" or st.text(c.child_by_field_name("operator")) != "<" or \
            st.text(unwrap(c.child_by_field_name("left"))) != var:
        return None
    bound = c.child_by_field_name("right")
    if var in identifiers(st, bound):
        return None
    return var, st.text(ds[0].child_by_field_name("value")), st.text(bound)


def _plain(st: RewriteState, node) -> bool:
    """Arithmetic on names and literals only (no call, load, assignment)."""
    return not any(n.type in ("call_expression", "subscript_expression", "assignment_expression",
                              "update_expression", "pointer_expression", "field_expression", "comma_expression")
                   for n in walk(node))


def _own(node):
    """The nodes of a loop body outside the loops nested in it (those are their own loops' business)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(c for c in reversed(n.children) if c.type not in ("for_statement", "while_statement",
                                                                         "do_statement"))


def _has_product(st: RewriteState, nodes) -> bool:
    return any(x.type == "binary_expression" and st.text(x.child_by_field_name("operator")) == "*"
               for t in nodes for x in walk(t))


def _loop_plan(st: RewriteState, fn, loop, ptrs) -> LoopPlan | None:
    head = _loop_header(st, loop)
    if head is None:
        return None
    var, start, bound = head
    body = loop.child_by_field_name("body")
    changing = set(assigned_names(st, loop)) | declared_names(st, body) | {var}
    params = ptrs.params | set(ptrs.local)
    plan = LoopPlan(loop, var, start, bound)
    acc, why = accesses(st, body, ptrs)
    if not why:                 # loads: only when every access in the loop is understood
        written = {a.array for a in acc if a.write}
        own = {x.id for x in _own(body)}
        seen = set()
        for a in acc:
            if a.write or a.node.id not in own or a.array in written or (written and not st.spec.noalias):
                continue
            if identifiers(st, a.index) & changing or a.via in changing or not _plain(st, a.index) or \
                    not every_trip(st, a.node, body):     # (a pointer the loop declares or sets points anew)
                continue
            key = (a.via, squash(st.text(a.index)))
            ctype = _pointee_ctype(st, fn, a.via)
            if key in seen or ctype is None:
                continue
            seen.add(key)
            plan.loads.append((a.node, ctype.replace("const ", "").replace("volatile ", "").strip()))
    for n in _own(body):
        if n.type == "subscript_expression" and st.text(n.child_by_field_name("argument")) in params:
            idx = n.child_by_field_name("indices")
            if idx is None or len(idx.named_children) != 1:
                continue
            index = idx.named_children[0]
            if var not in identifiers(st, index) or affine_base(st, index, var) is None:
                continue
            rest = [t for sg, t in sum_terms(st, index) if var not in identifiers(st, t)]
            if _has_product(st, rest) and not any(identifiers(st, t) & changing or not _plain(st, t) for t in rest):
                plan.offsets.append((index, affine_base(st, index, var), ""))
        elif n.type == "binary_expression" and st.text(n.child_by_field_name("operator")) == "+" and not (
                n.parent is not None and n.parent.type == "binary_expression"
                and st.text(n.parent.child_by_field_name("operator")) in "+-"):
            terms = sum_terms(st, n)        # an address: pointer + invariant offset + the loop variable
            ptr = [t for sg, t in terms if sg == "+" and unwrap(t) is not None and unwrap(t).type == "identifier"
                   and st.text(unwrap(t)) in params]
            mine = [t for sg, t in terms if sg == "+" and st.text(unwrap(t)) == var]
            rest = [(sg, t) for sg, t in terms if t not in ptr and t not in mine]
            if len(ptr) != 1 or len(mine) != 1 or not rest or not _has_product(st, [t for _, t in rest]):
                continue
            if any(identifiers(st, t) & changing or not _plain(st, t) for _, t in rest):
                continue
            base = " ".join(("" if i == 0 and sg == "+" else sg + " ") + "(" + st.text(t) + ")"
                            for i, (sg, t) in enumerate(rest))
            plan.offsets.append((n, base, st.text(ptr[0])))
    return plan if plan.loads or plan.offsets else None


def plan_loops(st: RewriteState) -> list[LoopPlan]:
    """A plan for each loop with something to hoist, innermost first: a loop whose nested loops have
    plans of their own is left alone (its invariants are moved inside the innermost ones)."""
    plans = []
    for fn in st.functions():
        ptrs = local_pointers(st, fn)
        for loop in (n for n in walk(fn) if n.type == "for_statement"):
            if is_generated(st, loop) or synchronizes(st, loop):
                continue
            p = _loop_plan(st, fn, loop, ptrs)
            if p is not None:
                plans.append(p)
    return [p for p in plans if not any(q is not p and p.loop.start_byte <= q.loop.start_byte
                                        and q.loop.end_byte <= p.loop.end_byte for q in plans)]


class HoistInvariants(Rule):
    name = "hoist-invariants"
    summary = "loop-invariant loads and index arithmetic computed once before the loop, as a parameter"

    def check(self, st: RewriteState) -> str:
        return "" if plan_loops(st) else "no loop-invariant load or index product in an innermost loop"

    def apply(self, st: RewriteState) -> Applied:
        plans = plan_loops(st)
        raw = st.raw
        edits, nloads, noffsets, k = [], 0, 0, 0
        taken = _taken_numbers(st)

        def fresh() -> int:
            nonlocal k
            while k in taken:
                k += 1
            k += 1
            return k - 1

        for p in plans:
            fn = p.loop
            while fn is not None and fn.type != "function_definition":
                fn = fn.parent
            lp = p.loop
            start = line_start(raw, lp.start_byte)
            # a pragma directly above the loop goes with it
            prev = lp.prev_sibling
            while prev is not None and prev.type == "preproc_call" and st.text(prev).lstrip().startswith("#pragma"):
                start = line_start(raw, prev.start_byte)
                prev = prev.prev_sibling
            ind = raw[line_start(raw, lp.start_byte):lp.start_byte].decode()
            ind = ind if not ind.strip() else ""
            decls, inner = [], []
            offsets: dict[str, str] = {}
            for index, base, pointer in p.offsets:
                key = squash(base)
                if key not in offsets:
                    offsets[key] = f"kt_o{fresh()}"
                    decls.append(f"const {_offset_type(st, fn, base)} {offsets[key]} = {base};")
                    noffsets += 1
                text = f"{offsets[key]} + {p.var}"
                inner.append(Edit(index.start_byte, index.end_byte, f"{pointer} + {text}" if pointer else text))
            loads: dict[str, str] = {}
            for node, ctype in p.loads:
                key = squash(st.text(node))
                if key not in loads:
                    loads[key] = f"kt_h{fresh()}"
                    decls.append(f"const {ctype} {loads[key]} = ({p.start} < {p.bound}) ? {st.text(node)} : "
                                 f"({ctype})0;")
                    nloads += 1
            for n in walk(lp.child_by_field_name("body")):
                if n.type == "subscript_expression" and squash(st.text(n)) in loads and \
                        not any(e.start <= n.start_byte < e.end for e in inner):
                    inner.append(Edit(n.start_byte, n.end_byte, loads[squash(st.text(n))]))
            body_text = apply_edits(raw[start:lp.end_byte], [Edit(e.start - start, e.end - start, e.text) for e in inner])
            original = raw[start:lp.end_byte].decode()
            new = "#if KT_HOIST\n" + "".join(f"{ind}{d}\n" for d in decls) + body_text + "\n#else\n" + original + \
                "\n#endif"
            if start != line_start(raw, start):
                new = "\n" + new
            edits.append(Edit(start, lp.end_byte, new))
        st.source = apply_edits(raw, edits)
        st.add_param(Param("HOIST", (False, True), "#define KT_HOIST {{ 1 if HOIST else 0 }}",
                           why=f"{nloads} load(s) and {noffsets} index offset(s) computed once per loop"))
        return Applied(self.name, f"{nloads} loop-invariant load(s), {noffsets} index offset(s) hoisted out of "
                                  f"{len(plans)} loop(s)", ("HOIST",))
