import pytest

from kerntune.spec import expr


def test_arithmetic_and_functions():
    env = {"n": 1000, "d": 4096, "B": 256}
    assert expr.evaluate("ceil_div(n, B)", env) == 4
    assert expr.evaluate("n * 2 + d // 8 - 1", env) == 2511
    assert expr.evaluate("min(n, d) if n < d else max(n, d)", env) == 1000
    assert expr.evaluate("d % 8 == 0 and is_pow2(B)", env) is True
    assert expr.evaluate("B in (128, 256)", env) is True
    assert expr.evaluate("R == 'shuffle'", {"R": "shuffle"}) is True
    assert expr.evaluate_int("round_up(n, 128)", env) == 1024
    assert expr.evaluate_int(7, env) == 7


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",
    "n.__class__",
    "[x for x in (1, 2)]",
    "lambda: 1",
    "b'abc'",
    "None",
    "n[0]",
    "open('f')",
])
def test_disallowed_constructs(text):
    with pytest.raises(expr.ExprError):
        expr.evaluate(text, {"n": 1})


def test_errors_name_the_problem():
    with pytest.raises(expr.ExprError, match="unknown name 'm'.*known names: n"):
        expr.evaluate("m + 1", {"n": 1})
    with pytest.raises(expr.ExprError, match="expected an integer"):
        expr.evaluate_int("n / 3", {"n": 4})
    with pytest.raises(expr.ExprError, match="cannot evaluate"):
        expr.evaluate("n // 0", {"n": 4})
    with pytest.raises(expr.ExprError, match="too large"):
        expr.evaluate("2 ** 1000", {})


def test_names():
    assert expr.names("ceil_div(n, B) * rows") == {"n", "B", "rows"}
