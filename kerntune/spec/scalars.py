"""Other values for a spec's scalar arguments.

A spec gives each scalar argument one value (``alpha: 0.75``), so a kernel that writes those numbers
into its code and ignores its arguments matches the original on every shape and input distribution.
:func:`moved_scalars` makes the spec with its nonzero float scalars given as numbers moved by a factor
drawn from a seed (so a kernel cannot tell the checked values in advance); a candidate is verified
against the original kernel under it too (``kerntune.engine.evaluate``). Scalars given as expressions
of sizes, integers (counts, strides, flags) and zeros keep their values.
"""

from __future__ import annotations

import random
from typing import Optional

from kerntune.spec.model import KernelSpec


def _movable(arg) -> bool:
    return (not arg.is_array and arg.dt.is_float and isinstance(arg.value, (int, float))
            and not isinstance(arg.value, bool) and float(arg.value) != 0.0)


def moved_scalars(spec: KernelSpec, seed: int) -> Optional[KernelSpec]:
    """``spec`` with each movable scalar times one factor in [0.5, 0.95) drawn from ``seed`` (down, not up:
    a bucket width, a clamp's bounds or a decay rate stay where the original handles them), or None when
    it has no such scalar."""
    if not any(_movable(a) for a in spec.args):
        return None
    factor = 0.5 + 0.45 * random.Random(seed ^ 0x5CA1A5).random()
    args = [a.model_copy(update={"value": float(a.value) * factor}) if _movable(a) else a for a in spec.args]
    return spec.model_copy(update={"args": args})


def scalar_summary(spec: KernelSpec, moved: KernelSpec) -> str:
    """The moved scalars as ``alpha=0.61, beta=-1.02``."""
    return ", ".join(f"{b.name}={float(b.value):.4g}" for a, b in zip(spec.args, moved.args) if a.value != b.value)


__all__ = ["moved_scalars", "scalar_summary"]
