"""NumPy references for the test kernels in this folder."""

import numpy as np


def rms_norm(x, w, eps, rows, cols):
    x = x.reshape(rows, cols).astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w.astype(np.float64)


def softmax(x, rows, cols):
    x = x.reshape(rows, cols).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)



def poly(c, x, n, degree):
    acc = np.zeros_like(x, dtype=np.float64) + c[degree]
    for k in range(degree - 1, -1, -1):
        acc = acc * x.astype(np.float64) + c[k]
    return acc


def scale_rows(x, scale, bias, rows, cols):
    return x.reshape(rows, cols).astype(np.float64) * scale.astype(np.float64)[:, None] + bias.astype(np.float64)


def twice(x, n):
    return 2 * x
