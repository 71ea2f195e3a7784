"""NumPy references for the example kernels. Each receives every argument by
name (arrays as float32 values for fp16/bf16) and returns the outputs."""

import numpy as np


def vector_add(a, b):
    return a + b


def row_sum(x, rows, cols):
    return x.reshape(rows, cols).astype(np.float64).sum(axis=1)


def make_x(sizes, rng):
    """An input generator (a spec's ``inputs``, see the README's complete spec example): x uniform
    in [-1, 1], as the spec's ``range`` would draw it."""
    return {"x": rng.uniform(-1.0, 1.0, size=(sizes["rows"], sizes["cols"])).astype(np.float32)}
