"""Polynomials over named sizes with rational coefficients: the symbolic values
``kerntune init`` computes for index bounds, array extents and grid sizes.

A symbol is a kernel's integer parameter (``num_tokens``) or a placeholder
for a launch dimension (``@grid_x``). Rational coefficients stand for exact
divisions by constants the analysis has recorded as divisibility
requirements (``head_size / 8`` with ``head_size`` a multiple of 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import lcm
from typing import Iterable

Mono = tuple[tuple[str, int], ...]      # sorted (symbol, power) pairs; () is the constant term


def _mul_mono(a: Mono, b: Mono) -> Mono:
    d = dict(a)
    for s, p in b:
        d[s] = d.get(s, 0) + p
    return tuple(sorted(d.items()))


@dataclass(frozen=True)
class Poly:
    terms: tuple[tuple[Mono, Fraction], ...] = ()

    # --- construction ------------------------------------------------------------------
    @staticmethod
    def of(d: dict[Mono, Fraction]) -> "Poly":
        return Poly(tuple(sorted((m, Fraction(c)) for m, c in d.items() if c != 0)))

    @staticmethod
    def const(c: int | Fraction) -> "Poly":
        return Poly.of({(): Fraction(c)})

    @staticmethod
    def sym(name: str) -> "Poly":
        return Poly.of({((name, 1),): Fraction(1)})

    def as_dict(self) -> dict[Mono, Fraction]:
        return dict(self.terms)

    # --- arithmetic ---------------------------------------------------------------------
    def __add__(self, o: "Poly | int") -> "Poly":
        o = _p(o)
        d = self.as_dict()
        for m, c in o.terms:
            d[m] = d.get(m, 0) + c
        return Poly.of(d)

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return Poly.of({m: -c for m, c in self.terms})

    def __sub__(self, o: "Poly | int") -> "Poly":
        return self + (-_p(o))

    def __rsub__(self, o: "Poly | int") -> "Poly":
        return _p(o) - self

    def __mul__(self, o: "Poly | int") -> "Poly":
        o = _p(o)
        d: dict[Mono, Fraction] = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = _mul_mono(m1, m2)
                d[m] = d.get(m, 0) + c1 * c2
        return Poly.of(d)

    __rmul__ = __mul__

    def scale(self, f: Fraction) -> "Poly":
        return Poly.of({m: c * f for m, c in self.terms})

    def div_mono(self, o: "Poly") -> "Poly | None":
        """``self / o`` when ``o`` is a single term dividing every term of ``self``; else None."""
        if len(o.terms) != 1:
            return None
        (om, oc), = o.terms
        out: dict[Mono, Fraction] = {}
        for m, c in self.terms:
            d = dict(m)
            for s, p in om:
                if d.get(s, 0) < p:
                    return None
                d[s] -= p
                if d[s] == 0:
                    del d[s]
            out[tuple(sorted(d.items()))] = c / oc
        return Poly.of(out)

    # --- inspection -----------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return all(m == () for m, _ in self.terms)

    @property
    def const_value(self) -> Fraction:
        return dict(self.terms).get((), Fraction(0))

    def symbols(self) -> set[str]:
        return {s for m, _ in self.terms for s, _ in m}

    def split_const(self) -> tuple["Poly", Fraction]:
        return Poly.of({m: c for m, c in self.terms if m != ()}), self.const_value

    def integral(self) -> bool:
        return all(c.denominator == 1 for _, c in self.terms)

    def substitute(self, name: str, value: "Poly") -> "Poly":
        out = Poly()
        for m, c in self.terms:
            term = Poly.const(c)
            for s, p in m:
                f = value if s == name else Poly.sym(s)
                for _ in range(p):
                    term = term * f
            out = out + term
        return out

    def evaluate(self, env: dict[str, int | Fraction]) -> Fraction:
        total = Fraction(0)
        for m, c in self.terms:
            v = Fraction(c)
            for s, p in m:
                v *= Fraction(env[s]) ** p
            total += v
        return total

    def linear_in(self, name: str) -> tuple["Poly", "Poly"] | None:
        """(a, b) with self == a * name + b and neither mentioning ``name``; None when not linear."""
        a, b = {}, {}
        for m, c in self.terms:
            d = dict(m)
            p = d.pop(name, 0)
            if p > 1:
                return None
            (a if p == 1 else b)[tuple(sorted(d.items()))] = c
        return Poly.of(a), Poly.of(b)

    # --- text ------------------------------------------------------------------------------
    def to_expr(self, order: list[str] | None = None) -> str:
        """An expression of kerntune's spec language (integer arithmetic; ``//`` for an exact division)."""
        if not self.terms:
            return "0"
        den = lcm(*(c.denominator for _, c in self.terms))
        rank = {s: i for i, s in enumerate(order or [])}

        def key(item):
            m, _ = item
            return (-sum(p for _, p in m), [rank.get(s, len(rank)) for s, _ in m], m)

        parts = []
        for m, c in sorted(self.terms, key=key):
            n = c * den
            factors = [s for s, p in sorted(m, key=lambda sp: rank.get(sp[0], len(rank))) for _ in range(p)]
            mag = abs(n)
            words = ([str(mag)] if mag != 1 or not factors else []) + factors
            parts.append(("-" if n < 0 else "+", " * ".join(words)))
        text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        for sign, t in parts[1:]:
            text += f" {sign} {t}"
        if den != 1:
            text = f"({text}) // {den}"
        return text

    def __str__(self) -> str:
        return self.to_expr()


def _p(v: "Poly | int | Fraction") -> Poly:
    return v if isinstance(v, Poly) else Poly.const(v)


def max_at(polys: Iterable[Poly], samples: list[dict[str, int]]) -> Poly:
    """The polynomial that is largest at the sample points (ties: the first)."""
    best = None
    for p in polys:
        if best is None or sum(p.evaluate(s) for s in samples) > sum(best.evaluate(s) for s in samples):
            best = p
    return best if best is not None else Poly()
