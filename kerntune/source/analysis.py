"""What a kernel does with its arguments, read off its code: which arrays it
reads and writes (through casts, pointer arithmetic, helper functions and
atomics), which elements (as polynomials of its integer parameters), which
divisions it makes (so which sizes must be multiples of what), and how many
blocks its index arithmetic expects.

It is an abstract interpretation over tree-sitter's syntax tree: integers are
intervals with polynomial bounds (:mod:`kerntune.source.values`), pointers are
an array plus an interval of offsets. Statements run once, in order; ``if``
and loop conditions narrow the variables they test (``if (i >= n) return;``
gives ``i < n`` afterwards); variables a loop changes are forgotten before its
body; ``__device__`` functions of the source are followed into with their
arguments bound. What cannot be followed is recorded as unknown with the
reason, never guessed.
"""

from __future__ import annotations

import math

import re
from dataclasses import replace
from fractions import Fraction
from math import gcd

from kerntune.source.calls import GRID, Calls, _data, _int, function_name
from kerntune.source.carried import written_before
from kerntune.source.parse import KernelFunction, walk
from kerntune.source.poly import Poly
from kerntune.source.typeenv import TypeEnv
from kerntune.source.values import (
    DATA, UNKNOWN, Access, Facts, Ptr, Val, add, floordiv_bound, index_range, mul, neg, sub, union,
)



class _NullPtr:
    pass


NULLPTR = _NullPtr()


def samples_for(names: list[str]) -> list[dict[str, int]]:
    """Size values the analysis compares bounds at: so varied that one bound is below another
    at all of them only when it is so for structural reasons."""
    patterns = [lambda i: 1009 + 7 * i, lambda i: 3 + i if i % 2 else 70001 + i,
                lambda i: 70001 + i if i % 2 else 5 + i, lambda i: 64 + 13 * i, lambda i: 9973 - 37 * i]
    return [{n: f(i) for i, n in enumerate(names)} for f in patterns]


