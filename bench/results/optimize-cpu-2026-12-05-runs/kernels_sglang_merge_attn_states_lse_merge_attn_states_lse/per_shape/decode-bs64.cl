// kerntune: shape decode-bs64: BLOCK=64,HOIST=False,UNROLL_0=8,UNROLL_1=2,RESTRICT=False,FAST_MATH=False,FAST_FLAGS=False from round 2, 4.030x
// launch: grid ['N'], block [64], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64 -> parameters BLOCK; 1 literal(s) rewritten
//   hoist-invariants: 2 loop-invariant load(s), 3 index offset(s) hoisted out of 4 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 9 pointer parameter(s)
//   fast-math: 3 call(s) of exp, log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   expand-macros: 1 invocation(s) of MERGE_BASELINE written out in merge_attn_states_lse_bf16
//   private-helpers: merge_attn_states_lse_bf16's own copies of merge_weights, which the rules after changed (the file's other entry points keep the originals)
//   launch-config: block 128 -> parameters BLOCK
//   row-loop: 1 flattened loop(s) split into a row loop and a column loop (i < num_heads * head_dim -> rows h, columns d)
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 4 loop-invariant load(s), 3 index offset(s) hoisted out of 5 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 9 pointer parameter(s)
//   fast-math: 3 call(s) of exp, log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

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
        return (ushort)((u >> 16) | 64);
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

inline void merge_weights_for_merge_attn_states_lse_bf16(float sa, float sb, float*   wa, float*   wb, float*   lse)
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

__kernel void merge_attn_states_lse_bf16(__global ushort*   v, __global float*   s,
                                         __global const ushort*   v_a, __global const float*   s_a,
                                         __global const ushort*   v_b, __global const float*   s_b,
                                         const int num_tokens, const int num_heads, const int head_dim)
{
    const long first_pair = (long)get_group_id(0) * num_heads;
    const int work = num_heads * head_dim;
    for (int h = 0; h < num_heads; ++h) {
        const long pair = first_pair + h;
        
        for (int kt_i0 = (get_local_id(0)) * 8; kt_i0 < head_dim; kt_i0 += (get_local_size(0)) * 8) {
            if (kt_i0 + 8 <= head_dim) {
                ushort kt_v_v_a[8];
                ushort kt_v_v_b[8];
                ushort kt_v_v[8];
#pragma unroll 2
                for (int kt_v = 0; kt_v < 8; ++kt_v) kt_v_v_a[kt_v] = v_a[(pair * head_dim) + kt_i0 + kt_v];

                for (int kt_v = 0; kt_v < 8; ++kt_v) kt_v_v_b[kt_v] = v_b[(pair * head_dim) + kt_i0 + kt_v];

#pragma unroll
                for (int kt_v = 0; kt_v < 8; ++kt_v)
                    { const int d = kt_i0 + kt_v; {
            float wa, wb, lse;
            merge_weights_for_merge_attn_states_lse_bf16(s_a[pair], s_b[pair], &wa, &wb, &lse);
            const long idx = pair * head_dim + d;
            const float out = (bf16_to_float(kt_v_v_a[kt_v])) * wa + (bf16_to_float(kt_v_v_b[kt_v])) * wb;
            kt_v_v[kt_v] = float_to_bf16(out);
            if (d == 0)
                s[pair] = lse;
        } }

                for (int kt_v = 0; kt_v < 8; ++kt_v) v[(pair * head_dim) + kt_i0 + kt_v] = kt_v_v[kt_v];

            } else {
                /*kt:generated*/
                for (int d = kt_i0; d < head_dim; ++d)
                    {
            float wa, wb, lse;
            merge_weights_for_merge_attn_states_lse_bf16(s_a[pair], s_b[pair], &wa, &wb, &lse);
            const long idx = pair * head_dim + d;
            const float out = (bf16_to_float(v_a[idx])) * wa + (bf16_to_float(v_b[idx])) * wb;
            v[idx] = float_to_bf16(out);
            if (d == 0)
                s[pair] = lse;
        }
            }
        }

        
    }

}
