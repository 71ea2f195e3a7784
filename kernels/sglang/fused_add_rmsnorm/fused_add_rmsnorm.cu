// SGLang's fused_add_rmsnorm, baseline form, in place on input and residual [tokens, d]:
//   x = input + residual (fp32);  residual = x;  input = x * rsqrt(mean(x^2) + eps) * weight,
// both results stored rounded to nearest even in the storage type.
// One block of 128 threads per token (row), scalar loads. Pass 1 accumulates x^2 over a strided
// slice of the row and the block reduces the partial sums with a shared-memory tree; pass 2
// reads input and residual again (nothing was written yet), recomputes x exactly and writes
// both outputs, so the normalized value uses x in fp32, not its rounded copy.
// Entries: fused_add_rmsnorm_fp32, fused_add_rmsnorm_fp16, fused_add_rmsnorm_bf16.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define THREADS 128

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

template <typename T>
__device__ __forceinline__ void fused_add_rmsnorm_row(T* __restrict__ input, T* __restrict__ residual,
                                                      const T* __restrict__ weight, float eps, int d)
{
    __shared__ float partial[THREADS];
    const long long t = blockIdx.x;
    T* in = input + t * d;
    T* res = residual + t * d;
    const int tid = threadIdx.x;

    float acc = 0.0f;
    for (int i = tid; i < d; i += THREADS) {
        const float x = to_float(in[i]) + to_float(res[i]);
        acc += x * x;
    }
    partial[tid] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s)
            partial[tid] += partial[tid + s];
        __syncthreads();
    }
    const float r = rsqrtf(partial[0] / (float)d + eps);

    for (int i = tid; i < d; i += THREADS) {
        const float x = to_float(in[i]) + to_float(res[i]);
        res[i] = from_float<T>(x);
        in[i] = from_float<T>(x * r * to_float(weight[i]));
    }
}

// tokens is unused here (one block per token); the templates with several rows per block need it
extern "C" __global__ void fused_add_rmsnorm_fp32(float* __restrict__ input, float* __restrict__ residual,
                                                  const float* __restrict__ weight, float eps, int tokens, int d)
{
    fused_add_rmsnorm_row(input, residual, weight, eps, d);
}

extern "C" __global__ void fused_add_rmsnorm_fp16(__half* __restrict__ input, __half* __restrict__ residual,
                                                  const __half* __restrict__ weight, float eps, int tokens, int d)
{
    fused_add_rmsnorm_row(input, residual, weight, eps, d);
}

extern "C" __global__ void fused_add_rmsnorm_bf16(__nv_bfloat16* __restrict__ input, __nv_bfloat16* __restrict__ residual,
                                                  const __nv_bfloat16* __restrict__ weight, float eps, int tokens, int d)
{
    fused_add_rmsnorm_row(input, residual, weight, eps, d);
}
