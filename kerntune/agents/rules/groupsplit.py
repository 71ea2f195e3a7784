"""split-groups: a kernel that gives each work-group (CUDA block) one item of
work (a token, a row) and lets the group's threads loop over it gets SPLIT
groups per item instead, as a parameter.

A decode step merges one token's heads, or applies an activation to one
token's row: one group for the whole launch, one core of a CPU, one SM of a
GPU's hundred. With SPLIT groups per item the grid is SPLIT times larger, the
item is the group index divided by SPLIT, and the group's share of the work
is picked by the group index modulo SPLIT:

* a block-strided loop ``for (i = tid; i < n; i += block)`` starts at
  ``tid + (group % SPLIT) * block`` and steps ``block * SPLIT``: exactly the
  loop a block of SPLIT times as many threads runs, which the block-size
  parameter already assumes the kernel allows (its elements are dealt to
  threads and nothing else depends on which thread takes which);
* a loop over the item's rows ``for (r = 0; r < rows; ++r)`` (row-loop's
  outer loop, each row's elements block-strided inside) starts at
  ``group % SPLIT`` and steps ``SPLIT``: each row goes to one group, whole.
  Rows are checked to write different memory: every index the loop writes is
  ``a * r + b`` with ``a`` the same for every row and ``b`` either the same
  for every row or a column ``c`` of an inner loop ``c < a``.

The rule holds only where the split cannot change a result: a 1-D launch; no
barrier, atomic or shared (local) memory anywhere in the kernel or the
functions it calls; no global index, grid size or other view of the launch
than the group index, the thread index and the block size; all the work in one
function (the kernel, or a function the kernel calls once at its top level),
whose statements outside the split loops write no memory; the loops'
elements independent as for row-loop (no value carried between them, an
array written at one index per element and read only there). The functions
involved must be the kernel's own (private-helpers makes them so), since the
other entry points are launched without the split. The first value, 1, is
the kernel as it was (the group index divided by 1, the loops unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerntune.agents.rules.access import (
    accessor_call, accessor_functions, assigned_names, assignment_target, call_name, counted_loop, declared_names,
    identifiers, row_statements, synchronizes,
)
from kerntune.agents.rules.base import (
    Applied, Edit, Param, Rule, RuleDeclined, RewriteState, apply_edits, builtin_dim, builtin_x, callee, function_name,
    int_literal,
    unwrap,
)
from kerntune.agents.rules.generic import is_generated
from kerntune.agents.rules.macros import code_identifiers
from kerntune.agents.rules.private import shared_helpers
from kerntune.agents.rules.rowloop import check_independent
from kerntune.agents.rules.vectorize import block_strided, loop_share
from kerntune.source.parse import walk
from kerntune.source.poly import Poly
from kerntune.spec import expr

SPLITS = (1, 2, 4, 8, 16, 32)


MIN_UNITS = 8       # below this many compute units the split is not offered (measured, docs/rules.md)


def not_worth_it(st: RewriteState) -> str:
    """Why a split would add configurations to search but no parallelism, else ''. On a 2-core CPU it
    measured within noise and cost the search: merge_attn_states' result fell from 2.49-2.69x to
    1.90-2.30x at 40 evaluations (docs/rules.md). Where the device is not known, it is offered."""
    if st.compute_units <= 0:
        return ""
    if st.compute_units < MIN_UNITS:
        return (f"the device has {st.compute_units} compute unit(s): too few for a split to pay for the "
                f"configurations it adds (offered from {MIN_UNITS})")
    env0 = {k: p.values[0] for k, p in st.params.items()}
    grids = []
    for shape in [*st.spec.shapes, *(s for group in st.spec.shape_sets.values() for s in group)]:
        sizes = {k: v for k, v in shape.items() if isinstance(v, int)}
        try:
            grids.append(expr.evaluate_int(str(st.launch.grid[0]), {**sizes, **env0}))
        except expr.ExprError:     # a size the shape derives: not known here, so the split is offered
            return ""
    if grids and min(grids) >= st.compute_units:
        return (f"every shape's grid has at least {st.compute_units} work-groups already (one per compute "
                "unit): a split adds no parallelism")
    return ""


def split_values(st: RewriteState) -> tuple[int, ...]:
    """1, then powers of two up to the first that gives every compute unit a group of a one-item grid
    (at most 32; all of them when the device is not known): more groups than compute units add no
    parallelism a decode step lacks, only configurations to search (2 on a 2-core CPU, 32 on an H100)."""
    if st.compute_units <= 0:
        return SPLITS
    return tuple(v for v in SPLITS if v == 1 or v // 2 < st.compute_units)
_OTHER_VIEWS = {"opencl": {"get_global_id", "get_global_size", "get_num_groups", "get_global_offset",
                           "get_enqueued_local_size"},
                "cuda": {"gridDim"}}
_SHARED = {"opencl": {"__local", "local"}, "cuda": {"__shared__"}}


@dataclass
class SplitPlan:
    groups: list = field(default_factory=list)     # the group-index reads to divide by SPLIT
    strided: list = field(default_factory=list)    # block-strided loops: (start, its thread index, step)
    rows: list = field(default_factory=list)       # row loops: (start, update, variable, loop)


def group_reads(st: RewriteState, fn) -> list:
    """The reads of the group index along x (``blockIdx.x``, ``get_group_id(0)``) in ``fn``."""
    kinds = ("field_expression",) if st.lang == "cuda" else ("call_expression",)
    return [n for n in walk(fn) if n.type in kinds and builtin_dim(st, n, "block") == "x"]


def _enclosing(node):
    """The binary expression ``node`` is the left operand of (through parentheses), else None."""
    n = node
    while n.parent is not None and n.parent.type == "parenthesized_expression":
        n = n.parent
    p = n.parent
    return p if p is not None and p.type == "binary_expression" and p.child_by_field_name("left") == n else None


def _factor(st: RewriteState, node):
    """The K of a split (``KT_SPLIT``, or the number a later round baked in), else None."""
    k = unwrap(node)
    return k if k is not None and (k.type == "number_literal" or st.text(k) == "KT_SPLIT") else None


def _group_mod(st: RewriteState, node):
    """The node K when ``node`` is ``group % K``, else None."""
    node = unwrap(node)
    if node is None or node.type != "binary_expression" or st.text(node.child_by_field_name("operator")) != "%" \
            or builtin_dim(st, node.child_by_field_name("left"), "block") != "x":
        return None
    return _factor(st, node.child_by_field_name("right"))


def quotient_or_remainder(st: RewriteState, group) -> str | None:
    """K when the group read is divided by K or taken modulo K (``group / KT_SPLIT``), else None."""
    e = _enclosing(group)
    if e is None or st.text(e.child_by_field_name("operator")) not in ("/", "%"):
        return None
    k = _factor(st, e.child_by_field_name("right"))
    return st.text(k) if k is not None else None


def split_factor(st: RewriteState, node) -> str | None:
    """K when ``node`` is ``(group % K) * block size``: a share of a split loop's start."""
    node = unwrap(node)
    if node is None or node.type != "binary_expression" or st.text(node.child_by_field_name("operator")) != "*" \
            or builtin_dim(st, node.child_by_field_name("right"), "block_dim") != "x":
        return None
    k = _group_mod(st, node.child_by_field_name("left"))
    return st.text(k) if k is not None else None


