"""NumPy references for the held-out kernel corpus (see README.md here).

Each function receives every kernel argument by name (arrays as values, scalars as numbers)
and returns the outputs. Floating-point work is done in float64, so the reference is the
exact answer rounded once, not another fp32 summation order.
"""

import numpy as np


def _f64(a, *shape):
    return np.asarray(a).reshape(*shape).astype(np.float64)


def rope_neox(q, cos_table, sin_table, tokens, heads, head_dim):
    half = head_dim // 2
    x = _f64(q, tokens, heads, head_dim)
    c = _f64(cos_table, tokens, 1, half)     # broadcast over heads
    s = _f64(sin_table, tokens, 1, half)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def dequant_rows(q, scale, rows, cols):
    return _f64(q, rows, cols) * _f64(scale, rows, 1)


def row_argmax(x, rows, cols):
    # np.argmax returns the first index of the maximum: the first index wins on ties
    return np.argmax(np.asarray(x).reshape(rows, cols), axis=1).astype(np.int32)


def causal_conv1d(x, w, bias, channels, seqlen, width):
    x = _f64(x, channels, seqlen)
    w = _f64(w, channels, width)
    y = np.repeat(_f64(bias, channels, 1), seqlen, axis=1)
    for k in range(width):
        shift = width - 1 - k            # tap k reads x[t - shift]; zero before t = 0
        if shift == 0:
            y += w[:, k:k + 1] * x
        elif shift < seqlen:
            y[:, shift:] += w[:, k:k + 1] * x[:, :seqlen - shift]
    with np.errstate(over="ignore"):     # exp(-y) overflows to inf for very negative y: silu -> -0
        return y / (1.0 + np.exp(-y))


def col_mean(x, rows, cols):
    return _f64(x, rows, cols).mean(axis=0)


def row_prefix_sum(x, rows, cols):
    return np.cumsum(_f64(x, rows, cols), axis=1)


def sq_dist_rows(a, b, rows, cols):
    d = _f64(a, rows, cols) - _f64(b, rows, cols)
    return (d * d).mean(axis=1)


def scale_add_clamp(x, y, alpha, beta, lo, hi, n):
    v = float(alpha) * _f64(x, n) + float(beta) * _f64(y, n)
    return np.minimum(np.maximum(v, float(lo)), float(hi))
