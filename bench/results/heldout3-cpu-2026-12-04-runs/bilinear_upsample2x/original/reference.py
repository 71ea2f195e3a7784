"""NumPy references for the third held-out kernel corpus (see README.md here).

Each function receives every kernel argument by name (arrays as values, scalars as numbers)
and returns the outputs as a dict. Floating-point work is done in float64, so the reference is
the exact answer rounded once, not another fp32 evaluation order. Float scalars are first
rounded to fp32, since that is the value the kernel receives. The one exception is
value_histogram's bucket index, whose fp32 arithmetic is part of what the kernel computes
(see there).
"""

import numpy as np


def _f64(a, *shape):
    return np.asarray(a).reshape(*shape).astype(np.float64)


def _f32(v):
    """A float scalar as the kernel sees it (an fp32 argument), widened to float64."""
    return float(np.float32(v))


def log_softmax_rows(x, rows, cols):
    x = _f64(x, rows, cols)
    shifted = x - x.max(axis=1, keepdims=True)
    return {"out": shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))}


def gelu_tanh(x, n):
    x = _f64(x, n)
    inner = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)
    return {"out": 0.5 * x * (1.0 + np.tanh(inner))}


def masked_mean_pool_inputs(sizes, rng):
    """Padding masks as a batch of variable-length sequences has them: sequence b keeps its
    first len[b] tokens (mask 1) and the rest is padding (mask 0). The first sequence is full
    length and, when there are at least three, the last is empty (all padding, so the kernel's
    max(count, 1) guard is exercised); the others draw their length uniformly in [1, seq]."""
    batch, seq = sizes["batch"], sizes["seq"]
    lengths = rng.integers(1, seq + 1, size=batch)
    lengths[0] = seq
    if batch >= 3:
        lengths[-1] = 0
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
    return {"mask": mask}


def masked_mean_pool(x, mask, batch, seq, dim):
    x = _f64(x, batch, seq, dim)
    m = _f64(mask, batch, seq)
    total = np.einsum("bt,btd->bd", m, x)
    count = np.maximum(m.sum(axis=1), 1.0)
    return {"out": total / count[:, None]}


def row_l1_normalize(x, rows, cols, eps):
    x = _f64(x, rows, cols)
    norm = np.abs(x).sum(axis=1, keepdims=True)
    return {"out": x / np.maximum(norm, _f32(eps))}


def _bilinear_axis(out_len, in_len):
    """Source indices and weights of one axis, align_corners=False (half-pixel centres), as
    PyTorch's upsample_bilinear2d computes them: src = (dst + 0.5) * in/out - 0.5, clamped at 0;
    i0 = floor(src), i1 = i0 + 1 except at the last row/column, lam = src - i0."""
    src = (np.arange(out_len, dtype=np.float64) + 0.5) * (in_len / out_len) - 0.5
    src = np.maximum(src, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, in_len - 1)
    return i0, i1, src - i0


def bilinear_upsample2x(x, planes, h, w):
    x = _f64(x, planes, h, w)
    y0, y1, ly = _bilinear_axis(2 * h, h)
    x0, x1, lx = _bilinear_axis(2 * w, w)
    ly = ly[None, :, None]
    lx = lx[None, None, :]
    top = x[:, y0][:, :, x0] * (1.0 - lx) + x[:, y0][:, :, x1] * lx
    bottom = x[:, y1][:, :, x0] * (1.0 - lx) + x[:, y1][:, :, x1] * lx
    return {"out": top * (1.0 - ly) + bottom * ly}


def value_histogram(counts, x, lo, inv_width, n, nb):
    # The bucket index is computed in fp32 exactly as the kernel does, (x - lo) then * inv_width,
    # each rounded to fp32, then truncated toward zero and clamped: where a value falls within
    # an ulp of a bucket edge, that rounding decides its bucket, so it is part of the operation
    # (float64 here would move such values to the neighbouring bucket). NumPy's float32
    # subtraction and multiplication are correctly rounded, like OpenCL's and CUDA's.
    x = np.asarray(x, dtype=np.float32).reshape(n)
    t = (x - np.float32(lo)) * np.float32(inv_width)
    with np.errstate(invalid="ignore"):
        b = np.trunc(t.astype(np.float64))
    b = np.clip(b, 0, nb - 1).astype(np.int64)
    hist = np.bincount(b, minlength=nb).astype(np.int64)
    return {"counts": (np.asarray(counts).reshape(nb).astype(np.int64) + hist).astype(np.int32)}