def _unsplit_start(st: RewriteState, node) -> bool:
    """``0``, or ``group % 1`` (a row loop a round baked with SPLIT = 1)."""
    if int_literal(st, unwrap(node)) == 0:
        return True
    k = _group_mod(st, node)
    return k is not None and int_literal(st, k) == 1


def baked_split_literals(st: RewriteState, fn) -> list:
    """The numbers K of a split an earlier round baked (SPLIT = K) in ``fn``: ``group / K``, ``group % K``,
    and where the group is taken modulo K, the step ``block size * K`` of a block-strided loop and
    ``v += K`` of a row loop that starts at ``group % K``. They are the split's, not the block's: a
    later round's launch-config leaves them alone (a block of 32 beside SPLIT = 32 once made the split
    follow the block, up to 1024 groups per item, and vectorize no longer saw the split loop).

    Only a K the file both divides and takes the group modulo by (``group / K`` and ``group % K``
    anywhere in it) counts: split-groups always writes both (the item, the share of it), while an
    original kernel's lone ``group % 32`` beside a block of 32 stays a number launch-config may take
    for the block."""
    def quotients(node) -> list:
        """(operator, K node) of every ``group / K`` and ``group % K`` with a literal K in ``node``."""
        found = []
        for g in group_reads(st, node):
            e = _enclosing(g)
            op = st.text(e.child_by_field_name("operator")) if e is not None else None
            k = unwrap(e.child_by_field_name("right")) if op in ("/", "%") else None
            if k is not None and k.type == "number_literal":
                found.append((op, k))
        return found

    every = quotients(st.parsed.tree.root_node)
    ks = {int_literal(st, k) for op, k in every if op == "/"} & {int_literal(st, k) for op, k in every if op == "%"}
    out = [k for _, k in quotients(fn) if int_literal(st, k) in ks]
    for n in walk(fn):
        if n.type != "for_statement" or not ks:
            continue
        upd = unwrap(n.child_by_field_name("update"))
        step = unwrap(upd.child_by_field_name("right")) if upd is not None and upd.type == "assignment_expression" \
            and st.text(upd.child_by_field_name("operator")) == "+=" else None
        if step is None:
            continue
        if step.type == "number_literal" and int_literal(st, step) in ks:
            init = n.child_by_field_name("initializer")
            d = init.child_by_field_name("declarator") if init is not None and init.type == "declaration" else None
            start = d.child_by_field_name("value") if d is not None and d.type == "init_declarator" else None
            k = _group_mod(st, start) if start is not None else None
            if k is not None and int_literal(st, k) == int_literal(st, step):
                out.append(step)       # a row loop: v = group % K; v += K
            continue
        for m in walk(step):           # block size * K (inside vectorize's (block size * K) * VEC too)
            if m.type == "binary_expression" and st.text(m.child_by_field_name("operator")) == "*" and \
                    builtin_dim(st, m.child_by_field_name("left"), "block_dim") == "x":
                k = unwrap(m.child_by_field_name("right"))
                if k is not None and k.type == "number_literal" and int_literal(st, k) in ks:
                    out.append(k)
    return out


