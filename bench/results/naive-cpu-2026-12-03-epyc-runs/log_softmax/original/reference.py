"""NumPy references (float64) for the naive kernel corpus. Each receives every argument by name
(arrays as values) and returns the outputs."""

import numpy as np


def _rows(x, rows, cols):
    return x.reshape(rows, cols).astype(np.float64)


def rms_norm(x, w, eps, rows, cols):
    x = _rows(x, rows, cols)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w.astype(np.float64)


def layer_norm(x, gamma, beta, eps, rows, cols):
    x = _rows(x, rows, cols)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)


def fused_add_rms_norm(x, residual, w, eps, rows, cols):
    # the kernel stores the sum in fp32 before normalizing it: so does the reference
    s = (x.astype(np.float32) + residual.astype(np.float32)).reshape(rows, cols)
    v = s.astype(np.float64)
    out = v / np.sqrt((v * v).mean(axis=1, keepdims=True) + eps) * w.astype(np.float64)
    return {"x": out, "residual": s}


def l2_normalize(x, eps, rows, cols):
    x = _rows(x, rows, cols)
    return x / np.maximum(np.sqrt((x * x).sum(axis=1, keepdims=True)), eps)


def _lse(x):
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def softmax(x, rows, cols):
    x = _rows(x, rows, cols)
    return np.exp(x - _lse(x))


def log_softmax(x, rows, cols):
    x = _rows(x, rows, cols)
    return x - _lse(x)


def cross_entropy(logits, target, rows, cols):
    x = _rows(logits, rows, cols)
    return _lse(x)[:, 0] - x[np.arange(rows), target]


def class_targets(sizes, rng):
    return {"target": rng.integers(0, sizes["cols"], size=sizes["rows"], dtype=np.int32)}


def _gate(x, T, d):
    x = x.reshape(T, 2 * d).astype(np.float64)
    return x[:, :d], x[:, d:]


def silu_and_mul(x, T, d):
    a, b = _gate(x, T, d)
    return a / (1.0 + np.exp(-a)) * b


def gelu_and_mul(x, T, d):
    from math import erf, sqrt

    a, b = _gate(x, T, d)
    return 0.5 * a * (1.0 + np.vectorize(erf)(a / sqrt(2.0))) * b


def _gelu_tanh(a):
    return 0.5 * a * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (a + 0.044715 * a ** 3)))


def gelu_tanh_and_mul(x, d, sizes):
    a, b = _gate(x, sizes["T"], d)
    return _gelu_tanh(a) * b


def gemv(A, x, rows, cols):
    return _rows(A, rows, cols) @ x.astype(np.float64)


def gemv_t(A, x, rows, cols):
    return _rows(A, rows, cols).T @ x.astype(np.float64)


def bias_gelu(x, b, T, d):
    return _gelu_tanh(x.reshape(T, d).astype(np.float64) + b.astype(np.float64))


def row_dot(a, b, rows, cols):
    return (_rows(a, rows, cols) * _rows(b, rows, cols)).sum(axis=1)
