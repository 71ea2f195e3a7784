// kerntune: shape cpu-T33-d64: the original kernel is the fastest
// launch: grid ['T'], block [128], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// SGLang's silu_and_mul, baseline form (OpenCL twin of silu_and_mul.cu):
// out[t, i] = silu(x) * y with x = in[t, i], y = in[t, d + i] and
// silu(x) = x / (1 + exp(-x)), in fp32. One work-group of 128 work-items per
// token (row), one element per load, exp, results rounded to nearest even.
// fp16 goes through vload_half/vstore_half_rte; bf16 is stored as ushort bits.
// Entries: silu_and_mul_fp32, silu_and_mul_fp16, silu_and_mul_bf16.

inline float bf16_to_float(ushort u) { return as_float((uint)u << 16); }

// float -> bf16 bits, rounding to nearest even (NaN -> 0x7FFF), as __float2bfloat16 does
inline ushort float_to_bf16(float f)
{
    const uint u = as_uint(f);
    if (isnan(f))
        return (ushort)0x7FFF;
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline float silu_mul(float a, float b) { return a / (1.0f + exp(-a)) * b; }

__kernel void silu_and_mul_fp32(__global float* restrict out, __global const float* restrict input, const int d)
{
    const long t = get_group_id(0);
    __global const float* x = input + t * 2 * d;
    __global const float* y = x + d;
    __global float* o = out + t * d;
    for (int i = get_local_id(0); i < d; i += get_local_size(0))
        o[i] = silu_mul(x[i], y[i]);
}

__kernel void silu_and_mul_fp16(__global half* restrict out, __global const half* restrict input, const int d)
{
    const long t = get_group_id(0);
    __global const half* x = input + t * 2 * d;
    __global const half* y = x + d;
    __global half* o = out + t * d;
    for (int i = get_local_id(0); i < d; i += get_local_size(0))
        vstore_half_rte(silu_mul(vload_half(i, x), vload_half(i, y)), i, o);
}

__kernel void silu_and_mul_bf16(__global ushort* restrict out, __global const ushort* restrict input, const int d)
{
    const long t = get_group_id(0);
    __global const ushort* x = input + t * 2 * d;
    __global const ushort* y = x + d;
    __global ushort* o = out + t * d;
    for (int i = get_local_id(0); i < d; i += get_local_size(0))
        o[i] = float_to_bf16(silu_mul(bf16_to_float(x[i]), bf16_to_float(y[i])));
}