class Analyzer(Calls):
    def __init__(self, source: str, kernel: KernelFunction, bindings: dict[str, str], block: tuple[int, ...],
                 sizes: list[str], load_bounds: dict[str, Poly] | None = None):
        """``load_bounds``: arrays whose values are indices, with the bound they stay below."""
        self.load_bounds = dict(load_bounds or {})
        self.data = source.encode()
        self.kernel = kernel
        root = kernel.node
        while root.parent is not None:
            root = root.parent
        self.root = root
        consts = {}
        for p in kernel.template_params or ():
            if p.kind == "value" and p.name in bindings:
                v = _int(bindings[p.name])
                if v is not None:
                    consts[p.name] = v
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?\s*(-?\d+)[uUlL]*\s*\)?[ \t]*$",
                             source, re.M):
            consts.setdefault(m.group(1), int(m.group(2)))
        self.consts = consts
        self.types = TypeEnv(root, self.data, {k: v for k, v in bindings.items() if k not in consts}, consts)
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.samples = samples_for(sizes + list(GRID.values()) + [str(b) for b in self.load_bounds.values()])
        self.facts = Facts()
        self.env: dict[str, object] = {}
        self.guards: list[bool] = []
        self.conds: list[str] = []       # the conditions (conjuncts, as written) the code at hand runs under
        # elements written (root, first, last, under conds) in the order the code runs: a later read of
        # exactly those elements under the same conditions reads back what the kernel wrote, not its input
        self.written: list[tuple[str, Poly, Poly, frozenset[str], object]] = []   # ... and the write's node
        self.pending: list[tuple[Access, object, frozenset[str]]] = []   # reads no earlier write explains
        self.loop_dense: dict[str, bool] = {}   # loop variable -> its loop takes every value up to the bound
        self.quotients: dict[str, tuple[str, str]] = {}     # q -> (i, d) for q = i / d
        self.functions: dict[str, list] = {}
        self.stack: list = []
        self.params = {p.name for p in kernel.params}
        for n in walk(root):
            if n.type == "function_definition" and n is not kernel.node:
                name = function_name(n, self.data)
                if name:
                    self.functions.setdefault(name, []).append(n)

    # --- entry ---------------------------------------------------------------------------------
    def run(self) -> Facts:
        for p in self.kernel.params:
            if p.pointer:
                size = self.types.size(p.ctype)
                self.env[p.name] = Ptr(p.name, Val.const(0), size, size)
            elif self._is_int_type(p.ctype):
                self.env[p.name] = Val.exact(Poly.sym(p.name))
            else:
                self.env[p.name] = UNKNOWN
        self.stmt(self.kernel.body)
        return self.facts

    def t(self, n) -> str:
        return self.data[n.start_byte:n.end_byte].decode()

    def _is_int_type(self, ctype: str) -> bool:
        from kerntune.source.types import dtype_of

        dt = dtype_of(self.types.resolve(ctype))
        return dt is not None and dt.startswith(("int", "uint"))

    # --- statements ----------------------------------------------------------------------------
    def stmt(self, n) -> None:
        if n is None:
            return
        t = n.type
        if t == "compound_statement":
            self.block_(n.named_children)
        elif t == "declaration":
            self.declaration(n)
        elif t == "expression_statement":
            for c in n.named_children:
                self.ev(c)
        elif t == "if_statement":
            self.if_(n)
        elif t == "for_statement":
            self.for_(n)
        elif t in ("while_statement", "do_statement", "for_range_loop"):
            self.widen(n)
            cond = n.child_by_field_name("condition")
            if cond is not None:
                self.ev(cond)
            self.stmt(n.child_by_field_name("body"))
            self.widen(n)
        elif t == "return_statement":
            for c in n.named_children:
                self.ev(c)
        elif t == "alias_declaration":
            self.types.aliases[self.t(n.child_by_field_name("name"))] = self.t(n.child_by_field_name("type"))
        elif t == "type_definition":
            d, typ = n.child_by_field_name("declarator"), n.child_by_field_name("type")
            if d is not None and typ is not None:
                self.types.aliases[self.t(d)] = self.t(typ)
        elif t in ("switch_statement", "case_statement", "labeled_statement", "else_clause",
                   "condition_clause"):
            for c in n.named_children:
                if c.type.endswith("statement") or c.type in ("declaration", "compound_statement"):
                    self.stmt(c)
                else:
                    self.ev(c)

    def block_(self, children) -> None:
        pushed: list[int] = []
        for c in children:
            if c.type == "if_statement" and c.child_by_field_name("alternative") is None and \
                    _exits(c.child_by_field_name("consequence")):
                cond = _unwrap_cond(c.child_by_field_name("condition"))
                value = self.ev(cond)
                self.stmt_guarded(c.child_by_field_name("consequence"), cond, True, _data(value))
                self.refine(cond, False)             # the rest of the block runs when the condition is false
                self.guards.append(_data(value))
                conds = self._conjuncts(cond, False)
                self.conds.extend(conds)
                pushed.append(len(conds))
                continue
            self.stmt(c)
        for n_conds in pushed:
            self.guards.pop()
            del self.conds[len(self.conds) - n_conds:]

    def stmt_guarded(self, n, cond, truth: bool, data: bool, keep: bool = False, run=None):
        """Run ``n`` (a statement, or with ``run=self.ev`` an expression: its value is returned) where
        ``cond`` is ``truth``; the narrowed variables do not outlive it (with ``keep``, or an
        expression, assignments it makes do: the caller merges them)."""
        saved = dict(self.env)
        self.guards.append(data)
        conds = self._conjuncts(cond, truth)
        self.conds.extend(conds)
        self.refine(cond, truth)
        value = (run or self.stmt)(n)
        self.guards.pop()
        del self.conds[len(self.conds) - len(conds):]
        keep = keep or run is not None
        if keep:
            self.env = {k: (self.env.get(k, v) if self._assigned(n, k) else v) for k, v in saved.items()}
        else:
            self.env = saved
        return value

    def _conjuncts(self, cond, truth: bool) -> list[str]:
        """What ``cond`` being ``truth`` says, as the texts of the conditions that all hold then."""
        cond = _strip_parens(cond)
        if cond is None:
            return []
        if cond.type == "binary_expression":
            op = self.t(cond.child_by_field_name("operator"))
            if (op == "&&" and truth) or (op == "||" and not truth):
                return self._conjuncts(cond.child_by_field_name("left"), truth) + \
                    self._conjuncts(cond.child_by_field_name("right"), truth)
        text = " ".join(self.t(cond).split())
        return [text if truth else f"!({text})"]

    def _assigned(self, n, name: str) -> bool:
        for c in walk(n):
            target = c.child_by_field_name("left") if c.type == "assignment_expression" else \
                c.child_by_field_name("argument") if c.type == "update_expression" else None
            if target is not None and target.type == "identifier" and self.t(target) == name:
                return True
        return False

    def declaration(self, n) -> None:
        typ = n.child_by_field_name("type")
        ctype = self.t(typ) if typ is not None else ""
        quals = {self.t(c) for c in n.children if c.type in ("type_qualifier", "storage_class_specifier")}
        for d in n.children_by_field_name("declarator"):
            value_node = d.child_by_field_name("value") if d.type == "init_declarator" else None
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            pointer = False
            while target is not None and target.type in ("pointer_declarator", "reference_declarator"):
                pointer = True
                target = target.child_by_field_name("declarator") or next(
                    (c for c in target.named_children if c.type == "identifier"), None)
            if target is None:
                continue
            if target.type == "array_declarator":
                name_node = target.child_by_field_name("declarator")
                name = self.t(name_node) if name_node is not None else ""
                if "extern" in quals and "__shared__" in quals:
                    item = self.types.size(ctype)
                    self.env[name] = Ptr("@shared", Val.const(0), item, item)
                else:
                    self.env[name] = "local"
                if value_node is not None:
                    self.ev(value_node)
                continue
            name = self.t(target)
            value = self.ev(value_node) if value_node is not None else UNKNOWN
            if value_node is not None and value_node.type == "initializer_list":
                value = UNKNOWN
            if isinstance(value, Ptr) and pointer and ctype not in ("auto",):
                size = self.types.size(ctype)
                value = value.retyped(size) if size is not None else value   # T* of an unknown T: as given
            elif isinstance(value, Val) and not pointer and ctype not in ("auto",) \
                    and not self._is_int_type(ctype):
                value = Val(data=value.data)
            self.env[name] = value
            self._note_quotient(name, value_node)
            if isinstance(value, Val) and value.known:
                self._note_grid_var(name, value)

    def _note_grid_var(self, name: str, value: Val) -> None:
        for axis, g in GRID.items():
            if value.hi == Poly.sym(g) - 1 and value.lo == Poly.const(0):
                self.facts.grid_vars.setdefault(axis, name)

    def if_(self, n) -> None:
        cond = _unwrap_cond(n.child_by_field_name("condition"))
        value = self.ev(cond)
        data = _data(value)
        alt = n.child_by_field_name("alternative")
        if isinstance(value, Val) and value.is_exact and value.lo.is_const:
            # a condition on template parameters or constants: only one branch exists
            branch = n.child_by_field_name("consequence") if value.lo.const_value else alt
            if branch is not None:
                self.stmt(branch)
            return
        before = dict(self.env)
        self.stmt_guarded(n.child_by_field_name("consequence"), cond, True, data, keep=True)
        then_env = self.env
        self.env = dict(before)
        if alt is not None:
            self.stmt_guarded(alt, cond, False, data, keep=True)
        else_env = self.env
        merged = {}
        for k, old in before.items():
            a, b = then_env.get(k, old), else_env.get(k, old)
            merged[k] = a if a == b else self.join(a, b)
        self.env = merged

    def for_(self, n) -> None:
        init = n.child_by_field_name("initializer")
        cond = n.child_by_field_name("condition")
        update = n.child_by_field_name("update")
        body = n.child_by_field_name("body")
        loop_var = None
        if init is not None:
            if init.type == "declaration":
                self.declaration(init)
                d = next(iter(init.children_by_field_name("declarator")), None)
                if d is not None and d.type == "init_declarator":
                    loop_var = self.t(d.child_by_field_name("declarator"))
            else:
                self.ev(init)
                if init.type == "assignment_expression":
                    loop_var = self.t(init.child_by_field_name("left"))
        before = dict(self.env)
        start = self.env.get(loop_var) if loop_var else None
        self.widen(n, except_=loop_var)
        decreasing = update is not None and re.search(r"--|-=", self.t(update)) is not None
        if loop_var is not None and isinstance(start, Val):
            self.env[loop_var] = Val(None, start.hi, start.data) if decreasing else \
                Val(start.lo, None, start.data, atoms=start.atoms)
            self.loop_dense[loop_var] = not decreasing and self._dense_loop(start, update)
        if cond is not None:
            value = self.ev(cond)
            self.guards.append(_data(value))
            self.refine(cond, True, loop_start=start if isinstance(start, Val) else None, loop_var=loop_var)
        else:
            self.guards.append(False)
        self.stmt(body)
        if loop_var is not None and isinstance(start, Val) and start.is_exact and start.lo.is_const and \
                self.loop_dense.get(loop_var):
            self._carried(n, loop_var, int(start.lo.const_value))
        if update is not None:
            self.ev(update)
        self.guards.pop()
        self.env = before
        self.widen(n)

    def _carried(self, loop, var: str, start: int) -> None:
        """Reads in ``loop`` of only what its earlier passes wrote (see carried.py) are read back."""
        inside = lambda x: loop.start_byte <= x.start_byte and x.end_byte <= loop.end_byte  # noqa: E731
        for access, node, conds in self.pending:
            if not access.read or not inside(node):
                continue
            writes = [(w, c) for root, _, _, c, w in self.written if root == access.root and inside(w)]
            if writes and written_before(loop, var, start, node, conds, writes, self.data):
                access.read, access.reread = False, True

    def _dense_loop(self, start: Val, update) -> bool:
        """Whether a loop from ``start`` by ``update`` takes every value up to its bound: ``j++`` from
        one value or a dense range, or ``j += S`` from a dense range of exactly S values (threadIdx.x
        by blockDim.x: the threads together take them all)."""
        if update is None or not start.dense:
            return False
        text = re.sub(r"\s+", "", self.t(update))
        if re.fullmatch(r"\+\+\w+|\w+\+\+|\w+\+=1", text):
            return True
        m = re.fullmatch(r"\w+\+=(.+)", text)
        right = update.child_by_field_name("right") if m else None
        by = self.ev_quiet(right) if right is not None else None
        return isinstance(by, Val) and by.is_exact and start.known and by.lo == start.hi - start.lo + 1

    def widen(self, n, except_: str | None = None) -> None:
        """Forget what ``n`` may assign (its loops run an unknown number of times; a branch may
        or may not have run)."""
        for c in walk(n):
            target = None
            if c.type == "assignment_expression":
                target = c.child_by_field_name("left")
            elif c.type == "update_expression":
                target = c.child_by_field_name("argument")
            if target is None or target.type != "identifier":
                continue
            name = self.t(target)
            if name == except_ or name not in self.env:
                continue
            old = self.env[name]
            if isinstance(old, Ptr):
                self.env[name] = replace(old, off=Val(data=True))
            elif isinstance(old, Val):
                self.env[name] = Val(data=old.data, src=old.src)

    # --- conditions ---------------------------------------------------------------------------
    def refine(self, cond, truth: bool, loop_start: Val | None = None, loop_var: str | None = None) -> None:
        cond = _strip_parens(cond)
        if cond is None:
            return
        if cond.type == "unary_expression" and self.t(cond.child_by_field_name("operator")) == "!":
            self.refine(cond.child_by_field_name("argument"), not truth, loop_start, loop_var)
            return
        if cond.type != "binary_expression":
            return
        op = self.t(cond.child_by_field_name("operator"))
        left, right = _strip_parens(cond.child_by_field_name("left")), _strip_parens(cond.child_by_field_name("right"))
        if (op == "&&" and truth) or (op == "||" and not truth):
            self.refine(left, truth, loop_start, loop_var)
            self.refine(right, truth, loop_start, loop_var)
            return
        if op not in ("<", "<=", ">", ">=", "==", "!="):
            return
        if not truth:
            op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[op]
        if left.type != "identifier" and right.type == "identifier" and not self._thread_dependent(left):
            # `n > i` reads as `i < n`; `base + j < n` (an index expression against a size) stays
            left, right = right, left
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
        bound = self.ev_quiet(right)
        # `j < min(k, n)` bounds j by min's largest value alone: its smallest is not needed (nor known)
        if not isinstance(bound, Val) or (bound.hi if op in ("<", "<=") else bound.lo) is None or \
                (op in ("==", "!=") and not bound.known):
            return
        if left.type == "identifier":
            name = self.t(left)
            cur = self.env.get(name)
            if not isinstance(cur, Val):
                return
            base = loop_start if (loop_var == name and loop_start is not None) else cur
        else:
            name, cur = None, self.ev_quiet(left)
            if not isinstance(cur, Val):
                return
            base = cur
        lo, hi = cur.lo, cur.hi
        if op in ("<", "<=", "=="):
            new_hi = bound.hi - (1 if op == "<" else 0)
            self._coverage(base.hi, new_hi)
            if loop_var is not None and name == loop_var:
                hi = new_hi
            elif hi is None or _has_grid(hi) or self._smaller(new_hi, hi):
                hi = new_hi
        if op in (">", ">=", "=="):
            new_lo = bound.lo + (1 if op == ">" else 0)
            if lo is None or self._smaller(lo, new_lo):
                lo = new_lo
        if name is not None:
            # a bound cuts a dense range to a dense range (a step of more than 1 may no longer reach hi)
            dense = (cur.dense or (loop_var == name and self.loop_dense.get(name))) and lo is not None and hi is not None
            atoms = cur.atoms | ({f"{name}@{cond.start_byte}"} if loop_var == name else set())
            self.env[name] = Val(lo, hi, cur.data, cur.src, Poly.const(1) if dense else None, frozenset(atoms))

    def _thread_dependent(self, n) -> bool:
        """Whether an expression's largest value depends on the grid (a thread's index)."""
        v = self.ev_quiet(n)
        return isinstance(v, Val) and v.hi is not None and _has_grid(v.hi)

    def _smaller(self, a: Poly, b: Poly) -> bool:
        """Whether ``a <= b`` at every sample (False where either names an int the samples leave out:
        a mode parameter, compared only with constants; `if (mode == 2)` raised a KeyError)."""
        if self.samples and not (a.symbols() | b.symbols()) <= self.samples[0].keys():
            return False
        return all(a.evaluate(s) <= b.evaluate(s) for s in self.samples)

    def _coverage(self, hi: Poly | None, need_hi: Poly) -> None:
        """``hi`` (the largest value over the launch) must reach ``need_hi``: how many blocks that takes."""
        if hi is None:
            return
        for axis, g in GRID.items():
            lin = hi.linear_in(g)
            if lin is None or lin[0] == Poly():
                continue
            a, b = lin
            if not a.is_const or a.const_value <= 0 or _has_grid(b) or _has_grid(need_hi):
                continue
            k = a.const_value
            if k.denominator != 1:
                continue
            # need a * G + b >= need_hi: G = ceil((need_hi - b) / a) blocks
            self.facts.coverage.setdefault(axis, []).append(_Ceil(need_hi - b, int(k)))

    # --- expressions ---------------------------------------------------------------------------
    def ev_quiet(self, n):
        """Evaluate without recording accesses (a condition already evaluated once)."""
        saved = len(self.facts.accesses)
        v = self.ev(n)
        del self.facts.accesses[saved:]
        return v

    def ev(self, n, ctx: str = "r"):
        if n is None:
            return UNKNOWN
        t = n.type
        if t in ("parenthesized_expression", "condition_clause"):
            inner = n.named_children
            return self.ev(inner[-1], ctx) if inner else UNKNOWN
        if t == "number_literal":
            v = _int(self.t(n))
            return Val.const(v) if v is not None else UNKNOWN
        if t in ("true", "false"):
            return Val.const(1 if t == "true" else 0)
        if t in ("nullptr", "null"):
            return NULLPTR
        if t == "identifier":
            return self.identifier(n)
        if t == "field_expression":
            return self.field(n, ctx)
        if t == "subscript_expression":
            return self.subscript(n, ctx)
        if t == "pointer_expression":
            op = self.t(n.child_by_field_name("operator"))
            arg = self.ev(n.child_by_field_name("argument"), "addr" if op == "&" else "r")
            if op == "&":
                return arg if isinstance(arg, Ptr) else UNKNOWN
            if isinstance(arg, Ptr):
                return self.access(arg, None, ctx, n)
            return DATA
        if t == "binary_expression":
            return self.binary(n)
        if t == "unary_expression":
            op = self.t(n.child_by_field_name("operator"))
            v = self.ev(n.child_by_field_name("argument"))
            if op == "-" and isinstance(v, Val):
                return neg(v)
            if op == "+":
                return v
            return Val(data=_data(v), src=v.src if isinstance(v, Val) else None)
        if t == "assignment_expression":
            return self.assign(n)
        if t == "update_expression":
            arg = n.child_by_field_name("argument")
            if arg.type == "identifier":
                name = self.t(arg)
                old = self.env.get(name)
                if isinstance(old, Val):
                    step = Val.const(1 if "++" in self.t(n) else -1)
                    self.env[name] = add(old, step)
                elif isinstance(old, Ptr):
                    self.env[name] = replace(old, off=Val(data=True))
                return old if isinstance(old, (Val, Ptr)) else UNKNOWN
            return self.ev(arg, "rw")
        if t == "conditional_expression":
            # each branch runs where the condition is true or false (`(x < w) ? img[x] : 0` reads in bounds)
            cond = _unwrap_cond(n.child_by_field_name("condition"))
            data = _data(self.ev(cond))
            a = self.stmt_guarded(n.child_by_field_name("consequence"), cond, True, data, run=self.ev)
            b = self.stmt_guarded(n.child_by_field_name("alternative"), cond, False, data, run=self.ev)
            return self.join(a, b)
        if t == "cast_expression":
            typ = self.t(n.child_by_field_name("type"))
            v = self.ev(n.child_by_field_name("value"))
            return self.cast(typ, v)
        if t == "call_expression":
            return self.call(n)
        if t == "sizeof_expression":
            typ = n.child_by_field_name("type") or n.child_by_field_name("value")
            s = self.types.size(self.t(typ).strip().strip("()")) if typ is not None else None
            if s is None and typ is not None and typ.type != "type_descriptor":
                v = self.ev_quiet(typ)
                s = v.item if isinstance(v, Ptr) and v.item and typ.type != "identifier" else None
            return Val.const(s) if s is not None else UNKNOWN
        if t == "comma_expression":
            v = UNKNOWN
            for c in n.named_children:
                v = self.ev(c)
            return v
        for c in n.named_children:
            self.ev(c)
        return UNKNOWN

    def join(self, a, b):
        if isinstance(a, Ptr) and (b is NULLPTR):
            return a
        if isinstance(b, Ptr) and (a is NULLPTR):
            return b
        if isinstance(a, Ptr) and isinstance(b, Ptr) and a.root == b.root:
            return replace(a, off=union(a.off, b.off, self.samples))
        if isinstance(a, Val) and isinstance(b, Val):
            return union(a, b, self.samples)
        return UNKNOWN

    def identifier(self, n):
        name = self.t(n)
        if name in self.params:
            self.facts.used_params.add(name)
        if name in self.env:
            v = self.env[name]
            return v if isinstance(v, (Val, Ptr)) else UNKNOWN
        if name in self.consts:
            return Val.const(self.consts[name])
        if name in ("NULL",):
            return NULLPTR
        return UNKNOWN

    def field(self, n, ctx: str):
        arg = n.child_by_field_name("argument")
        fld = self.t(n.child_by_field_name("field"))
        if arg is not None and arg.type == "identifier":
            base = self.t(arg)
            axis = fld if fld in ("x", "y", "z") else None
            if axis and base not in self.env:
                b = self.block["xyz".index(axis)]
                if base == "threadIdx":
                    return index_range(Poly.const(b), "tid." + axis)
                if base == "blockDim":
                    return Val.const(b)
                if base == "blockIdx":
                    self.facts.grid_axes.add(axis)
                    return index_range(Poly.sym(GRID[axis]), "bid." + axis)
                if base == "gridDim":
                    self.facts.grid_axes.add(axis)
                    return Val.exact(Poly.sym(GRID[axis]))
        op = next((c for c in n.children if c.type in ("->", ".")), None)
        if op is not None and op.type == "->":
            p = self.ev(arg)
            if isinstance(p, Ptr):
                return self.access(p, None, ctx, n)
            return DATA
        self.ev(arg, ctx if arg is not None and arg.type == "subscript_expression" else "r")
        return DATA

    def subscript(self, n, ctx: str):
        base = self.ev(n.child_by_field_name("argument"), "addr")
        idx_node = n.child_by_field_name("indices") or n.child_by_field_name("index")
        if idx_node is not None and idx_node.type == "subscript_argument_list":
            kids = idx_node.named_children
            idx_node = kids[0] if kids else None
        idx = self.ev(idx_node) if idx_node is not None else UNKNOWN
        if not isinstance(base, Ptr):
            return DATA
        if not isinstance(idx, Val):
            idx = UNKNOWN
        if ctx == "addr":
            return base.shifted(idx, self.samples)
        return self.access(base, idx, ctx, n)

    def access(self, p: Ptr, idx: Val | None, ctx: str, node) -> Val:
        q = p.shifted(idx, self.samples) if idx is not None else p
        ratio = q.ratio
        # a write under a condition on loaded data, or at an index loaded from memory, may skip elements
        partial = any(self.guards) or q.off.data
        why = ""
        lo = hi = None
        if q.off.known and ratio is not None:
            lo = q.off.lo
            hi = q.off.hi + (ratio - 1 if ratio >= 1 else 0)
        elif q.off.data:
            why = f"an index depends on values loaded from {q.off.src}" if q.off.src else \
                "an index depends on a value the analysis cannot follow (loaded from memory, or returned by a " \
                "function it does not know, such as mad24 or abs)"
            if q.off.src:
                self.facts.index_sources.setdefault(q.root, q.off.src)
        elif ratio is None:
            why = "the element type's size is not known"
        else:
            why = "an index the analysis cannot bound"
        if ctx == "addr":
            return q
        reread = False
        if lo is not None and hi is not None and q.root in self.params:
            if ctx in ("r", "rw"):
                # a read of exactly the elements an earlier write stored, wherever that write ran: the
                # kernel reads back its own results (a renormalisation), not what the array held
                conds = set(self.conds)
                reread = any((root, first, last) == (q.root, lo, hi) and c <= conds
                             for root, first, last, c, _ in self.written)
            elif ctx == "w" and not partial and q.off.dense and ratio == 1:
                # only a write of every element of its span: `out[2 * i]` for i < n spans 0 .. 2n - 2 but
                # leaves the odd elements, and a dense read of that span reads what the array held
                self.written.append((q.root, lo, hi, frozenset(self.conds), node))
        access = Access(q.root, lo, hi, read=ctx in ("r", "rw", "atomic") and not reread,
                        write=ctx in ("w", "rw", "atomic"), atomic=ctx == "atomic", partial=partial, why=why,
                        reread=reread)
        self.facts.accesses.append(access)
        if access.read and lo is not None and hi is not None and q.root in self.params and ctx in ("r", "rw"):
            self.pending.append((access, node, frozenset(self.conds)))
        if q.root in self.load_bounds and ctx == "r":
            return Val(Poly.const(0), self.load_bounds[q.root] - 1, True, q.root)
        return Val(data=True, src=q.root if q.root != "@shared" else None)

    def assign(self, n):
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        op = self.t(n.child_by_field_name("operator"))
        value = self.ev(right)
        if left.type == "identifier":
            name = self.t(left)
            if op == "=":
                self.env[name] = value if isinstance(value, (Val, Ptr)) else UNKNOWN
            else:
                old = self.env.get(name)
                if isinstance(old, Ptr) and isinstance(value, Val) and op in ("+=", "-="):
                    self.env[name] = old.shifted(value if op == "+=" else neg(value), self.samples)
                elif isinstance(old, Val) and isinstance(value, Val) and op == "+=":
                    self.env[name] = add(old, value)
                elif isinstance(old, Val):
                    self.env[name] = Val(data=old.data or _data(value))
            return value
        self.ev(left, "w" if op == "=" else "rw")
        return value

    def cast(self, typ: str, v):
        if isinstance(v, Ptr) and "*" in typ:
            return v.retyped(self.types.size(typ))
        if isinstance(v, Val) and not self._is_int_type(typ.replace("*", "")):
            return Val(data=v.data, src=v.src)
        return v

    def _note_quotient(self, name: str, value_node) -> None:
        """``q = i / d``: remembered, so that ``i - q * d`` is known to be ``i % d``."""
        v = _strip_parens(value_node)
        if v is not None and v.type == "binary_expression" and self.t(v.child_by_field_name("operator")) == "/":
            left, right = _strip_parens(v.child_by_field_name("left")), _strip_parens(v.child_by_field_name("right"))
            if left is not None and right is not None and left.type == "identifier":
                self.quotients[name] = (self.t(left), self.t(right))
                return
        self.quotients.pop(name, None)

    def _remainder(self, n) -> Val | None:
        """``i - q * d`` with ``q = i / d``: the remainder, in [0, d)."""
        left, right = _strip_parens(n.child_by_field_name("left")), _strip_parens(n.child_by_field_name("right"))
        if left is None or right is None or left.type != "identifier" or right.type != "binary_expression" \
                or self.t(right.child_by_field_name("operator")) != "*":
            return None
        a, b = (self.t(x) for x in (right.child_by_field_name("left"), right.child_by_field_name("right")))
        for q, d in ((a, b), (b, a)):
            if self.quotients.get(q) == (self.t(left), d):
                dv = self.ev_quiet(right.child_by_field_name("right" if q == a else "left"))
                if isinstance(dv, Val) and dv.is_exact:
                    return Val(Poly.const(0), dv.hi - 1)
        return None

    def binary(self, n):
        op = self.t(n.child_by_field_name("operator"))
        if op == "-":
            rem = self._remainder(n)
            if rem is not None:
                return rem
        a = self.ev(n.child_by_field_name("left"))
        b = self.ev(n.child_by_field_name("right"))
        if op in ("+", "-"):
            if isinstance(a, Ptr) and isinstance(b, Val):
                return a.shifted(b if op == "+" else neg(b), self.samples)
            if isinstance(b, Ptr) and isinstance(a, Val) and op == "+":
                return b.shifted(a, self.samples)
        if not isinstance(a, Val) or not isinstance(b, Val):
            return Val(data=_data(a) or _data(b))
        if op == "+":
            return add(a, b)
        if op == "-":
            return sub(a, b)
        if op == "*":
            return mul(a, b, self.samples)
        if op == "/":
            return self.divide(a, b)
        if op == "%":
            if b.is_exact:
                hi = b.hi - 1
                if a.hi is not None and a.hi.is_const and self._smaller(a.hi, hi) and a.lo is not None and \
                        all(a.lo.evaluate(s) >= 0 for s in self.samples):
                    hi = a.hi
                return Val(Poly.const(0), hi, a.data or b.data, a.src or b.src)
            return Val(data=a.data or b.data, src=a.src or b.src)
        if op in ("<<", ">>") and b.is_exact and b.lo.is_const:
            k = Val.const(2 ** int(b.lo.const_value))
            return mul(a, k, self.samples) if op == "<<" else self.divide(a, k)
        if op == "&" and b.is_exact and b.lo.is_const and b.lo.const_value >= 0:
            return Val(Poly.const(0), b.lo, a.data)
        return Val(data=a.data or b.data, src=a.src or b.src)

    def divide(self, a: Val, b: Val) -> Val:
        if not b.is_exact or not a.known:
            return Val(data=a.data or b.data, src=a.src or b.src)
        d = b.lo
        if d.is_const and d.const_value <= 0:
            return Val(data=a.data or b.data, src=a.src or b.src)
        if d.is_const and a.is_exact:
            self._divisibility(a.lo, int(d.const_value))
        if a.is_exact and (d.is_const or a.lo.div_mono(d) is not None):
            q = a.lo.div_mono(d)
            if q is not None:
                return Val.exact(q) if not (a.data or b.data) else Val(q, q, True)
        hi, _ = floordiv_bound(a.hi, d)
        lo = Poly.const(0) if a.lo is not None and all(a.lo.evaluate(s) >= 0 for s in self.samples) else None
        if hi is None:
            return Val(lo, None, a.data or b.data, a.src or b.src)
        return Val(lo, hi, a.data or b.data, a.src or b.src)

    def _divisibility(self, p: Poly, k: int) -> None:
        """``p / k`` of a size: the kernel expects the size to be a multiple of ``k``."""
        if k <= 1 or len(p.terms) != 1:
            return
        (mono, coef), = p.terms
        if len(mono) != 1 or mono[0][1] != 1 or coef.denominator != 1:
            return
        name = mono[0][0]
        if name.startswith("@"):
            return
        need = k // gcd(k, int(coef))
        if need > 1:
            old = self.facts.divisible.get(name, 1)
            self.facts.divisible[name] = old * need // gcd(old, need)


