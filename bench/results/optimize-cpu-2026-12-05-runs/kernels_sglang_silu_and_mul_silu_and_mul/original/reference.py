"""NumPy reference for silu_and_mul: out[t, i] = silu(x) * y with
x = in[t, i], y = in[t, d + i], silu(x) = x / (1 + exp(-x)).

kerntune passes every array as values (float32 for fp16/bf16 storage), so one
function serves all three dtypes; the math is done in float64 and the result is
compared with the kernel's output under the dtype's tolerance.
"""

import numpy as np


def silu_and_mul(input, d):
    v = np.asarray(input, dtype=np.float64).reshape(-1, 2 * d)
    x, y = v[:, :d], v[:, d:]
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-x)) * y
