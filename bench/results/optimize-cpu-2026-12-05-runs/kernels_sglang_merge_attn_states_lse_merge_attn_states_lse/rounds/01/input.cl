// merge_attn_states_lse, BASELINE (OpenCL twin of merge_attn_states_lse.cu):
// merge two partial attention outputs by their natural-log LSEs.
// v_a, v_b, v: [N, H, D] (storage dtype); s_a, s_b, s: [N, H] (float).
//   an LSE of +inf counts as -inf; m = max(s_a, s_b)
//   e_a = exp(s_a - m), e_b = exp(s_b - m)
//   v = v_a * e_a / (e_a + e_b) + v_b * e_b / (e_a + e_b);  s = log(e_a + e_b) + m
//   both -inf: v = v_a, s = -inf
// One work-group of 128 work-items per token looping over the token's H * D
// elements with scalar loads; every element reloads its LSE pair and recomputes
// the weights with exp/log in float; the work-item holding d == 0 writes s.
// fp16 travels as half (vload_half / vstore_half, round to nearest even), bf16 as
// ushort bit patterns (float -> bf16 rounds to nearest even).

inline float bf16_to_float(ushort x) { return as_float((uint)x << 16); }

inline ushort float_to_bf16(float f)
{
    const uint u = as_uint(f);
    if (isnan(f))
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// weights and merged LSE of one (token, head) pair
inline void merge_weights(float sa, float sb, float* wa, float* wb, float* lse)
{
    if (sa == INFINITY) sa = -INFINITY;
    if (sb == INFINITY) sb = -INFINITY;
    const float m = fmax(sa, sb);
    if (m == -INFINITY) {              // both empty: v = v_a, s = -inf
        *wa = 1.0f;
        *wb = 0.0f;
        *lse = -INFINITY;
    } else {
        const float ea = exp(sa - m);
        const float eb = exp(sb - m);
        const float sum = ea + eb;
        *wa = ea / sum;
        *wb = eb / sum;
        *lse = log(sum) + m;
    }
}

#define MERGE_BASELINE(LOAD_A, LOAD_B, STORE)                                   \
    const long first_pair = (long)get_group_id(0) * num_heads;                 \
    const int work = num_heads * head_dim;                                     \
    for (int i = get_local_id(0); i < work; i += get_local_size(0)) {          \
        const int h = i / head_dim;                                            \
        const int d = i - h * head_dim;                                        \
        const long pair = first_pair + h;                                      \
        float wa, wb, lse;                                                     \
        merge_weights(s_a[pair], s_b[pair], &wa, &wb, &lse);                   \
        const long idx = pair * head_dim + d;                                  \
        const float out = (LOAD_A) * wa + (LOAD_B) * wb;                       \
        STORE;                                                                 \
        if (d == 0)                                                            \
            s[pair] = lse;                                                     \
    }

__kernel void merge_attn_states_lse_fp32(__global float* v, __global float* s,
                                         __global const float* v_a, __global const float* s_a,
                                         __global const float* v_b, __global const float* s_b,
                                         const int num_tokens, const int num_heads, const int head_dim)
{
    MERGE_BASELINE(v_a[idx], v_b[idx], v[idx] = out)
}

__kernel void merge_attn_states_lse_fp16(__global half* v, __global float* s,
                                         __global const half* v_a, __global const float* s_a,
                                         __global const half* v_b, __global const float* s_b,
                                         const int num_tokens, const int num_heads, const int head_dim)
{
    MERGE_BASELINE(vload_half(idx, v_a), vload_half(idx, v_b), vstore_half_rte(out, idx, v))
}

__kernel void merge_attn_states_lse_bf16(__global ushort* v, __global float* s,
                                         __global const ushort* v_a, __global const float* s_a,
                                         __global const ushort* v_b, __global const float* s_b,
                                         const int num_tokens, const int num_heads, const int head_dim)
{
    MERGE_BASELINE(bf16_to_float(v_a[idx]), bf16_to_float(v_b[idx]), v[idx] = float_to_bf16(out))
}