def _views_of_launch(st: RewriteState, fn) -> str:
    """Text of a launch builtin other than the group, thread and block-size indices of x."""
    for n in walk(fn):
        if st.lang == "opencl" and n.type == "call_expression" and call_name(st, n) in _OTHER_VIEWS["opencl"]:
            return st.text(n)
        if st.lang == "cuda" and n.type == "identifier" and st.text(n) in _OTHER_VIEWS["cuda"]:
            return st.text(n)
    for kind in ("block", "thread", "block_dim"):
        for n in walk(fn):
            if builtin_dim(st, n, kind) in ("y", "z"):
                return st.text(n)
    return ""


def _local_arrays(st: RewriteState, fn) -> set[str]:
    """Arrays the function declares in its body (a thread's private storage)."""
    out = set()
    for n in walk(fn.child_by_field_name("body")):
        if n.type == "array_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                out.add(st.text(d))
    return out


def _writes_memory(st: RewriteState, fn, stmt, accessors, allowed: str, tree: dict) -> str:
    """Why ``stmt`` (outside the split loops) may write memory, else ''."""
    private = _local_arrays(st, fn)
    for n in walk(stmt):
        target = assignment_target(n)
        if target is not None and target.type != "identifier":
            a = unwrap(target.child_by_field_name("argument")) if target.type == "subscript_expression" else None
            if a is None or a.type != "identifier" or st.text(a) not in private:
                return f"{st.text(n)[:40]} writes memory outside the loops the split deals out"
        if n.type == "call_expression":
            call = accessor_call(st, n, accessors)
            if call is not None and call[0].write:
                return f"{st.text(n)[:40]} writes memory outside the loops the split deals out"
            name = call_name(st, n)
            if name in tree and name != allowed and any("*" in st.text(c) or "&" in st.text(c)
                                                        for c in tree[name]):
                return f"{name}, called outside the loops the split deals out, may write memory"
    return ""


