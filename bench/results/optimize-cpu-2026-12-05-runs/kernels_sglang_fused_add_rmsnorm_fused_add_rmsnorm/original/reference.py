"""NumPy references for fused_add_rmsnorm, in place on input and residual [T, d]:

    x = input + residual            (fp32, as the kernel adds)
    residual = x                    (rounded to the storage type, as the kernel stores it)
    input = x * rsqrt(mean(x^2) + eps) * weight   (fp64 here; the kernel's fp32 is compared
                                                   under the dtype's tolerance)

kerntune passes arrays as values (float32 for fp16/bf16 storage) and does not say which storage
type the kernel uses, so there is one function per spec: the storage rounding of `residual`
differs.
"""

import numpy as np


def _round_bf16(x):
    """float32 -> nearest bf16 value (round to nearest even), as float32; NaN stays NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16) << 16
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


def _round_fp16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _round_fp32(x):
    return np.asarray(x, dtype=np.float32)


def _fused_add_rmsnorm(input, residual, weight, eps, d, round_storage):
    x = (np.asarray(input, dtype=np.float32).reshape(-1, d) + np.asarray(residual, dtype=np.float32).reshape(-1, d))
    x64 = x.astype(np.float64)
    scale = 1.0 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + float(eps))
    out = x64 * scale * np.asarray(weight, dtype=np.float64).reshape(1, d)
    return {"input": out, "residual": round_storage(x)}


def fused_add_rmsnorm_bf16(input, residual, weight, eps, d):
    return _fused_add_rmsnorm(input, residual, weight, eps, d, _round_bf16)


def fused_add_rmsnorm_fp16(input, residual, weight, eps, d):
    return _fused_add_rmsnorm(input, residual, weight, eps, d, _round_fp16)


def fused_add_rmsnorm_fp32(input, residual, weight, eps, d):
    return _fused_add_rmsnorm(input, residual, weight, eps, d, _round_fp32)
