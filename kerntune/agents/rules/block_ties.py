"""Which numbers in a kernel are tied to its block size: launch-config's
precondition (docs/rules.md states it for users).

Changing the block size is safe when everything in the code that depends on
it follows the new value. The literal block size itself (an array size, a
stride, a whole-value ``#define``) follows: launch-config rewrites it into
``KT_BLOCK``, and so does everything written in terms of it (``256 / 2``,
``BS >> 1``, ``get_local_size(0) / 2``). What cannot follow, and what this
module looks for:

* a number derived from the block size spelled out on its own next to the
  thread indices: half the block (the start of a tree), twice, four times,
  the square, the size minus one; in a cooperative kernel (one with barriers
  or local/shared arrays) also eight times and the size plus one. Literals,
  macros, file-scope constants and folded constant expressions (``1 << 7``)
  count alike. The rule declines.
* in a cooperative kernel, a smaller power-of-two fraction (a quarter, an
  eighth... down to 4: an unrolled tree tail, a warp, lanes per row) next to
  the thread indices: the code assumes a block of at least twice that, and
  the parameter keeps to such blocks.
* local arrays: sized like the block but indexed by data (a histogram with as
  many bins as threads), or sized by a derived number: the rule declines;
  of another fixed size and indexed by thread index: the block may not
  exceed that size (with a 2-D or 3-D block: the rule declines).

"Next to the thread indices" comes from a small dataflow analysis per
function. The variables *computed from* the indices are those assigned, in
any number of steps, from an index builtin of a tunable axis (the thread,
group and global indices and the sizes; CUDA's threadIdx, blockIdx,
blockDim, gridDim) or from a call of one of the kernel's own functions that
read them; a helper's parameter counts when some call passes it such a value.
Loaded values are data and stop the flow. In a cooperative kernel, the
*partners* of the thread index count too: variables compared with it or
added to it in a condition or an array index (``t < s``, ``sm[t + s]``; each
side of ``&&``/``||`` apart), what those are computed from (``s = half``),
and counters that walk a local array. A number is tied when the statement
around it (for a loop header or condition: the whole loop) mentions an index
builtin or such a variable, or, in a cooperative kernel, when it sits inside
a loop whose body holds a barrier.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass, field

from kerntune.agents.rules.base import (
    RuleDeclined, RewriteState, builtin_dim, function_name, int_literal, is_helper, opencl_space, unwrap,
)
from kerntune.source.parse import walk

BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or", "barrier",
            "work_group_barrier"}
INDEX_KINDS = ("thread", "block", "block_dim", "global", "grid_dim")
_FLOAT_TYPE = re.compile(r"\b(float|double|half|__half|__half2|__nv_bfloat16|__nv_bfloat162|bfloat16)\d*\b")
_STATEMENTS = ("declaration", "expression_statement", "return_statement", "if_statement", "switch_statement")
_LOOPS = ("for_statement", "while_statement", "do_statement")
_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<<": operator.lshift, ">>": operator.rshift,
        "&": operator.and_, "|": operator.or_, "^": operator.xor}


@dataclass
class Ties:
    """What launch-config may do with the block size."""

    literals: dict[int, list]                  # axis -> literal nodes equal to that axis's block size (rewritten)
    cooperative: bool = False                  # barriers or local (shared) arrays
    max_threads: int | None = None             # a fixed-size local array indexed by thread: the block fits in it
    min_block: dict[int, int] = field(default_factory=dict)   # axis -> the least block size the code allows
    limits: list[str] = field(default_factory=list)           # why, for the parameter's description


def derived_values(size: int, cooperative: bool) -> tuple[set[int], set[int]]:
    """(numbers that stand for something computed from a block of ``size`` when spelled out beside
    the thread indices, smaller fractions of it). The first: half the block, twice, four times,
    the square, the size minus one (a mask, a rounding); in a kernel that cooperates through
    local memory and barriers also eight times and the size plus one (a padded tile). The second,
    in a cooperative kernel only: a quarter, an eighth... down to 4 (the steps of an unrolled tree
    tail, a warp, lanes per row): code that spells them out assumes a block of at least twice
    their value, and keeps working for larger blocks."""
    ties = {size * 2, size * 4, size * size, size - 1}
    if size % 2 == 0:
        ties.add(size // 2)
    fractions = set()
    if cooperative:
        ties |= {size * 8, size + 1}
        v = size // 2
        while v % 2 == 0 and v // 2 >= 4:
            v //= 2
            fractions.add(v)
    return {v for v in ties if v > 2}, fractions - ties


class _Analysis:
    def __init__(self, st: RewriteState, dims: list[int], tunable: list[int]):
        self.st = st
        self.dims = dims
        self.tunable = tunable
        self.axes = {"xyz"[i] for i in tunable}
        self.block_values = {dims[i] for i in tunable}
        self.functions = st.functions()
        self.kernel_fn = next((f for f in self.functions if function_name(st, f) == st.kernel_fn), None)
        self.constants = self._named_constants()
        self._related: dict[int, set[str]] | None = None
        self._counters: dict[int, set[str]] = {}
        self.index_fns = {function_name(st, f) for f in self.functions
                          if any(self._is_builtin(n) for n in walk(f))}
        self.cooperative = any(self._barrier(n) for f in self.functions for n in walk(f)) or \
            any(self._local_array(d) for f in self.functions for d in walk(f))

    # --- small predicates -----------------------------------------------------------------
    def _is_builtin(self, n) -> bool:
        return any(builtin_dim(self.st, n, k) in self.axes for k in INDEX_KINDS)

    def _index_call(self, n) -> bool:
        if n.type != "call_expression":
            return False
        f = n.child_by_field_name("function")
        return f is not None and f.type == "identifier" and self.st.text(f) in self.index_fns

    def _barrier(self, n) -> bool:
        if n.type != "call_expression":
            return False
        f = n.child_by_field_name("function")
        return f is not None and self.st.text(f) in BARRIERS

    def _local_array(self, decl) -> bool:
        if decl.type != "declaration" or not any(c.type == "array_declarator" for c in walk(decl)):
            return False
        if self.st.lang == "cuda":
            return "__shared__" in self.st.text(decl)
        return opencl_space(self.st, decl) == "local"

    # --- constants ------------------------------------------------------------------------
    def _named_constants(self) -> dict[str, tuple[int | None, bool]]:
        """Object-like macros, file-scope integer constants and enumerators: name -> (value or None,
        whether the value mentions the block-size literal, i.e. follows the parameter)."""
        st, raw, macros = self.st, {}, set()
        root = st.parsed.tree.root_node
        for n in walk(root):
            if n.type == "preproc_def" and n.child_by_field_name("value") is not None:
                raw[st.text(n.child_by_field_name("name"))] = st.text(n.child_by_field_name("value")).strip()
                macros.add(st.text(n.child_by_field_name("name")))
        for n in root.named_children:
            if n.type == "preproc_def":
                continue
            elif n.type == "declaration":
                for d in n.named_children:
                    if d.type == "init_declarator" and d.child_by_field_name("declarator").type == "identifier":
                        raw[st.text(d.child_by_field_name("declarator"))] = st.text(d.child_by_field_name("value"))
        for n in walk(root):
            if n.type == "enumerator" and n.child_by_field_name("value") is not None:
                raw[st.text(n.child_by_field_name("name"))] = st.text(n.child_by_field_name("value"))
        out: dict[str, tuple[int | None, bool]] = {}
        for _ in range(len(raw) + 1):     # macros defined in terms of macros: resolve in rounds
            for name, text in raw.items():
                if name in macros and text.rstrip("uU").isdigit() and int(text.rstrip("uU")) in self.block_values:
                    out[name] = (int(text.rstrip("uU")), True)   # launch-config rewrites it: it follows
                else:
                    out[name] = _eval_text(text, out)
        return out

    def const_value(self, n) -> tuple[int | None, bool]:
        """(value, mentions the block-size literal) of a constant integer expression."""
        n = unwrap(n)
        if n is None:
            return None, False
        v = int_literal(self.st, n)
        if v is not None:
            return v, v in self.block_values
        if n.type == "identifier":
            return self.constants.get(self.st.text(n), (None, False))
        if n.type == "unary_expression" and self.st.text(n.child_by_field_name("operator")) == "-":
            v, b = self.const_value(n.child_by_field_name("argument"))
            return (None if v is None else -v), b
        if n.type == "binary_expression":
            op = self.st.text(n.child_by_field_name("operator"))
            (a, ba), (c, bc) = (self.const_value(n.child_by_field_name(k)) for k in ("left", "right"))
            if a is None or c is None:
                return None, ba or bc
            return _apply(op, a, c), ba or bc
        return None, False

    # --- the dataflow ----------------------------------------------------------------------
    def _is_per_thread(self, n) -> bool:
        """The local or global index of a work-item (not the group index or the sizes)."""
        return any(builtin_dim(self.st, n, k) in self.axes for k in ("thread", "global"))

    def related_all(self) -> dict[int, set[str]]:
        """Per function (keyed by its start byte): the variables computed from the index builtins
        (forward), and in a cooperative kernel also their partners: variables compared with, or
        added to, a work-item's own index in a condition or an array index (``t < s``,
        ``sm[t + s]``), and what those partners are computed from (``s = half``). A helper's
        parameter is computed from the indices when some call passes it such a value."""
        if self._related is not None:
            return self._related
        st = self.st
        by_name: dict[str, list] = {}
        for f in self.functions:
            by_name.setdefault(function_name(st, f), []).append(f)
        params, ints, assigns = {}, {}, {}
        for f in self.functions:
            params[f.start_byte], ints[f.start_byte] = self._declared_ints(f)
            assigns[f.start_byte] = list(_assignments(st, f))
        seeds_t = {f.start_byte: set() for f in self.functions}
        seeds_l = {f.start_byte: set() for f in self.functions}
        flows = {}
        for _ in range(len(self.functions) + 1):
            flows = {}
            for f in self.functions:
                k = f.start_byte
                t = self._forward(assigns[k], ints[k], seeds_t[k], self._is_builtin)
                lo = self._forward(assigns[k], ints[k], seeds_l[k], self._is_per_thread)
                flows[k] = (t, lo)
            grown = False
            for f in self.functions:
                t, lo = flows[f.start_byte]
                for call in (n for n in walk(f) if n.type == "call_expression"):
                    callee, args = call.child_by_field_name("function"), call.child_by_field_name("arguments")
                    if callee is None or args is None or st.text(callee) not in by_name:
                        continue
                    for target in by_name[st.text(callee)]:
                        for name, arg in zip(params[target.start_byte], args.named_children):
                            if not name:
                                continue
                            names, builtin = self._unit_names(arg, self._is_builtin)
                            names_l, builtin_l = self._unit_names(arg, self._is_per_thread)
                            for seeds, hit in ((seeds_t, builtin or names & t), (seeds_l, builtin_l or names_l & lo)):
                                if hit and name not in seeds[target.start_byte]:
                                    seeds[target.start_byte].add(name)
                                    grown = True
            if not grown:
                break
        out = {}
        for f in self.functions:
            k = f.start_byte
            t, lo = flows[k]
            out[k] = t | (self._partners(f, ints[k], assigns[k], t, lo) if self.cooperative else set())
        self._related = out
        return out

    def _forward(self, assigns, ints: set[str], seeds: set[str], builtin) -> set[str]:
        found = set(seeds)
        changed = True
        while changed:
            changed = False
            for name, rhs in assigns:
                if name in found or name not in ints or rhs is None:
                    continue
                names, hit = self._unit_names(rhs, builtin)
                if hit or names & found:
                    found.add(name)
                    changed = True
        return found

    def counters(self, fn) -> set[str]:
        """Integer variables only ever set from constants and themselves (``for (k = 0; k < 64;
        k += 4)``): an index made of them is no data."""
        if fn.start_byte in self._counters:
            return self._counters[fn.start_byte]
        _, ints = self._declared_ints(fn)
        sources: dict[str, set[str] | None] = {}
        for name, rhs in _assignments(self.st, fn):
            if rhs is None:
                sources.setdefault(name, set())
                continue
            if any(n.type in ("subscript_expression", "call_expression", "pointer_expression") for n in walk(rhs)) \
                    or any(self._is_builtin(n) for n in walk(rhs)):
                sources[name] = None
            elif sources.get(name, set()) is not None:
                sources[name] = sources.get(name, set()) | {self.st.text(n) for n in walk(rhs) if n.type == "identifier"}
        out = {n for n, src in sources.items() if n in ints and src is not None
               and src <= {n} | set(self.constants)}
        self._counters[fn.start_byte] = out
        return out

    def _local_names(self, fn) -> set[str]:
        names = {_declared_name(self.st, d) for decl in walk(fn) if self._local_array(decl)
                 for d in walk(decl) if d.type == "array_declarator"}
        for n in walk(fn):
            if n.type == "parameter_declaration" and opencl_space(self.st, n) == "local":
                names.add(_declared_name(self.st, n.child_by_field_name("declarator")))
            elif n.type == "declaration" and "extern" in self.st.text(n) and "__shared__" in self.st.text(n):
                names |= {_declared_name(self.st, d) for d in walk(n) if d.type == "array_declarator"}
        return names

    def _partners(self, fn, ints: set[str], assigns, computed: set[str], per_thread: set[str]) -> set[str]:
        units = list(_index_units(self.st, fn))
        # a counter that walks a local array ties its bounds to the array (thread 0 summing 64 slots)
        local, counters = self._local_names(fn), self.counters(fn)
        partners: set[str] = {self.st.text(i) for x in walk(fn) if x.type == "subscript_expression"
                              and _base_name(self.st, x) in local for idx in _indices(x) for i in walk(idx)
                              if i.type == "identifier" and self.st.text(i) in counters}
        changed = True
        while changed:
            changed = False
            for unit in units:
                names, hit = self._unit_names(unit, self._is_per_thread)
                if hit or names & (per_thread | partners):
                    new = (names & ints) - partners - per_thread
                    if new:
                        partners |= new
                        changed = True
            for name, rhs in assigns:          # what a partner is computed from
                if name in partners and name not in computed and rhs is not None:
                    new = (self._unit_names(rhs, self._is_per_thread)[0] & ints) - partners
                    if new:
                        partners |= new
                        changed = True
        return partners

    def _declared_ints(self, fn) -> tuple[list[str], set[str]]:
        """(parameter names in order, '' for the non-integer ones; integer and pointer names)."""
        st = self.st
        params, ints = [], set()
        for n in walk(fn):
            if n.type == "parameter_declaration":
                d = n.child_by_field_name("declarator")
                name = _declared_name(st, d)
                t = n.child_by_field_name("type")
                integer = bool(name) and d.type != "pointer_declarator" and \
                    not _FLOAT_TYPE.search(st.text(t) if t is not None else "")
                params.append(name if integer else "")
                if integer:
                    ints.add(name)
            elif n.type == "declaration":
                t = n.child_by_field_name("type")
                floats = bool(_FLOAT_TYPE.search(st.text(t) if t is not None else ""))
                for d in n.named_children:
                    if d.type not in ("init_declarator", "identifier", "pointer_declarator", "array_declarator"):
                        continue
                    inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                    name = _declared_name(st, inner)
                    if name and (not floats or inner.type == "pointer_declarator"):
                        ints.add(name)
        return params, ints

    def _unit_names(self, unit, builtin) -> tuple[set[str], bool]:
        """Identifiers of an expression outside the loads inside it (a loaded value is data, not an
        index), and whether it calls an index builtin (``builtin``) or one of the kernel's functions
        that read them, there."""
        names, hit = set(), False
        stack = [unit]
        while stack:
            n = stack.pop()
            if n is not unit and (n.type == "subscript_expression" or (
                    n.type == "pointer_expression" and n.children and n.children[0].type == "*")):
                continue
            if builtin(n) or self._index_call(n):
                hit = True
                continue
            if n.type == "identifier":
                names.add(self.st.text(n))
            stack.extend(n.children)
        return names, hit

    def tied(self, node, rel: set[str]) -> bool:
        """Whether ``node`` (a number) sits next to the thread indices: see the module docstring."""
        scope, n = None, node
        while n is not None and n.type != "function_definition":
            if n.type in _LOOPS:
                body = n.child_by_field_name("body")
                if body is None or not (body.start_byte <= node.start_byte < body.end_byte):
                    scope = n         # the header or condition of a loop: the whole loop matters
                    break
            if n.type in _STATEMENTS:
                scope = n
                break
            n = n.parent
        if self.cooperative:
            p = node.parent
            while p is not None and p.type != "function_definition":
                if p.type in _LOOPS and any(self._barrier(c) for c in walk(p)):
                    return True
                p = p.parent
        if scope is None:
            return True
        for c in walk(scope):
            if self._is_builtin(c) or self._index_call(c) or (c.type == "identifier" and self.st.text(c) in rel):
                return True
        return False

    def thread_indexed(self, index, rel: set[str], counters: set[str]) -> bool | None:
        """True when an array index is computed from thread indices (and constants, counters), False
        when it involves data (a loaded value, an unrelated variable, a call), None when it is made
        of constants and counters only."""
        v, _ = self.const_value(index)
        if v is not None or {self.st.text(n) for n in walk(index) if n.type == "identifier"} <= counters | set(self.constants):
            if not any(self._is_builtin(n) or n.type in ("subscript_expression", "call_expression") for n in walk(index)):
                return None
        stack = [index]
        while stack:
            n = stack.pop()
            if self._is_builtin(n) or self._index_call(n):
                continue
            stack.extend(n.children)
            if n.type == "subscript_expression":
                return False
            if n.type == "call_expression" and not any(self._is_builtin(a) for a in walk(n)):
                f = n.child_by_field_name("function")
                if f is None or self.st.text(f) not in ("min", "max", "mad24", "mul24", "abs"):
                    return False
            if n.type == "identifier" and n.parent is not None and n.parent.type != "call_expression" \
                    and self.st.text(n) not in rel | counters and self.st.text(n) not in self.constants:
                return False
        return True


def _declared_name(st: RewriteState, d) -> str:
    while d is not None and d.type != "identifier":
        d = d.child_by_field_name("declarator")
    return st.text(d) if d is not None else ""


def _index_units(st: RewriteState, fn):
    """Comparisons in conditions (each side of && and || apart) and array indices: where a partner
    meets the thread index."""
    for n in walk(fn):
        if n.type == "subscript_argument_list":
            yield n
        elif n.type in ("if_statement", "while_statement", "do_statement", "for_statement",
                        "conditional_expression"):
            c = n.child_by_field_name("condition")
            if c is not None:
                yield from _atoms(st, c)


def _atoms(st: RewriteState, cond):
    c = unwrap(cond)
    if c is None:
        return
    if c.type == "binary_expression" and st.text(c.child_by_field_name("operator")) in ("&&", "||"):
        yield from _atoms(st, c.child_by_field_name("left"))
        yield from _atoms(st, c.child_by_field_name("right"))
    elif c.type == "unary_expression" and st.text(c.child_by_field_name("operator")) == "!":
        yield from _atoms(st, c.child_by_field_name("argument"))
    else:
        yield c


def _assignments(st: RewriteState, fn):
    """(variable, value expression) for every initialization and assignment of a plain variable in
    ``fn`` (``++i``: value None)."""
    for n in walk(fn):
        if n.type == "init_declarator":
            yield _declared_name(st, n.child_by_field_name("declarator")), n.child_by_field_name("value")
        elif n.type == "assignment_expression":
            left = unwrap(n.child_by_field_name("left"))
            if left is not None and left.type == "identifier":
                yield st.text(left), n.child_by_field_name("right")
        elif n.type == "update_expression":
            arg = unwrap(n.child_by_field_name("argument"))
            if arg is not None and arg.type == "identifier":
                yield st.text(arg), None


def _apply(op: str, a: int, b: int) -> int | None:
    if op in _OPS:
        if op in ("<<", ">>") and not 0 <= b < 64:
            return None
        return _OPS[op](a, b)
    if op in ("/", "%") and b != 0:
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)   # C truncates toward zero
        return q if op == "/" else a - q * b
    return None


def _eval_text(text: str, known: dict[str, tuple[int | None, bool]]) -> tuple[int | None, bool]:
    """(value, follows the block-size parameter) of a macro or constant's text: integers, names
    already known, + - * / % << >> & | ^ and parentheses. It follows when it names a macro that
    does (a literal inside a longer text is not rewritten, so it does not follow)."""
    cleaned = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", r"\1", text.strip())
    cleaned = re.sub(r"\(\s*(unsigned\s+int|unsigned|int|uint|long|size_t)\s*\)", "", cleaned)
    try:
        tree = ast.parse(cleaned, mode="eval")
    except SyntaxError:
        return None, False
    mentions = False

    def ev(node):
        nonlocal mentions
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            v, b = known.get(node.id, (None, False))
            mentions = mentions or b
            return v
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = ev(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp):
            sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "/", ast.Mod: "%",
                   ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}.get(type(node.op))
            a, b = ev(node.left), ev(node.right)
            return None if sym is None or a is None or b is None else _apply(sym, a, b)
        return None

    return ev(tree.body), mentions


def find_ties(st: RewriteState, dims: list[int], tunable: list[int], square: bool) -> Ties:
    """The literals of the block size to rewrite, and the limits on it; raises RuleDeclined when
    the code also depends on the block size in a way a rewrite cannot follow."""
    a = _Analysis(st, dims, tunable)
    axis_of = lambda v: [i for i in tunable if dims[i] == v]  # noqa: E731
    ties = Ties(literals={i: [] for i in tunable}, cooperative=a.cooperative)
    derived: dict[int, int] = {}               # value -> the axis it is derived from
    fractions: dict[int, int] = {}
    for i in tunable:
        tied_values, small = derived_values(dims[i], a.cooperative)
        for v in tied_values - set(dims):
            derived.setdefault(v, i)
        for v in small - set(dims):
            fractions.setdefault(v, i)

    # function-like macros are not analyzed: one that spells out the block size or a number derived
    # from it leaves the block size alone
    for n in st.parsed.tree.root_node.named_children:
        if n.type == "preproc_function_def" and n.child_by_field_name("value") is not None:
            for m in re.finditer(r"\b\d+\b", st.text(n.child_by_field_name("value"))):
                v = int(m.group())
                if v in derived or v in fractions or v in a.block_values:
                    raise RuleDeclined(f"the function-like macro {st.text(n.child_by_field_name('name'))} spells "
                                       f"out {v}, the block size or a number derived from it")
    from kerntune.agents.rules.ept import baked_ept_literals
    from kerntune.agents.rules.groupsplit import baked_split_literals
    from kerntune.agents.rules.vectorize import baked_vec_literals

    related = a.related_all()
    for fn in a.functions:
        rel = related[fn.start_byte]
        # the numbers of another rule's parameter an earlier round baked (a split, elements per thread or
        # per step): theirs, not the block's, whether equal to it or derived from it (half the block)
        baked = {n.id for n in (*baked_split_literals(st, fn), *baked_ept_literals(st, fn),
                                *baked_vec_literals(st, fn))}
        for node in walk(fn):
            if node.id in baked:
                continue
            v = int_literal(st, node)
            if v is not None and v in a.block_values:
                if _in_generated_array(st, node):
                    continue
                hits = axis_of(v)
                if len(hits) > 1 and not square:
                    raise RuleDeclined(f"the literal {v} is both the block's {'/'.join('xyz'[i] for i in hits)} size")
                ties.literals[hits[0]].append(node)
                continue
            if node.type not in ("number_literal", "identifier", "binary_expression", "unary_expression"):
                continue
            # the largest constant expression around a number, unless it mentions the block size
            # (that one follows the parameter)
            value, mentions = a.const_value(node)
            if value is None or mentions or _in_generated_array(st, node):
                continue
            parent = node.parent
            if parent is not None and parent.type in ("binary_expression", "unary_expression",
                                                      "parenthesized_expression"):
                pv, pm = a.const_value(parent)
                if pv is not None and not pm:
                    continue          # the enclosing expression is checked instead
            if not (value in a.block_values or value in derived or value in fractions) or not a.tied(node, rel):
                continue
            spelled = str(value) if node.type == "number_literal" else f"{st.text(node)!r} ({value})"
            if value in a.block_values:
                raise RuleDeclined(f"the code spells the block size {value} as {st.text(node)!r}, which the rewrite "
                                   "cannot follow, next to the thread indices")
            if value in derived:
                raise RuleDeclined(f"the code uses {spelled}, a number derived from the block size "
                                   f"{dims[derived[value]]}, next to the thread indices: the block size cannot "
                                   "change safely")
            axis = fractions[value]
            if 2 * value > ties.min_block.get(axis, 0):
                ties.min_block[axis] = 2 * value
                ties.limits.append(f"at least {2 * value}: the code uses {spelled} next to the thread indices")
    _check_local_arrays(a, ties, derived, fractions)
    return ties


def _in_generated_array(st: RewriteState, node) -> bool:
    """A literal in the size of an array a rule declared (kt_priv_counts[256]): the rule knows what
    it counts, and it is not the block."""
    n = node
    while n is not None and n.type not in ("declaration", "function_definition"):
        if n.type == "array_declarator" and _declared_name(st, n).startswith("kt_"):
            return True
        n = n.parent
    return False


def _check_local_arrays(a: _Analysis, ties: Ties, derived: dict[int, int], fractions: dict[int, int]) -> None:
    """Local (shared) arrays: sized like the block, they must be indexed by thread indices only; of
    a fixed size, indexed by thread, the block must fit in them; sized by a number derived from the
    block, they cannot follow it."""
    st = a.st
    related = a.related_all()
    for fn in a.functions:
        rel = related[fn.start_byte]
        for decl in (d for d in walk(fn) if a._local_array(d)):
            for d in (c for c in walk(decl) if c.type == "array_declarator" and c.parent.type != "array_declarator"):
                name = _declared_name(st, d)
                if is_helper(name):
                    continue
                sizes, n = [], d
                while n is not None and n.type == "array_declarator":
                    sizes.append(n.child_by_field_name("size"))
                    n = n.child_by_field_name("declarator")
                if any(size is None for size in sizes):
                    continue          # dynamic shared memory: sized by the launch (checked by launch-config)
                follows, total = False, 1
                for size in sizes:
                    v, mentions = a.const_value(size)
                    if mentions:
                        follows = True
                    elif v is not None and (v in derived or v in fractions):
                        raise RuleDeclined(f"the local array {name} has a dimension of {v}, a number derived from "
                                           f"the block size: the block size cannot change safely")
                    total = None if v is None or total is None else total * v
                accesses = [x for x in walk(fn) if x.type == "subscript_expression" and _base_name(st, x) == name
                            and not (x.parent.type == "subscript_expression"
                                     and x.parent.child_by_field_name("argument") == x)]
                counters = a.counters(fn)
                kinds = {a.thread_indexed(idx, rel, counters) for x in accesses for idx in _indices(x)}
                if follows:
                    if False in kinds:
                        raise RuleDeclined(f"the local array {name} is sized like the block but indexed by data: its "
                                           "size need not be the block size")
                    continue
                if True not in kinds:
                    continue
                original = math.prod(a.dims[i] for i in a.tunable)
                if len(a.tunable) > 1 or total is None or total < original:
                    raise RuleDeclined(f"the local array {name} is indexed by thread index but its size does not "
                                       "follow the block size")
                if ties.max_threads is None or total < ties.max_threads:
                    ties.max_threads = total
                    ties.limits.append(f"at most {total}: the local array {name}[{total}] is indexed by thread index")


def _base_name(st: RewriteState, sub) -> str:
    n = sub
    while n is not None and n.type == "subscript_expression":
        n = n.child_by_field_name("argument")
    return st.text(n) if n is not None and n.type == "identifier" else ""


def _indices(sub) -> list:
    out, n = [], sub
    while n is not None and n.type == "subscript_expression":
        idx = n.child_by_field_name("indices")
        if idx is not None:
            out.extend(idx.named_children)
        n = n.child_by_field_name("argument")
    return out