def _poly(st: RewriteState, node, env: dict, varying: set[str], depth: int = 0) -> Poly:
    """The index ``node`` as a polynomial; names in ``env`` (the row's constants) written out; any
    other operation a symbol of its own, which may not involve a ``varying`` name."""
    node = unwrap(node)
    if node is None or depth > 20:
        raise RuleDeclined("an index the split cannot read")
    if node.type == "number_literal":
        v = int_literal(st, node)
        if v is None:
            raise RuleDeclined(f"an index with the number {st.text(node)}")
        return Poly.const(v)
    if node.type == "identifier":
        name = st.text(node)
        if name in env:
            return _poly(st, env[name], env, varying, depth + 1)
        return Poly.sym(name)
    if node.type == "binary_expression" and st.text(node.child_by_field_name("operator")) in ("+", "-", "*"):
        a = _poly(st, node.child_by_field_name("left"), env, varying, depth + 1)
        b = _poly(st, node.child_by_field_name("right"), env, varying, depth + 1)
        op = st.text(node.child_by_field_name("operator"))
        return a + b if op == "+" else a - b if op == "-" else a * b
    names = identifiers(st, node)
    if names & varying or names & set(env):
        raise RuleDeclined(f"the index {st.text(node)[:40]} is not a sum of products of the row and column")
    return Poly.sym("?" + st.text(node))


def _written_indices(st: RewriteState, body, accessors) -> list:
    out = []
    for n in walk(body):
        call = accessor_call(st, n, accessors)
        if call is not None:
            if call[0].write:
                out.append(call[2])
            continue
        target = assignment_target(n)
        if target is not None and target.type == "subscript_expression":
            ix = target.child_by_field_name("indices")
            if ix is not None and ix.type == "subscript_argument_list":
                ix = ix.named_children[0] if len(ix.named_children) == 1 else None
            out.append(ix)
    return out


def _rows_disjoint(st: RewriteState, fn, cl, accessors) -> None:
    """Raise unless every index the row loop writes is ``a * r + b``, with ``b`` the same for every row
    or ``c + b'`` for the variable ``c < a`` of an inner block-strided loop."""
    r = cl.var
    assigned = assigned_names(st, cl.body)
    env, inner = {}, {}
    for n in walk(cl.body):
        if n.type == "init_declarator" and n.child_by_field_name("declarator").type == "identifier":
            name = st.text(n.child_by_field_name("declarator"))
            if name not in assigned:
                env[name] = n.child_by_field_name("value")
        if n.type == "for_statement" and n is not cl.node:
            head = block_strided(st, fn, n)
            if head is not None:
                inner[head[0]] = head[1]
    varying = {r, *inner, *declared_names(st, cl.body)}
    for name in list(env):
        if name in inner or env[name] is None:
            env.pop(name)
    for idx in _written_indices(st, cl.body, accessors):
        if idx is None:
            raise RuleDeclined("a write the split cannot read")
        p = _poly(st, idx, env, varying - set(env))
        lin = p.linear_in(r)
        if lin is None or not lin[0].terms or lin[0].symbols() & varying:
            raise RuleDeclined(f"the index {st.text(idx)[:40]} is not a multiple of the row {r} plus a column")
        a, b = lin
        cols = [c for c in inner if c in b.symbols()]
        if not cols:
            if b.symbols() & varying:
                raise RuleDeclined(f"the index {st.text(idx)[:40]} varies within a row other than by a column")
            continue
        c = cols[0]
        lc = b.linear_in(c)
        bound = _poly(st, inner[c], env, varying - set(env))
        if len(cols) > 1 or lc is None or lc[0] != Poly.const(1) or lc[1].symbols() & varying or bound != a:
            raise RuleDeclined(f"the index {st.text(idx)[:40]} is not {r} * (the row length) + a column below it")


def _branches(node, stop) -> dict:
    """For each preprocessor conditional around ``node`` (up to ``stop``), which of its branches."""
    out = {}
    n = node
    while n is not None and n != stop:
        p = n.parent
        if p is not None and p.type in ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef"):
            out[p.id] = n.id if n.type in ("preproc_else", "preproc_elif", "preproc_elifdef") else "then"
        n = p
    return out


