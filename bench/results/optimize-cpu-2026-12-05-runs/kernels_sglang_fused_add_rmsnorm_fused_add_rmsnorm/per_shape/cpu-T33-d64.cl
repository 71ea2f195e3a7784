// kerntune: shape cpu-T33-d64: REDUCE_0='shuffle',UNROLL_0=0,UNROLL_1=0,FAST_MATH=True,FAST_FLAGS=True from round 2, 3.024x
// launch: grid ['T'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 1 call(s) of rsqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_REDUCE_SUM_FLOAT
#define KT_HAVE_REDUCE_SUM_FLOAT 1
inline void kt_block_reduce_sum_float(__local float* sh, uint tid)
{
    // each work-item's value is in sh[tid]; leaves the group's sum in sh[0] for every work-item
    float v = sh[tid];
    barrier(CLK_LOCAL_MEM_FENCE);
    v = sub_group_reduce_add(v);
    if (get_sub_group_local_id() == 0) sh[get_sub_group_id()] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0) {
        float t = sh[0];
        for (uint k = 1; k < get_num_sub_groups(); ++k) t = t + sh[k];
        sh[0] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   private-helpers: fused_add_rmsnorm_bf16's own copies of row_scale, which the rules after changed (the file's other entry points keep the originals)
//   launch-config: block 128 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 2 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 1 call(s) of rsqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// SGLang's fused_add_rmsnorm, baseline form (OpenCL twin of fused_add_rmsnorm.cu), in place on
// input and residual [tokens, d]:
//   x = input + residual (fp32);  residual = x;  input = x * rsqrt(mean(x^2) + eps) * weight,
// both results stored rounded to nearest even in the storage type.
// One work-group of 128 work-items per token (row), scalar loads, a local-memory tree for the
// sum of squares; pass 2 reads input and residual again, recomputes x exactly and writes both.
// fp16 goes through vload_half/vstore_half_rte; bf16 is stored as ushort bits.
// Entries: fused_add_rmsnorm_fp32, fused_add_rmsnorm_fp16, fused_add_rmsnorm_bf16.

#define THREADS  32

inline float bf16_to_float(ushort u) { return as_float((uint)u << 16); }

// float -> bf16 bits, rounding to nearest even (NaN -> 0x7FFF), as __float2bfloat16 does
inline ushort float_to_bf16(float f)
{
    const uint u = as_uint(f);
    if (isnan(f))
        return (ushort)0x7FFF;
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// the reduction shared by the three entries: every work-item gets 1 / rms of the row
inline float row_scale(__local float* partial, float acc, float eps, int d)
{
    const int tid = get_local_id(0);
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s)
            partial[tid] += partial[tid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return rsqrt(partial[0] / (float)d + eps);
}

inline float row_scale_for_fused_add_rmsnorm_bf16(__local float* partial, float acc, float eps, int d)
{
    const int tid = get_local_id(0);
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    
    kt_block_reduce_sum_float(partial, get_local_id(0));

    
    return native_rsqrt(partial[0] / (float)d + eps);
}

// tokens is unused here (one work-group per token); the templates with several rows per group need it
__kernel void fused_add_rmsnorm_fp32(__global float* restrict input, __global float* restrict residual,
                                     __global const float* restrict weight, const float eps, const int tokens,
                                     const int d)
{
    __local float partial[THREADS];
    const long t = get_group_id(0);
    __global float* in = input + t * d;
    __global float* res = residual + t * d;
    const int tid = get_local_id(0);
    float acc = 0.0f;
    for (int i = tid; i < d; i += THREADS) {
        const float x = in[i] + res[i];
        acc += x * x;
    }
    const float r = row_scale(partial, acc, eps, d);
    for (int i = tid; i < d; i += THREADS) {
        const float x = in[i] + res[i];
        res[i] = x;
        in[i] = x * r * weight[i];
    }
}

__kernel void fused_add_rmsnorm_fp16(__global half* restrict input, __global half* restrict residual,
                                     __global const half* restrict weight, const float eps, const int tokens,
                                     const int d)
{
    __local float partial[THREADS];
    const long t = get_group_id(0);
    __global half* in = input + t * d;
    __global half* res = residual + t * d;
    const int tid = get_local_id(0);
    float acc = 0.0f;
    for (int i = tid; i < d; i += THREADS) {
        const float x = vload_half(i, in) + vload_half(i, res);
        acc += x * x;
    }
    const float r = row_scale(partial, acc, eps, d);
    for (int i = tid; i < d; i += THREADS) {
        const float x = vload_half(i, in) + vload_half(i, res);
        vstore_half_rte(x, i, res);
        vstore_half_rte(x * r * vload_half(i, weight), i, in);
    }
}

__kernel void fused_add_rmsnorm_bf16(__global ushort* restrict input, __global ushort* restrict residual,
                                     __global const ushort* restrict weight, const float eps, const int tokens,
                                     const int d)
{
    __local float partial[THREADS];
    const long t = get_group_id(0);
    __global ushort* in = input + t * d;
    __global ushort* res = residual + t * d;
    const int tid = get_local_id(0);
    float acc = 0.0f;
    
    for (int i = tid; i < d; i += THREADS) {
        const float x = bf16_to_float(in[i]) + bf16_to_float(res[i]);
        acc += x * x;
    }

    
    const float r = row_scale_for_fused_add_rmsnorm_bf16(partial, acc, eps, d);
    
    for (int i = tid; i < d; i += THREADS) {
        const float x = bf16_to_float(in[i]) + bf16_to_float(res[i]);
        res[i] = float_to_bf16(x);
        in[i] = float_to_bf16(x * r * bf16_to_float(weight[i]));
    }

    
}
