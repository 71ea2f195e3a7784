"""NumPy references for the proof benchmark's kernels (scripts/bench_proof.py)."""

import numpy as np


def rowsum(x, sizes):
    return x.reshape(sizes["rows"], sizes["cols"]).astype(np.float64).sum(axis=1)


def copy(src):
    return src.copy()


def scale(x, alpha):
    return np.float32(alpha) * x


def axpy(y, x, alpha):
    return (np.float32(alpha) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float32)


def xor(a, b):
    return np.bitwise_xor(a, b)


def add_rows(x, bias, sizes):
    return x.reshape(sizes["rows"], sizes["cols"]) + bias.reshape(1, sizes["cols"])


def copy_ballast(src):
    return src.copy()      # the spec's s is 0: the ballast read adds nothing


def rowargmax(x, sizes):
    # the first index of each row's maximum, as np.argmax takes it
    return x.reshape(sizes["rows"], sizes["cols"]).argmax(axis=1).astype(np.int32)