def _exclusive(a: dict, b: dict) -> bool:
    return any(k in b and b[k] != v for k, v in a.items())


def plan(st: RewriteState) -> SplitPlan:
    if any(str(b) != "1" for b in st.launch.block[1:]) or any(str(g) != "1" for g in st.launch.grid[1:]):
        raise RuleDeclined("the launch is not one-dimensional")
    if "SPLIT" in str(st.launch.grid[0]):
        raise RuleDeclined("the grid is split already")
    fns = st.functions()
    tree = {function_name(st, f): f for f in fns}
    if st.kernel_fn not in tree:
        raise RuleDeclined(f"no kernel named {st.kernel}")
    p = SplitPlan()
    for f in fns:
        p.groups += group_reads(st, f)
    if not p.groups:
        raise RuleDeclined("the kernel does not read its group index (blockIdx.x / get_group_id(0))")
    if any(quotient_or_remainder(st, g) not in (None, "1") for g in p.groups):
        raise RuleDeclined("the kernel is split already (its group index is divided)")
    shared = sorted(set(shared_helpers(st)) & set(tree))
    if shared:
        raise RuleDeclined(f"{', '.join(shared)} is shared with the file's other entry points")
    for f in fns:
        if synchronizes(st, f):
            raise RuleDeclined("the kernel synchronizes or uses atomics")
        if any(word in _SHARED[st.lang] for _, _, word in code_identifiers(st.text(f))):
            raise RuleDeclined("the kernel uses shared (local) memory")
        view = _views_of_launch(st, f)
        if view:
            raise RuleDeclined(f"the kernel reads {view[:30]}, which the split would change")
    workers = [f for f in fns if any(n.type == "for_statement" and block_strided(st, f, n) is not None
                                     for n in walk(f))]
    if len(workers) != 1:
        raise RuleDeclined("no block-strided loop (for (i = threadIdx.x; i < n; i += blockDim.x))" if not workers
                           else "block-strided loops in more than one function")
    work = workers[0]
    wname = function_name(st, work)
    accessors = accessor_functions(st)
    params = {name: _params(f) for name, f in tree.items()}
    if wname != st.kernel_fn:
        kernel = tree[st.kernel_fn]
        calls_of_work = [n for f in fns for n in walk(f)
                         if n.type == "call_expression" and (c := callee(st, n)) is not None and st.text(c) == wname]
        stmts = row_statements(st, kernel.child_by_field_name("body").named_children)
        top = [s for s in stmts if s.type == "expression_statement" and any(c in calls_of_work for c in walk(s))]
        if len(calls_of_work) != 1 or len(top) != 1:
            raise RuleDeclined(f"the kernel does not call {wname} once, at its top level")
        for s in stmts:
            if s is not top[0]:
                why = _writes_memory(st, kernel, s, accessors, wname, params)
                if why:
                    raise RuleDeclined(why)
    body = work.child_by_field_name("body")
    stmts = row_statements(st, body.named_children)
    where = {s.id: _branches(s, body) for s in stmts}
    for s in stmts:
        elsewhere = [(o.start_byte, o.end_byte) for o in stmts if _exclusive(where[s.id], where[o.id])]
        if s.type == "preproc_if" or s.type == "preproc_ifdef":
            raise RuleDeclined("the kernel body has preprocessor conditionals")
        if s.type == "for_statement" and not is_generated(st, s):
            head = block_strided(st, work, s)
            if head is not None:
                check_independent(st, work, s, s.child_by_field_name("body"), elsewhere)
                init = s.child_by_field_name("initializer").child_by_field_name("declarator")
                upd = unwrap(s.child_by_field_name("update"))
                start = unwrap(init.child_by_field_name("value"))
                if loop_share(st, work, s) is not None:      # a round baked it with SPLIT = 1
                    if split_factor(st, start.child_by_field_name("right")) != "1":
                        raise RuleDeclined("the kernel is split already")
                    p.strided.append((start, start.child_by_field_name("left"), upd.child_by_field_name("right")))
                else:
                    p.strided.append((start, start, upd.child_by_field_name("right")))
                continue
            cl = counted_loop(st, s)
            if cl is not None and _unsplit_start(st, cl.start) and \
                    not (identifiers(st, cl.bound) & set(assigned_names(st, work))):
                check_independent(st, work, s, cl.body, elsewhere)
                _rows_disjoint(st, work, cl, accessors)
                p.rows.append((cl.start, s.child_by_field_name("update"), cl.var, s))
                continue
        why = _writes_memory(st, work, s, accessors, "", params)
        if why:
            raise RuleDeclined(why)
    if not p.strided and not p.rows:
        raise RuleDeclined(f"no loop of {wname}'s own (block-strided, or over rows) to deal out")
    return p


