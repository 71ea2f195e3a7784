"""Abstract values of ``kerntune init``'s analysis: integer intervals whose
bounds are polynomials of the kernel's sizes, and pointers into an array
argument at an interval of element offsets."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from kerntune.source.poly import Poly


@dataclass(frozen=True)
class Val:
    """An integer in [lo, hi] (inclusive; None: unknown). ``data``: derived from values loaded
    from memory (so a condition on it is data-dependent)."""

    lo: Poly | None = None
    hi: Poly | None = None
    data: bool = False
    src: str | None = None       # the array the loaded value came from
    # the value takes every step-th integer from lo to hi (over the threads and iterations) and no other;
    # None: unknown. Step 1 is a dense range: a write at such an index stores every element of its span
    step: Poly | None = None
    # what the value varies with (thread and block indices, loop variables): a sum is dense only of values
    # that vary independently (i + i, with i dense, takes the even values alone)
    atoms: frozenset[str] = frozenset()

    @property
    def dense(self) -> bool:
        return self.is_exact or (self.known and self.step == Poly.const(1))

    @staticmethod
    def exact(p: Poly) -> "Val":
        return Val(p, p)

    @staticmethod
    def const(c: int) -> "Val":
        return Val.exact(Poly.const(c))

    @property
    def known(self) -> bool:
        return self.lo is not None and self.hi is not None

    @property
    def is_exact(self) -> bool:
        return self.known and self.lo == self.hi

    def tainted(self) -> "Val":
        return replace(self, data=True)


UNKNOWN = Val()
DATA = Val(data=True)


def index_range(count: Poly, *atoms: str) -> Val:
    """0 .. count - 1 with every value taken: a thread's or a block's index (``atoms``: what it varies with,
    "tid.x", "bid.x")."""
    return Val(Poly.const(0), count - 1, step=Poly.const(1), atoms=frozenset(atoms))


def _opt(f, a, b):
    return None if a is None or b is None else f(a, b)


def src(a: Val, b: Val | None = None) -> str | None:
    return a.src or (b.src if b is not None else None)


def add(a: Val, b: Val) -> Val:
    return Val(_opt(lambda x, y: x + y, a.lo, b.lo), _opt(lambda x, y: x + y, a.hi, b.hi), a.data or b.data,
               src(a, b), _step_of_sum(a, b), a.atoms | b.atoms)


def _step_of_sum(a: Val, b: Val) -> Poly | None:
    """The step of a + b: a constant shift keeps the other's; dense plus dense is dense, and so is
    rows of ``S`` (step S) plus a dense column index spanning exactly S (``row * k + j``, j < k)."""
    if not (a.known and b.known):
        return None
    for x, y in ((a, b), (b, a)):
        if x.is_exact:
            return y.step if not y.is_exact else Poly.const(1)
    one = Poly.const(1)
    if not a.atoms or not b.atoms or a.atoms & b.atoms:
        return None
    if a.dense and b.dense:
        return one
    for x, y in ((a, b), (b, a)):
        if y.dense and x.step is not None and x.step == y.hi - y.lo + 1:
            return one
    return None


def sub(a: Val, b: Val) -> Val:
    return Val(_opt(lambda x, y: x - y, a.lo, b.hi), _opt(lambda x, y: x - y, a.hi, b.lo), a.data or b.data,
               src(a, b), _step_of_sum(a, b) if b.is_exact or (a.dense and b.dense) else None, a.atoms | b.atoms)


def nonneg(v: Val, samples: list[dict[str, int]]) -> bool:
    return v.lo is not None and all(v.lo.evaluate(s) >= 0 for s in samples)


def mul(a: Val, b: Val, samples: list[dict[str, int]]) -> Val:
    """Product of intervals, exact when both are non-negative (indices and sizes are)."""
    data = a.data or b.data
    if a.is_exact and b.is_exact:
        return Val(a.lo * b.lo, a.lo * b.lo, data, src(a, b))
    if nonneg(a, samples) and nonneg(b, samples) and a.known and b.known:
        # a constant factor c times a value of step s: step c * s (row * k: every k-th element)
        step = next((x.lo * y.step for x, y in ((a, b), (b, a)) if x.is_exact and y.step is not None), None)
        return Val(a.lo * b.lo, a.hi * b.hi, data, src(a, b), step, a.atoms | b.atoms)
    return Val(data=data, src=src(a, b))


def neg(a: Val) -> Val:
    return Val(_opt(lambda x, _: -x, a.hi, 0), _opt(lambda x, _: -x, a.lo, 0), a.data, a.src)


def floordiv_bound(p: Poly, d: Poly) -> tuple[Poly, bool]:
    """An upper bound of floor(p / d) for d >= 1, and whether it is exact. A constant divisor
    gives the rational p / d: expressions print it as ``(...) // d``, the floor itself."""
    if d.is_const:
        return p.scale(Fraction(1) / d.const_value), True
    body, c = p.split_const()
    q = body.div_mono(d)
    if q is not None and (d.is_const or q.integral()):
        if c == 0:
            return q, True
        if d.is_const:
            dv = d.const_value
            return q + Poly.const(Fraction(c // dv) if (c / dv).denominator != 1 else c / dv), True
        if c < 0:
            return q - 1, c == -1
        return q + Poly.const(c), False
    whole = p.div_mono(d)
    if whole is not None:
        return whole, False
    return None, False


def union(a: Val, b: Val, samples: list[dict[str, int]]) -> Val:
    def pick(x: Poly | None, y: Poly | None, larger: bool) -> Poly | None:
        if x is None or y is None:
            return None
        if x == y:
            return x
        sx = [x.evaluate(s) for s in samples]
        sy = [y.evaluate(s) for s in samples]
        if all(u >= v for u, v in zip(sx, sy)):
            return x if larger else y
        if all(u <= v for u, v in zip(sx, sy)):
            return y if larger else x
        return None

    return Val(pick(a.lo, b.lo, False), pick(a.hi, b.hi, True), a.data or b.data, src(a, b))


@dataclass(frozen=True)
class Ptr:
    """A pointer into array ``root`` (a kernel parameter, or ``@shared`` for dynamic shared
    memory) at element offsets ``off`` (in the root's elements), pointing at items of
    ``item`` bytes; ``root_item`` is the root's element size."""

    root: str
    off: Val
    item: int | None
    root_item: int | None

    @property
    def ratio(self) -> Fraction | None:
        if self.item is None or not self.root_item:
            return None
        return Fraction(self.item, self.root_item)

    def shifted(self, by: Val, samples: list[dict[str, int]]) -> "Ptr":
        r = self.ratio
        if r is None:
            return replace(self, off=Val(data=self.off.data or by.data, src=self.off.src or by.src))
        scaled = Val(by.lo.scale(r) if by.lo is not None else None, by.hi.scale(r) if by.hi is not None else None,
                     by.data, by.src, by.step.scale(r) if by.step is not None else None, by.atoms)
        return replace(self, off=add(self.off, scaled))

    def retyped(self, item: int | None) -> "Ptr":
        return replace(self, item=item)


@dataclass
class Access:
    root: str
    lo: Poly | None          # first element touched (root elements); None: unknown
    hi: Poly | None          # last element touched
    read: bool
    write: bool
    atomic: bool = False
    partial: bool = False    # under a data-dependent condition
    why: str = ""            # when the extent is unknown: the reason
    reread: bool = False     # a read of elements the kernel wrote before (not counted as a read)


@dataclass
class Facts:
    """What the analysis learned about a kernel."""

    accesses: list[Access] = field(default_factory=list)
    divisible: dict[str, int] = field(default_factory=dict)    # size -> it must be a multiple of this
    coverage: dict[str, list[Poly]] = field(default_factory=dict)   # grid axis -> counts of blocks needed
    grid_vars: dict[str, str] = field(default_factory=dict)    # grid axis -> the variable set to blockIdx.<axis>
    index_sources: dict[str, str] = field(default_factory=dict)  # array indexed by loaded values -> their array
    used_params: set[str] = field(default_factory=set)
    grid_axes: set[str] = field(default_factory=set)           # axes whose block index or grid size is read
    notes: list[str] = field(default_factory=list)
