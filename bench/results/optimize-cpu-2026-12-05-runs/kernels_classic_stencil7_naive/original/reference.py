"""NumPy reference for the 7-point 3-D stencil (float64): the interior gets
c0 * x + c1 * (sum of the six face neighbours), the boundary is copied."""

import numpy as np


def stencil7(x, c0, c1, nx, ny, nz):
    v = x.reshape(nz, ny, nx).astype(np.float64)
    out = v.copy()
    if nx > 2 and ny > 2 and nz > 2:
        c = v[1:-1, 1:-1, 1:-1]
        nb = (v[1:-1, 1:-1, :-2] + v[1:-1, 1:-1, 2:] + v[1:-1, :-2, 1:-1] + v[1:-1, 2:, 1:-1]
              + v[:-2, 1:-1, 1:-1] + v[2:, 1:-1, 1:-1])
        out[1:-1, 1:-1, 1:-1] = c0 * c + c1 * nb
    return {"out": out}