class _Ceil:
    """ceil(num / k) blocks."""

    def __init__(self, num: Poly, k: int):
        self.num, self.k = num, k

    def poly_bound(self) -> Poly:
        return self.num.scale(Fraction(1, self.k)) if self.k != 1 else self.num

    def to_expr(self, order: list[str]) -> str:
        """``ceil(num / k)`` in the spec language. ``num`` may be rational (a thread's largest token
        ``(128 * G - 1) / 32`` bounds its floor by ``4 * G - 1 / 32``): printed as ``(32 * n - 31) // 32``
        it was floored before the ceiling, and a warp-per-token kernel's grid ``ceil_div((32 * n - 31) //
        32, 4)`` left its last token unlaunched when n % 4 == 1. With an integral body, ``k * G >= body + c``
        holds exactly when ``k * G >= body + ceil(c)`` (a rational body, ``(n) // 4`` of a kernel taking 4
        elements a thread, comes with a multiple_of constraint that makes it exact, and stays)."""
        num, k = self.num, self.k
        body, c = num.split_const()
        if body.integral() and c.denominator != 1:
            num = body + Poly.const(math.ceil(c))
        if k == 1:
            return num.to_expr(order)
        return f"ceil_div({num.to_expr(order)}, {k})"


def _has_grid(p: Poly | None) -> bool:
    return p is not None and any(s.startswith("@") for s in p.symbols())


def _strip_parens(n):
    while n is not None and n.type in ("parenthesized_expression", "condition_clause"):
        kids = n.named_children
        n = kids[-1] if kids else None
    return n


def _unwrap_cond(n):
    return _strip_parens(n)


def _exits(n) -> bool:
    """A statement that always leaves the block: return, continue or break (possibly in braces)."""
    if n is None:
        return False
    if n.type in ("return_statement", "continue_statement", "break_statement"):
        return True
    if n.type == "compound_statement" and n.named_children:
        return _exits(n.named_children[-1])
    return False
