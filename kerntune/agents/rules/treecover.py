"""Whether a shared-memory tree loop reduces the whole block into element 0.

shuffle-reduction replaces a loop of tree steps (``if (guard) a[t] op= a[t + s]; barrier``) with a
reduction of the block's ``a[0 .. block)`` into ``a[0]``. That is the same only when the loop is the
whole tree: a loop that stops early (``s > 32``, leaving 64 partials for a tail the kernel adds up
itself), starts late (a first step unrolled by hand before it) or starts past the block (two values
per thread, ``s = 256`` for 256 threads) is another computation, and the rewrite would give a wrong
result.

The loop is run here, symbolically in nothing but the block size: its start, condition and update
evaluated for each block size the template may launch, the ``s`` it visits compared with the
halving tree's ``B/2, B/4, ..., 1`` under ``t < s``, or the doubling tree's ``1, 2, ..., B/2`` under
``t % (2s) == 0``, the guard evaluated for the first 130 threads and the last of each half. Any spelling of those loops
(``s >>= 1`` or ``s /= 2``, ``get_local_size(0) / 2``, a macro or a local constant for the half
block) passes; anything the evaluator cannot read declines.
"""

from __future__ import annotations

import operator
import re

from kerntune.agents.rules.base import RewriteState, int_literal, unwrap

_COMPARE = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}
_MAX_TRIPS = 64


class _Unknown(Exception):
    pass


def _binary(op: str, a: int, b: int) -> int:
    """C's integer operators (division truncating toward zero), comparisons and && ||."""
    from kerntune.agents.rules.block_ties import _apply

    if op in _COMPARE:
        return int(_COMPARE[op](a, b))
    if op in ("&&", "||"):
        return int(bool(a) and bool(b)) if op == "&&" else int(bool(a) or bool(b))
    v = _apply(op, a, b)
    if v is None:
        raise _Unknown
    return v


def _lookup(key: str):
    def get(env: dict) -> int:
        if key not in env:
            raise _Unknown
        return env[key]
    return get


class _Evaluator:
    """Integer values of expressions in ``fn`` with the loop variable, the thread index and the block
    size bound; names resolve to local constants and macros of the file."""

    def __init__(self, st: RewriteState, fn, var: str, is_thread, is_block):
        self.st, self.fn, self.var = st, fn, var
        self.is_thread, self.is_block = is_thread, is_block
        self._compiled: dict = {}

    def value(self, node, env: dict, depth: int = 0) -> int:
        return self.compile(node, depth)(env)

    def compile(self, node, depth: int = 0):
        """A function of the environment (B, s, t) computing ``node``: names are resolved once here,
        so a guard evaluated for every thread and step costs a few Python calls each time."""
        st = self.st
        node = unwrap(node)
        if node is None or depth > 20:
            raise _Unknown
        if node.id in self._compiled:
            return self._compiled[node.id]
        if node.type == "identifier" and st.text(node) == self.var:
            f = _lookup("s")
        elif self.is_block(node):
            f = _lookup("B")
        elif self.is_thread(node):
            f = _lookup("t")
        elif node.type == "number_literal":
            v = int_literal(st, node)
            if v is None:
                raise _Unknown
            f = lambda env, v=v: v  # noqa: E731
        elif node.type == "cast_expression":
            f = self.compile(node.child_by_field_name("value"), depth + 1)
        elif node.type == "unary_expression":
            op, g = st.text(node.child_by_field_name("operator")), self.compile(node.child_by_field_name("argument"),
                                                                                depth + 1)
            if op == "-":
                f = lambda env, g=g: -g(env)  # noqa: E731
            elif op == "!":
                f = lambda env, g=g: int(not g(env))  # noqa: E731
            else:
                raise _Unknown
        elif node.type == "binary_expression":
            op = st.text(node.child_by_field_name("operator"))
            a = self.compile(node.child_by_field_name("left"), depth + 1)
            b = self.compile(node.child_by_field_name("right"), depth + 1)
            f = lambda env, op=op, a=a, b=b: _binary(op, a(env), b(env))  # noqa: E731
        elif node.type == "identifier":
            f = self._named(st.text(node), depth)
        else:
            raise _Unknown
        self._compiled[node.id] = f
        return f

    def _named(self, name: str, depth: int):
        from kerntune.agents.rules.base import decl_value

        if depth > 20:
            raise _Unknown
        value = decl_value(self.st, self.fn, name)
        if value is not None:
            return self.compile(value, depth + 1)
        text = self.st.macro_value(name)
        if text is None:
            raise _Unknown
        if text == "KT_BLOCK":
            return _lookup("B")
        return lambda env: self.text_value(text, env, depth + 1)

    def text_value(self, text: str, env: dict, depth: int) -> int:
        """A macro's text, read by launch-config's own evaluator (integers, + - * / % << >> & | ^,
        parentheses, casts), the names in it resolved as local constants, macros or the block size."""
        from kerntune.agents.rules.block_ties import _eval_text

        known = {"KT_BLOCK": (env["B"], False)}
        for name in set(re.findall(r"\b[A-Za-z_]\w*", text)) - {"KT_BLOCK"}:
            try:
                known[name] = (self._named(name, depth + 1)(env), False)
            except (_Unknown, KeyError):
                pass
        v, _ = _eval_text(text, known)
        if v is None:
            raise _Unknown
        return v


