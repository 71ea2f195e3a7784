// merge_attn_states_lse, BASELINE: merge two partial attention outputs by their
// natural-log LSEs. v_a, v_b, v: [N, H, D] (storage dtype); s_a, s_b, s: [N, H] (fp32).
//   an LSE of +inf counts as -inf; m = max(s_a, s_b)
//   e_a = exp(s_a - m), e_b = exp(s_b - m)
//   v = v_a * e_a / (e_a + e_b) + v_b * e_b / (e_a + e_b);  s = log(e_a + e_b) + m
//   both -inf: v = v_a, s = -inf (the production kernels produce NaN there)
// The straightforward form: one block of 128 threads per token looping over the
// token's H * D elements with scalar loads; every element reloads its LSE pair
// and recomputes the weights with expf/logf in fp32; the thread holding d == 0
// writes s. Launch: grid [N], block [128].
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float load_value(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float load_value(const __half* p, long long i) { return __half2float(p[i]); }
__device__ __forceinline__ float load_value(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }

__device__ __forceinline__ void store_value(float* p, long long i, float x) { p[i] = x; }
__device__ __forceinline__ void store_value(__half* p, long long i, float x) { p[i] = __float2half_rn(x); }
__device__ __forceinline__ void store_value(__nv_bfloat16* p, long long i, float x) { p[i] = __float2bfloat16_rn(x); }

// weights and merged LSE of one (token, head) pair
__device__ __forceinline__ void merge_weights(float sa, float sb, float& wa, float& wb, float& lse)
{
    const float pos_inf = __uint_as_float(0x7f800000u);
    const float neg_inf = __uint_as_float(0xff800000u);
    if (sa == pos_inf) sa = neg_inf;
    if (sb == pos_inf) sb = neg_inf;
    const float m = fmaxf(sa, sb);
    if (m == neg_inf) {                // both empty: v = v_a, s = -inf
        wa = 1.0f;
        wb = 0.0f;
        lse = neg_inf;
    } else {
        const float ea = expf(sa - m);
        const float eb = expf(sb - m);
        const float sum = ea + eb;
        wa = ea / sum;
        wb = eb / sum;
        lse = logf(sum) + m;
    }
}

template <typename T>
__device__ void merge_attn_states_lse_baseline(T* __restrict__ v, float* __restrict__ s,
                                               const T* __restrict__ v_a, const float* __restrict__ s_a,
                                               const T* __restrict__ v_b, const float* __restrict__ s_b,
                                               int num_tokens, int num_heads, int head_dim)
{
    const long long first_pair = (long long)blockIdx.x * num_heads;   // this token's (token, head) pairs
    const int work = num_heads * head_dim;
    for (int i = threadIdx.x; i < work; i += blockDim.x) {
        const int h = i / head_dim;
        const int d = i - h * head_dim;
        const long long pair = first_pair + h;
        float wa, wb, lse;
        merge_weights(s_a[pair], s_b[pair], wa, wb, lse);
        const long long idx = pair * head_dim + d;
        store_value(v, idx, load_value(v_a, idx) * wa + load_value(v_b, idx) * wb);
        if (d == 0)
            s[pair] = lse;
    }
}

extern "C" __global__ void merge_attn_states_lse_fp32(float* v, float* s, const float* v_a, const float* s_a,
                                                      const float* v_b, const float* s_b,
                                                      int num_tokens, int num_heads, int head_dim)
{
    merge_attn_states_lse_baseline<float>(v, s, v_a, s_a, v_b, s_b, num_tokens, num_heads, head_dim);
}

extern "C" __global__ void merge_attn_states_lse_fp16(__half* v, float* s, const __half* v_a, const float* s_a,
                                                      const __half* v_b, const float* s_b,
                                                      int num_tokens, int num_heads, int head_dim)
{
    merge_attn_states_lse_baseline<__half>(v, s, v_a, s_a, v_b, s_b, num_tokens, num_heads, head_dim);
}

extern "C" __global__ void merge_attn_states_lse_bf16(__nv_bfloat16* v, float* s, const __nv_bfloat16* v_a,
                                                      const float* s_a, const __nv_bfloat16* v_b, const float* s_b,
                                                      int num_tokens, int num_heads, int head_dim)
{
    merge_attn_states_lse_baseline<__nv_bfloat16>(v, s, v_a, s_a, v_b, s_b, num_tokens, num_heads, head_dim);
}
