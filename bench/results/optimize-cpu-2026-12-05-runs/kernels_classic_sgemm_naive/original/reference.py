"""NumPy reference for SGEMM: C = alpha * A @ B + beta * C, computed in float64."""

import numpy as np


def sgemm(C, A, B, M, N, K, alpha, beta):
    a = A.reshape(M, K).astype(np.float64)
    b = B.reshape(K, N).astype(np.float64)
    c = C.reshape(M, N).astype(np.float64)
    return {"C": alpha * (a @ b) + beta * c}