def _params(fn) -> list:
    from kerntune.agents.rules.access import parameter_list

    return [c for c in parameter_list(fn) if c.type == "parameter_declaration"]


def split_start(st: RewriteState, k: str = "KT_SPLIT") -> tuple[str, str]:
    """(start offset, step) of a block-strided loop the split dealt out over K groups, in this language."""
    b = builtin_x(st, "block_dim")
    return f"({builtin_x(st, 'block')} % {k}) * {b}", f"{b} * {k}"


class SplitGroups(Rule):
    name = "split-groups"
    summary = "SPLIT work-groups (blocks) per item of work, each taking a share of the item's loop"

    def check(self, st: RewriteState) -> str:
        why = not_worth_it(st)
        if why:
            return why
        try:
            plan(st)
        except RuleDeclined as e:
            return str(e)
        return ""

    def apply(self, st: RewriteState) -> Applied:
        p = plan(st)
        offset, step = split_start(st)
        g = builtin_x(st, "block")
        edits, replaced = [], []
        for start, thread, bdim in p.strided:
            edits.append(Edit(start.start_byte, start.end_byte, f"{st.text(thread)} + {offset}"))
            edits.append(Edit(bdim.start_byte, bdim.end_byte, step))
            replaced.append((start.start_byte, start.end_byte))
        for start, _, _, _ in p.rows:
            replaced.append((start.start_byte, start.end_byte))
        # a row loop is dealt out whole rows at a time: a baked share inside it (row-loop copied a split
        # column loop's `tid + (group % 1) * block`, step `block * 1`, into its column loop) stays a share
        # of one group, 0: each group still runs all of its rows' columns
        inside_rows = [(loop.start_byte, loop.end_byte) for _, _, _, loop in p.rows]
        for n in p.groups:
            if any(a <= n.start_byte < b for a, b in replaced + inside_rows):
                continue
            if quotient_or_remainder(st, n) == "1":        # a round baked the split with SPLIT = 1
                e = _enclosing(n)
                edits.append(Edit(e.start_byte, e.end_byte, f"{st.text(n)} {st.text(e.child_by_field_name('operator'))}"
                                                            " KT_SPLIT"))
            else:
                edits.append(Edit(n.start_byte, n.end_byte, f"({st.text(n)} / KT_SPLIT)"))
        for start, upd, var, _ in p.rows:
            edits.append(Edit(start.start_byte, start.end_byte, f"({g} % KT_SPLIT)"))
            edits.append(Edit(upd.start_byte, upd.end_byte, f"{var} += KT_SPLIT"))
        st.source = apply_edits(st.raw, edits)
        # SPLIT inside fixed(): baked, a split equal to the block size stays the split (rows * fixed(32)),
        # which launch-config leaves alone, as it leaves the baked code's K (baked_split_literals)
        st.launch = st.launch.model_copy(update={"grid": [f"({st.launch.grid[0]}) * fixed(SPLIT)",
                                                          *st.launch.grid[1:]]})
        st.add_param(Param("SPLIT", split_values(st), "#define KT_SPLIT {{ SPLIT }}",
                           why="work-groups (blocks) per item of work; the grid is multiplied by SPLIT"))
        parts = []
        if p.strided:
            parts.append(f"{len(p.strided)} block-strided loop(s) dealt over SPLIT groups")
        if p.rows:
            parts.append(f"{len(p.rows)} row loop(s) dealt row by row over SPLIT groups")
        return Applied(self.name, f"{st.kernel_fn}: {', '.join(parts)}; the grid times SPLIT", ("SPLIT",))
