"""Input distributions: every shape is verified on several kinds of inputs, so a
kernel that is only right on the default range (a sign bug, an overflow, a
flush to zero, a reduction that starts in the wrong place) is caught.

For a floating-point array with no ``range`` in the spec (the default
[-1, 1)), each distribution draws uniformly from:

=========  ===========================  ======================================
name       range                        catches
=========  ===========================  ======================================
spec       [-1, 1)                      (the spec's own inputs)
shifted    [1, 3)                       sums that only cancel around zero
negative   [-2, -1)                     sign and max/min bugs, abs() slips
large      [-L, L)                      overflow, lost precision (L: 1e4 for
                                        fp32, 1e6 for fp64, 256 for fp16/bf16)
small      [-S, S)                      flush to zero, absolute-error slack
                                        (S: 1e-3, or 1/64 for fp16/bf16)
wide       [-1, 1) times 2^e, e drawn   clamps and overflows above ``large``,
           per element from -E..E       values of very different sizes in one
           (E: 40 for fp32 and bf16,    sum (E: 2^40 is about 1.1e12, so a
           100 for fp64, 8 for fp16)    product of three inputs stays finite)
ties       8 values, -7/8 .. 7/8 in     tie-breaking (argmax/argmin taking the
           steps of 1/4, each about     last index, a max-with-index or a
           1/8 of the elements          sort that is not stable, > for >=)
special    spec + 1/16 of the elements  NaN/Inf handling (opt-in:
           set to 0, -0, +-inf, NaN,    ``special_values: true``)
           subnormals, the largest
           finite value
=========  ===========================  ======================================

An array with a ``range`` in the spec stays inside it (the range states what
inputs are valid): ``negative`` draws from its lowest quarter, ``shifted``
from its highest quarter, ``small`` from a band of 1% of its width around the
middle, ``large`` and ``wide`` from the whole range, ``ties`` from the midpoints of its
eighths. Integer arrays (indices, counts) are
drawn from the spec's range in every distribution. Arrays made by the spec's
``inputs`` function are what it returns; it may take a ``distribution``
argument to vary them itself.

A spec narrows the set with ``distributions: [spec, negative]``.

The absolute part of each tolerance (``atol``) scales with the outputs: when
an output's root mean square is 1e4 times what it is on the spec's own inputs
(a sum of ``large`` inputs), ``atol`` is 1e4 times larger, since rounding
errors (and their cancellation near zero) grow with the values; for a product
of two inputs that is 1e8, for a normalization 1. The relative parts
(``rtol``, ``rel_l2``) stay as they are.
"""

from __future__ import annotations

import numpy as np

SPEC = "spec"
SPECIAL = "special"
TIES = "ties"
TIE_LEVELS = 8
WIDE = "wide"
DEFAULT = ("spec", "shifted", "negative", "large", "small", TIES, WIDE)
NAMES = DEFAULT + (SPECIAL,)
DEFAULT_FLOAT_RANGE = (-1.0, 1.0)

_LARGE = {8: 1e6, 4: 1e4, 2: 256.0}
_SMALL = {8: 1e-3, 4: 1e-3, 2: 1.0 / 64}
_WIDE_EXPONENT = {"fp64": 100, "fp32": 40, "bf16": 40, "fp16": 8}   # bf16 has fp32's exponent range


def float_range(itemsize: int, spec_range: tuple[float, float] | None, name: str) -> tuple[float, float]:
    """The interval a float array is drawn from under distribution ``name``."""
    if spec_range is not None:
        lo, hi = spec_range
        w = hi - lo
        mid = (lo + hi) / 2
        return {"negative": (lo, lo + w / 4), "shifted": (hi - w / 4, hi),
                "small": (mid - w / 200, mid + w / 200)}.get(name, (lo, hi))
    if name == "shifted":
        return (1.0, 3.0)
    if name == "negative":
        return (-2.0, -1.0)
    if name == "large":
        big = _LARGE.get(itemsize, 1e4)
        return (-big, big)
    if name == "small":
        tiny = _SMALL.get(itemsize, 1e-3)
        return (-tiny, tiny)
    return DEFAULT_FLOAT_RANGE


def wide_values(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Uniform [-1, 1) values each scaled by a power of two drawn per element from 2^-E .. 2^E (exact
    in every float type): about a third of the elements are beyond ``large``'s bound, so a kernel
    that is right only below some magnitude (a clamp, an overflow at 2^31) is found whatever the
    magnitude, up to 2^E."""
    e = _WIDE_EXPONENT.get(dtype, 40)
    return rng.uniform(-1.0, 1.0, size=shape) * np.exp2(rng.integers(-e, e + 1, size=shape))


def tied_values(lo: float, hi: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values of [lo, hi) that repeat: the midpoints of its ``TIE_LEVELS`` equal parts, each drawn for
    about 1/TIE_LEVELS of the elements (never 0 in a range symmetric around it; in the default
    [-1, 1), multiples of 1/8, exact in every float type)."""
    k = rng.integers(0, TIE_LEVELS, size=shape)
    return lo + (hi - lo) * (k + 0.5) / TIE_LEVELS


def special_values(storage: np.dtype) -> np.ndarray:
    """The special values of a float type, as float64 (encoded by the caller)."""
    fi = np.finfo(np.float32 if storage.itemsize == 2 else storage)
    sub = float(fi.smallest_subnormal) if storage.itemsize >= 4 else 2.0**-140
    big = float(fi.max) if storage.itemsize >= 4 else (65504.0 if storage.kind == "f" else 3.0e38)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, sub, -sub, big, -big], dtype=np.float64)


def sprinkle_special(values: np.ndarray, storage: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Replace about 1/16 of the elements with special values."""
    out = np.array(values, dtype=np.float64, copy=True)
    flat = out.reshape(-1)
    if flat.size == 0:
        return out
    pick = rng.random(flat.size) < 1.0 / 16
    specials = special_values(storage)
    flat[pick] = specials[rng.integers(0, specials.size, size=int(pick.sum()))]
    return out


__all__ = ["DEFAULT", "NAMES", "SPEC", "SPECIAL", "TIES", "WIDE", "float_range", "special_values",
           "sprinkle_special", "tied_values", "wide_values"]