def _update(ev: _Evaluator, node, env: dict) -> int:
    st = ev.st
    node = unwrap(node)
    if node is None:
        raise _Unknown
    if node.type == "assignment_expression" and st.text(unwrap(node.child_by_field_name("left"))) == ev.var:
        op = st.text(node.child_by_field_name("operator"))
        right = ev.value(node.child_by_field_name("right"), env)
        return right if op == "=" else _binary(op[:-1], env["s"], right)
    if node.type == "update_expression" and st.text(unwrap(node.child_by_field_name("argument"))) == ev.var:
        return env["s"] + (1 if "++" in st.text(node) else -1)
    raise _Unknown


def covers_block(st: RewriteState, fn, start, condition, update, guard, var: str, blocks, is_thread,
                 is_block) -> str:
    """'' when the loop ``for (var = start; condition; update) { if (guard) a[t] op= a[t + var]; barrier }``
    reduces ``a[0 .. B)`` into ``a[0]`` for every block size ``B`` in ``blocks``, else why not."""
    ev = _Evaluator(st, fn, var, is_thread, is_block)
    for B in blocks:
        try:
            s = ev.value(start, {"B": B})
            seen = []
            while ev.value(condition, {"B": B, "s": s}):
                seen.append(s)
                if len(seen) > _MAX_TRIPS:
                    return "the tree loop does not end"
                s = _update(ev, update, {"B": B, "s": s})
        except (_Unknown, KeyError):
            return "cannot tell which steps the tree loop takes"
        halving = [B >> k for k in range(1, B.bit_length()) if B >> k]
        doubling = list(reversed(halving))
        if seen == halving and B & (B - 1) == 0:
            expect = lambda t, s: t < s  # noqa: E731
        elif seen == doubling and B & (B - 1) == 0:
            expect = lambda t, s: t % (2 * s) == 0  # noqa: E731
        else:
            return (f"the tree loop takes the steps {seen[:6]}{'...' if len(seen) > 6 else ''} at a block of {B}, "
                    f"not the whole tree ({halving[:3]}... or {doubling[:3]}...): it leaves partials to other code")
        try:
            threads = sorted(set(range(min(B, 130))) | {B // 2 - 1, B // 2, B - 1})
            test = ev.compile(guard)
            for s in seen:
                for t in threads:
                    if bool(test({"B": B, "s": s, "t": t})) != expect(t, s):
                        return f"the tree step's guard is not the whole tree's at a block of {B} (thread {t}, step {s})"
        except (_Unknown, KeyError):
            return "cannot evaluate the tree step's guard"
    return ""
