"""A small, safe expression language for sizes, launch dimensions and
parameter restrictions.

Expressions are parsed with Python's ``ast`` and evaluated by walking a
whitelist of node types; nothing is ever passed to ``eval``. Allowed: integer,
float and string literals, names bound in the environment, ``+ - * / // % **``,
comparisons, ``and``/``or``/``not``, ``x if c else y``, tuples/lists for ``in``,
and the functions in :data:`FUNCTIONS`.
"""

from __future__ import annotations

import ast
import math
import operator
from functools import lru_cache
from typing import Any, Mapping


class ExprError(ValueError):
    """An expression that does not parse or cannot be evaluated."""


def _ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * int(b)


def _next_pow2(a: int) -> int:
    a = int(a)
    return 1 if a <= 1 else 1 << (a - 1).bit_length()


def _is_pow2(a: int) -> bool:
    a = int(a)
    return a > 0 and (a & (a - 1)) == 0


FUNCTIONS: dict[str, Any] = {
    # its argument: a rule's parameter in a launch (ceil_div(cols, BLOCK * fixed(VW))) whose baked
    # code spells the value only in names, so that a later round's launch-config, which rewrites
    # every number equal to the block size into its parameter, leaves the baked number alone
    # (ceil_div(cols, 16 * fixed(16)); see launch.substitute_constant)
    "fixed": lambda a: a,
    "ceil_div": _ceil_div,
    "cdiv": _ceil_div,
    "round_up": _round_up,
    "next_pow2": _next_pow2,
    "is_pow2": _is_pow2,
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "log2": lambda a: math.log2(a),
    "sqrt": lambda a: math.sqrt(a),
}

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_MAX_LEN = 500
_MAX_POW = 64


@lru_cache(maxsize=4096)
def parse(text: str) -> ast.Expression:
    if len(text) > _MAX_LEN:
        raise ExprError(f"expression is longer than {_MAX_LEN} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"cannot parse {text!r}: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ExprError(f"{type(node).__name__} is not allowed in {text!r}")
        if isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords
        ):
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ExprError(
                f"unknown function {name!r} in {text!r}; allowed: {', '.join(sorted(FUNCTIONS))}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str)):
            raise ExprError(f"only numbers and strings may appear as literals in {text!r}")
    return tree


_ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List,
    *_BINOPS, *_CMPOPS, *_UNARY, ast.And, ast.Or,
)


def names(text: str) -> set[str]:
    """The free variable names an expression refers to (functions excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def evaluate(text: str | int | float, env: Mapping[str, Any]) -> Any:
    """Evaluate an expression (or pass a number through) in ``env``."""
    if isinstance(text, bool):
        return text
    if isinstance(text, (int, float)):
        return text
    tree = parse(str(text))
    try:
        return _eval(tree.body, env, str(text))
    except ExprError:
        raise
    except (ZeroDivisionError, OverflowError, TypeError, ValueError) as e:
        raise ExprError(f"cannot evaluate {text!r}: {e}") from None


def evaluate_int(text: str | int, env: Mapping[str, Any], what: str = "value") -> int:
    value = evaluate(text, env)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExprError(f"{what} {text!r} gave {value!r}, expected an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{what} {text!r} gave {value}, expected an integer")
        value = int(value)
    return value


def _eval(node: ast.AST, env: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExprError(f"unknown name {node.id!r} in {text!r}; known names: {known}")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, text), _eval(node.right, env, text)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POW:
            raise ExprError(f"exponent {right} too large in {text!r}")
        if isinstance(node.op, ast.LShift) and right > _MAX_POW:
            raise ExprError(f"shift {right} too large in {text!r}")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env, text))
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result = True
            for v in node.values:
                result = _eval(v, env, text)
                if not result:
                    return result
            return result
        result = False
        for v in node.values:
            result = _eval(v, env, text)
            if result:
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, text)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, text)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, env, text) else node.orelse, env, text)
    if isinstance(node, ast.Call):
        args = [_eval(a, env, text) for a in node.args]
        return FUNCTIONS[node.func.id](*args)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, env, text) for e in node.elts)
    raise ExprError(f"{type(node).__name__} is not allowed in {text!r}")  # unreachable after parse()
