"""A systematic error: outputs scaled or shifted, the same way everywhere, against the NumPy reference.

Rounding in another order (another summation order, fp32 accumulation, fused multiply-adds) leaves
errors of either sign that cancel on average; a wrong epsilon, a constant rounded the wrong way, 1/n
computed as 1/(n+1), or a cheat that shrinks every output by 0.2% leaves an error of one sign. Such an
error can be within the tolerance, and within ``accuracy_ratio`` of the original's error (a bf16
fused_add_rmsnorm times 0.998: rel L2 2.6e-3 against 1.6e-3), yet thousands of elements measure it
with a standard error far smaller than itself.

The error d = got - truth is fitted twice (least squares over the elements finite on both sides):
as ``scale * truth`` and as a constant ``offset`` (one fit of both spreads each over the other where
the truth varies little about its mean: a cross_entropy loss, every element near log V). Both are in
units of a relative L2 error, and neither can exceed the error's own relative L2: ``scale`` as it is
(outputs times 1 + scale), ``offset`` over the root mean square of the truth. A run is biased when
either, in absolute value, exceeds the original kernel's by more than BIAS_FLOOR times the tolerance's
relative L2 bound (at least BIAS_ULPS ulps of fp32) AND by more than BIAS_Z of its standard error (the
two kernels' added in quadrature)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kerntune.dtypes import decode
from kerntune.engine.verify import CHUNK

# A tenth of the tolerance's relative L2 bound: bf16 (1e-2) refuses a scale of 0.998, not one of
# 0.9995; fp32 (1e-5) refuses 1 - 2e-6. The honest candidates of the rule catalog stayed under 0.06
# of the floor (docs/proof.md, "No systematic error the original does not make";
# bench/results/bias-cpu-2026-12-05.md).
BIAS_FLOOR = 0.1
# ... and never under this many units in the last place of the arithmetic (fp32's, fp64's for fp64
# outputs): a row normalized by a sum taken in another order has one rounding error on every element
# of the row, a systematic error of the row, not of the kernel. An honest softmax candidate (a spec
# tolerance of 1e-6, so a floor of 1e-7) had 8.2e-8 on a 999-element row, at 24 standard errors.
BIAS_ULPS = 8
# Standard errors: errors of random sign give |z| of 4 or more about once in 16,000 checks; errors
# correlated within a row (one rsqrt per row) make the real spread wider than the formula's, so the
# margin is wide. A 0.2% bf16 scale on 4096 elements is some 55 standard errors.
BIAS_Z = 8.0
# Fewer elements than this (finite on both sides) are not judged: the standard error is then itself
# too uncertain (a 4-element cosine_sim_rows output of an honest candidate had a scale error 7x the
# floor, one standard error; with 2 or 3 degrees of freedom, 8 of them is no rarity).
BIAS_MIN_ELEMENTS = 64


@dataclass(frozen=True)
class Bias:
    """A run's systematic error against the NumPy reference, with standard errors (all relative)."""

    scale: float
    scale_se: float
    offset: float
    offset_se: float


def measure(dt, got: np.ndarray, truth: np.ndarray, unwritten: np.ndarray | None = None) -> Bias | None:
    """The systematic error of ``got`` (storage dtype) against ``truth`` (values), or None with fewer
    than BIAS_MIN_ELEMENTS elements finite on both sides or a truth of zeros."""
    g_flat, t_flat = got.reshape(-1), np.asarray(truth).reshape(-1)
    keep = None if unwritten is None else ~unwritten.reshape(-1)

    def chunks():
        for s in range(0, g_flat.size, CHUNK):
            g = decode(dt, g_flat[s:s + CHUNK]).astype(np.float64)
            t = t_flat[s:s + CHUNK].astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                m = np.isfinite(g) & np.isfinite(t)
                if keep is not None:
                    m &= keep[s:s + CHUNK]
                yield t[m], g[m] - t[m]

    n, stt, sd, sdt, sdd = 0, 0.0, 0.0, 0.0, 0.0
    for t, d in chunks():
        n, stt, sd = n + t.size, stt + float(t @ t), sd + float(d.sum())
        sdt, sdd = sdt + float(d @ t), sdd + float(d @ d)
    if n < BIAS_MIN_ELEMENTS or stt == 0 or not math.isfinite(stt):
        return None
    rms = math.sqrt(stt / n)
    scale = sdt / stt                         # d ~ scale * truth, through the origin
    scale_se = math.sqrt(max(sdd - scale * sdt, 0.0) / (n - 1) / stt)
    offset = sd / n                           # d ~ offset
    offset_se = math.sqrt(max(sdd - n * offset * offset, 0.0) / (n - 1) / n)
    return Bias(scale, scale_se, offset / rms, offset_se / rms)


def floor(dt, rel_l2: float) -> float:
    """The least systematic error judged for an output of type ``dt`` whose tolerance's relative L2
    bound is ``rel_l2``: BIAS_FLOOR of it, at least BIAS_ULPS units of the arithmetic's precision."""
    eps = float(np.finfo(np.float64 if dt.name == "fp64" else np.float32).eps)
    return max(BIAS_FLOOR * rel_l2, BIAS_ULPS * eps)


def worse(run: Bias, original: Bias, floor: float) -> tuple[str, float, float, float] | None:
    """Where ``run`` is significantly and materially more biased than ``original``: (``"scale"`` or
    ``"offset"``, the run's, the original's, the excess over its standard error); else None."""
    for kind in ("scale", "offset"):
        r, o = getattr(run, kind), getattr(original, kind)
        se = math.hypot(getattr(run, kind + "_se"), getattr(original, kind + "_se"))
        excess = abs(r) - abs(o)
        if excess > floor and excess > BIAS_Z * se:
            return kind, r, o, (excess / se if se > 0 else math.inf)
    return None


def describe(kind: str, run: float, original: float) -> str:
    """``outputs 0.2% smaller than the NumPy reference on average (original: 0.01%)``."""
    if kind == "scale":
        way = "larger" if run > 0 else "smaller"
        return (f"outputs {abs(run) * 100:.2g}% {way} than the NumPy reference on average (original: "
                f"{abs(original) * 100:.2g}% {'larger' if original > 0 else 'smaller'})")
    way = "above" if run > 0 else "below"
    return (f"outputs shifted {way} the NumPy reference by {abs(run) * 100:.2g}% of its RMS on average (original: "
            f"{abs(original) * 100:.2g}% {'above' if original > 0 else 'below'})")


__all__ = ["BIAS_FLOOR", "BIAS_MIN_ELEMENTS", "BIAS_ULPS", "BIAS_Z", "Bias", "describe", "floor", "measure", "worse"]
