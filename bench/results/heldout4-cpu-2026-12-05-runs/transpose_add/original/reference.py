"""NumPy references for the fourth held-out kernel corpus (see README.md here).

Each function receives every kernel argument by name (arrays as values, scalars as numbers)
and returns the outputs as a dict. Floating-point work is done in float64, so the reference is
the exact answer rounded once, not another fp32 evaluation order.
"""

import numpy as np


def _f64(a, *shape):
    return np.asarray(a).reshape(*shape).astype(np.float64)


def mish(x, n):
    x = _f64(x, n)
    softplus = np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))
    return {"out": x * np.tanh(softplus)}


def cummax_rows(x, rows, cols):
    return {"out": np.maximum.accumulate(_f64(x, rows, cols), axis=1)}


def row_entropy(x, rows, cols):
    x = _f64(x, rows, cols)
    p = x / x.sum(axis=1, keepdims=True)
    return {"out": -(p * np.log(p)).sum(axis=1)}


def transpose_add(a, b, rows, cols):
    return {"out": _f64(a, rows, cols) + _f64(b, cols, rows).T}


def scatter_add_rows_inputs(sizes, rng):
    """Row indices as an embedding backward sees them: n draws from [0, num_out), so rows repeat
    (n > num_out in every shape) and some rows of out receive nothing. Index 0 is drawn at least
    twice and index num_out - 1 once, so both ends of out and a collision are always exercised."""
    n, num_out = sizes["n"], sizes["num_out"]
    idx = rng.integers(0, num_out, size=n)
    idx[0] = 0
    idx[-1] = num_out - 1
    if n >= 3:
        idx[n // 2] = 0
    return {"idx": idx.astype(np.int32)}


def scatter_add_rows(out, src, idx, n, dim, sizes):
    num_out = sizes["num_out"]          # not a kernel argument: out's row count
    result = _f64(out, num_out, dim).copy()
    np.add.at(result, np.asarray(idx).reshape(n).astype(np.int64), _f64(src, n, dim))
    return {"out": result}
