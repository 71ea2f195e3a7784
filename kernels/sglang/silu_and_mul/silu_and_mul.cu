// SGLang's silu_and_mul, baseline form: out[t, i] = silu(x) * y with
// x = in[t, i], y = in[t, d + i] and silu(x) = x / (1 + exp(-x)), in fp32.
// One block of 128 threads per token (row); each thread walks the row with a
// stride of the block size, one element per load, expf, and stores the result
// rounded to nearest even in the storage type.
// Entries: silu_and_mul_fp32, silu_and_mul_fp16, silu_and_mul_bf16.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

template <typename T>
__device__ __forceinline__ void silu_and_mul_row(T* __restrict__ out, const T* __restrict__ input, int d)
{
    const long long t = blockIdx.x;
    const T* x = input + t * 2 * d;
    const T* y = x + d;
    T* o = out + t * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        const float a = to_float(x[i]);
        const float b = to_float(y[i]);
        o[i] = from_float<T>(a / (1.0f + expf(-a)) * b);
    }
}

extern "C" __global__ void silu_and_mul_fp32(float* __restrict__ out, const float* __restrict__ input, int d)
{
    silu_and_mul_row(out, input, d);
}

extern "C" __global__ void silu_and_mul_fp16(__half* __restrict__ out, const __half* __restrict__ input, int d)
{
    silu_and_mul_row(out, input, d);
}

extern "C" __global__ void silu_and_mul_bf16(__nv_bfloat16* __restrict__ out, const __nv_bfloat16* __restrict__ input,
                                             int d)
{
    silu_and_mul_row(out, input, d);
}
