"""NumPy reference and input generator for merge_attn_states_lse (natural-log
LSE variant), shared by the fp32, fp16 and bf16 specs.

Math, per (token, head) pair, in fp64: an LSE of +inf counts as -inf;
m = max(s_a, s_b); e_a = exp(s_a - m), e_b = exp(s_b - m);
v = v_a * e_a / (e_a + e_b) + v_b * e_b / (e_a + e_b); s = log(e_a + e_b) + m.
When both LSEs are -inf (production kernels give NaN there) the result is
defined as v = v_a and s = -inf.
"""

import numpy as np

# special cases injected on some (token, head) pairs by make_inputs
SPECIAL_CASES = ("a_neg_inf", "b_neg_inf", "both_neg_inf", "a_pos_inf", "b_pos_inf",
                 "a_far_above", "b_far_above", "a_far_below")


def merge_lse(s_a, s_b):
    """(w_a, w_b, s) in fp64 for LSE arrays of any shape; both -inf -> (1, 0, -inf)."""
    sa = np.asarray(s_a, dtype=np.float64).copy()
    sb = np.asarray(s_b, dtype=np.float64).copy()
    sa[sa == np.inf] = -np.inf
    sb[sb == np.inf] = -np.inf
    m = np.maximum(sa, sb)
    empty = m == -np.inf
    m_safe = np.where(empty, 0.0, m)
    with np.errstate(invalid="ignore", over="ignore"):
        ea = np.where(empty, 1.0, np.exp(sa - m_safe))
        eb = np.where(empty, 0.0, np.exp(sb - m_safe))
    total = ea + eb
    s = np.where(empty, -np.inf, np.log(total) + m_safe)
    return ea / total, eb / total, s


def merge_attn_states_lse(v_a, s_a, v_b, s_b, num_tokens, num_heads, head_dim):
    shape = (num_tokens, num_heads, head_dim)
    w_a, w_b, s = merge_lse(np.reshape(s_a, shape[:2]), np.reshape(s_b, shape[:2]))
    va = np.reshape(v_a, shape).astype(np.float64)
    vb = np.reshape(v_b, shape).astype(np.float64)
    v = va * w_a[..., None] + vb * w_b[..., None]
    both = np.isneginf(s)
    v[both] = va[both]                 # defined exactly, not through the weights
    return {"v": v, "s": s}


def make_inputs(sizes, rng):
    """v_a, v_b uniform in [-1, 1); LSEs normal with scale 5; special cases on
    a random set of pairs (each case on at least one pair when there are enough,
    about 1/32 of the pairs each on large shapes)."""
    n, h, d = sizes["N"], sizes["H"], sizes["D"]
    pairs = n * h
    s_a = rng.normal(0.0, 5.0, size=pairs).astype(np.float32)
    s_b = rng.normal(0.0, 5.0, size=pairs).astype(np.float32)
    per_case = max(1, pairs // 32)
    order = rng.permutation(pairs)
    for k, case in enumerate(SPECIAL_CASES):
        idx = order[k * per_case:(k + 1) * per_case]
        if idx.size == 0:
            break
        if case == "a_neg_inf":
            s_a[idx] = -np.inf
        elif case == "b_neg_inf":
            s_b[idx] = -np.inf
        elif case == "both_neg_inf":
            s_a[idx] = -np.inf
            s_b[idx] = -np.inf
        elif case == "a_pos_inf":
            s_a[idx] = np.inf
        elif case == "b_pos_inf":
            s_b[idx] = np.inf
        elif case == "a_far_above":
            s_a[idx] = s_b[idx] + rng.uniform(80.0, 120.0, size=idx.size).astype(np.float32)
        elif case == "b_far_above":
            s_b[idx] = s_a[idx] + rng.uniform(80.0, 120.0, size=idx.size).astype(np.float32)
        elif case == "a_far_below":
            s_a[idx] = s_b[idx] - rng.uniform(85.0, 95.0, size=idx.size).astype(np.float32)
    v_a = rng.uniform(-1.0, 1.0, size=(n, h, d)).astype(np.float32)
    v_b = rng.uniform(-1.0, 1.0, size=(n, h, d)).astype(np.float32)
    return {"v_a": v_a, "s_a": s_a.reshape(n, h), "v_b": v_b, "s_b": s_b.reshape(n, h)}


def make_empty_inputs(sizes, rng):
    """Every pair has s_a = s_b = -inf (or +inf, which counts as -inf): checks v = v_a, s = -inf."""
    out = make_inputs(sizes, rng)
    n, h = sizes["N"], sizes["H"]
    s_a = np.full((n, h), -np.inf, dtype=np.float32)
    s_b = np.full((n, h), -np.inf, dtype=np.float32)
    s_a.reshape(-1)[1::3] = np.inf
    s_b.reshape(-1)[2::3] = np.inf
    out["s_a"], out["s_b"] = s_a, s_b
    return out
