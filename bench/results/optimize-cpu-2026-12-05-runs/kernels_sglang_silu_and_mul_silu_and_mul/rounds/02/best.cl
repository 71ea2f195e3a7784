// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 128 -> parameters BLOCK
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   private-helpers: silu_and_mul_bf16's own copies of silu_mul, which the rules after changed (the file's other entry points keep the originals)
//   launch-config: block 128 -> parameters BLOCK
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 1 call(s) of exp may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

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

inline float silu_mul_for_silu_and_mul_bf16(float a, float b) { return a / (1.0f + native_exp(-a)) * b; }

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
    
#pragma unroll 8
    for (int kt_i0 = (get_local_id(0)) * 8; kt_i0 < d; kt_i0 += (get_local_size(0)) * 8) {
        if (kt_i0 + 8 <= d) {
            ushort kt_v_o[8];
            ushort kt_v_x[8];
            ushort kt_v_y[8];
#pragma unroll 8
            for (int kt_v = 0; kt_v < 8; ++kt_v) kt_v_x[kt_v] = x[kt_i0 + kt_v];
#pragma unroll 4
            for (int kt_v = 0; kt_v < 8; ++kt_v) kt_v_y[kt_v] = y[kt_i0 + kt_v];
#pragma unroll
            for (int kt_v = 0; kt_v < 8; ++kt_v)
                kt_v_o[kt_v] = float_to_bf16(silu_mul_for_silu_and_mul_bf16(bf16_to_float(kt_v_x[kt_v]), bf16_to_float(kt_v_y[kt_v])));
#pragma unroll 2
            for (int kt_v = 0; kt_v < 8; ++kt_v) o[kt_i0 + kt_v] = kt_v_o[kt_v];
        } else {
            /*kt:generated*/
            for (int i = kt_i0; i < d; ++i)
                o[i] = float_to_bf16(silu_mul_for_silu_and_mul_bf16(bf16_to_float(x[i]), bf16_to_float(y[i])));
        }
    }

    
}
