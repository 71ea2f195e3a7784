"""Numbers for people: times, sizes, percentages and speedups, one way everywhere
(terminal tables and reports alike)."""

from __future__ import annotations

import shlex
from typing import Optional


def shell(*parts: object) -> str:
    """Paths (or other words) as they must be typed in a shell command: quoted where a space, a quote or
    another special character would split or change them, unchanged otherwise."""
    return " ".join(shlex.quote(str(p)) for p in parts)


def ms(v: Optional[float]) -> str:
    """A time given in milliseconds."""
    if v is None:
        return "-"
    if v < 1e-3:
        return f"{v * 1e6:.0f} ns"
    if v < 1:
        return f"{v * 1e3:.2f} µs" if v < 0.1 else f"{v * 1e3:.1f} µs"
    return f"{v:.3g} ms" if v < 1000 else f"{v / 1e3:.3g} s"


def nbytes(n: Optional[float]) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def pct(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.0f}%"


def times(v: Optional[float], digits: int = 2) -> str:
    """A speedup: 1.23x."""
    return "-" if v is None else f"{v:.{digits}f}x"


def interval(iv, digits: int = 2) -> str:
    """A speedup with its confidence interval: 1.23x [1.19, 1.27]; the original itself: 1.00x (=)."""
    if iv is None:
        return "-"
    if iv.method == "identical":
        return f"{1:.{digits}f}x (=)"
    hi = "inf" if iv.hi == float("inf") else f"{iv.hi:.{digits}f}"
    return f"{iv.ratio:.{digits}f}x [{iv.lo:.{digits}f}, {hi}]"
