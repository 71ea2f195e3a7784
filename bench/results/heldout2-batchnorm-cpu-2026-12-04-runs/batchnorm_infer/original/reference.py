"""NumPy references for the second held-out kernel corpus (see README.md here).

Each function receives every kernel argument by name (arrays as values, scalars as numbers)
and returns the outputs. Floating-point work is done in float64, so the reference is the
exact answer rounded once, not another fp32 summation order. Float scalars are first rounded
to fp32, since that is the value the kernel receives.
"""

import numpy as np


def _f64(a, *shape):
    return np.asarray(a).reshape(*shape).astype(np.float64)


def _f32(v):
    """A float scalar as the kernel sees it (an fp32 argument), widened to float64."""
    return float(np.float32(v))


def adam_step(param, m, v, grad, lr, beta1, beta2, eps, bias_corr1, bias_corr2, n):
    lr, beta1, beta2, eps = _f32(lr), _f32(beta1), _f32(beta2), _f32(eps)
    bias_corr1, bias_corr2 = _f32(bias_corr1), _f32(bias_corr2)
    g = _f64(grad, n)
    m_new = beta1 * _f64(m, n) + (1.0 - beta1) * g
    v_new = beta2 * _f64(v, n) + (1.0 - beta2) * g * g
    p_new = _f64(param, n) - lr * (m_new / bias_corr1) / (np.sqrt(v_new / bias_corr2) + eps)
    return {"param": p_new, "m": m_new, "v": v_new}


def absmax_quant_rows(x, rows, cols):
    x = _f64(x, rows, cols)
    amax = np.abs(x).max(axis=1)
    scale = amax / 127.0
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(np.rint(x / safe[:, None]), -127, 127)
    q[scale == 0] = 0
    return {"q": q.astype(np.int8), "scale": scale}


def embedding_gather_inputs(sizes, rng):
    # token ids: any row of the table, repeats included (as in real batches)
    return {"ids": rng.integers(0, sizes["vocab"], size=sizes["tokens"], dtype=np.int32)}


def embedding_gather(ids, table, scale, tokens, dim):
    rows = _f64(table, -1, dim)[np.asarray(ids).reshape(tokens)]
    return rows * _f32(scale)


def group_norm(x, gamma, beta, batch, channels, hw, groups, eps):
    xg = _f64(x, batch, groups, channels // groups * hw)
    mean = xg.mean(axis=2, keepdims=True)
    var = ((xg - mean) ** 2).mean(axis=2, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + _f32(eps))).reshape(batch, channels, hw)
    return y * _f64(gamma, 1, channels, 1) + _f64(beta, 1, channels, 1)


def avg_pool2d(x, planes, h, w, k):
    oh, ow = h // k, w // k
    x = _f64(x, planes, h, w)[:, :oh * k, :ow * k]       # floor mode: a partial window is dropped
    return x.reshape(planes, oh, k, ow, k).mean(axis=(2, 4))


def cosine_sim_rows(a, b, rows, cols, eps):
    a = _f64(a, rows, cols)
    b = _f64(b, rows, cols)
    dot = (a * b).sum(axis=1)
    norms = np.sqrt((a * a).sum(axis=1)) * np.sqrt((b * b).sum(axis=1))
    return dot / np.maximum(norms, _f32(eps))


def kl_div_rows(p, log_q, rows, cols):
    p = _f64(p, rows, cols)
    log_q = _f64(log_q, rows, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - log_q), 0.0)
    return terms.sum(axis=1)


def batchnorm_infer(x, mean, var, gamma, beta, batch, channels, hw, eps):
    x = _f64(x, batch, channels, hw)
    c = lambda a: _f64(a, 1, channels, 1)
    return (x - c(mean)) / np.sqrt(c(var) + _f32(eps)) * c(gamma) + c(beta)
