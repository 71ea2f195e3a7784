"""NumPy reference and inputs for the uint32 sum reduction: out[0] += sum(x),
with wrap-around modulo 2**32 like the kernels' unsigned adds (the spec's
shapes keep the sum below 2**32, so no wrap happens in practice)."""

import numpy as np


def make_inputs(sizes, rng):
    """out starts at zero (it is inout: every block atomically adds its sum to
    it); x is drawn by the spec's range."""
    return {"out": np.zeros(1, dtype=np.uint32)}


def reduce_sum(out, x, n):
    total = int(out.reshape(-1)[0]) + int(x.astype(np.uint64).sum())
    return {"out": np.array([total % (1 << 32)], dtype=np.uint32)}
