// Gated activations for MLP layers: out[t, i] = act(x[t, i]) * x[t, d + i] (look-alike of a
// serving-library kernel, written for kerntune's tests). One block per token.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/all.h>

#include <cmath>

#include "ext_common.h"
#include "ext_vec.cuh"

namespace ext {

template <typename T, bool USE_FAST_EXP>
EXT_DEVICE_INLINE float silu(float x) {
  return USE_FAST_EXP ? x / (1.0f + __expf(-x)) : x / (1.0f + expf(-x));
}

EXT_DEVICE_INLINE float gelu_tanh(float x) {
  const float k_beta = 0.7978845608028654f;  // sqrt(2 / pi)
  const float k_kappa = 0.044715f;
  const float inner = k_beta * (x + k_kappa * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

// input [num_tokens, 2 * d], out [num_tokens, d]
template <typename T, bool USE_FAST_EXP>
__global__ void silu_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  const int64_t token_idx = blockIdx.x;
  for (int64_t idx = threadIdx.x; idx < d; idx += blockDim.x) {
    const float x = to_float(__ldg(&input[token_idx * 2 * d + idx]));
    const float y = to_float(__ldg(&input[token_idx * 2 * d + d + idx]));
    out[token_idx * d + idx] = from_float<T>(silu<T, USE_FAST_EXP>(x) * y);
  }
}

template <typename T>
__global__ void gelu_tanh_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  const int64_t token_idx = blockIdx.x;
  const T* x_ptr = input + token_idx * 2 * d;
  const T* y_ptr = x_ptr + d;
  for (int64_t idx = threadIdx.x; idx < d; idx += blockDim.x) {
    out[token_idx * d + idx] = from_float<T>(gelu_tanh(to_float(x_ptr[idx])) * to_float(y_ptr[idx]));
  }
}

}  // namespace ext

void silu_and_mul(torch::Tensor& out, torch::Tensor& input) {
  EXT_CHECK_INPUT(input);
  const int d = input.size(-1) / 2;
  const int64_t num_tokens = input.numel() / input.size(-1);
  dim3 grid(num_tokens);
  dim3 block(std::min(d, 1024));
  const at::cuda::OptionalCUDAGuard device_guard(device_of(input));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "silu_and_mul", [&] {
    ext::silu_and_mul_kernel<scalar_t, true>
        <<<grid, block, 0, stream>>>(out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), d);
  });
}

void gelu_tanh_and_mul(torch::Tensor& out, torch::Tensor& input) {
  EXT_CHECK_INPUT(input);
  const int d = input.size(-1) / 2;
  const int64_t num_tokens = input.numel() / input.size(-1);
  dim3 grid(num_tokens);
  dim3 block(std::min(d, 1024));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "gelu_tanh_and_mul", [&] {
    ext::gelu_tanh_and_mul_kernel<scalar_t>
        <<<grid, block, 0, stream>>>(out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), d);
  });
}

TORCH_LIBRARY_FRAGMENT(ext_ops, m) {
  m.def("silu_and_mul(Tensor! out, Tensor input) -> ()");
  m.impl("silu_and_mul", torch::kCUDA, &silu_and_mul);
  m.def("gelu_tanh_and_mul(Tensor! out, Tensor input) -> ()");
  m.impl("gelu_tanh_and_mul", torch::kCUDA, &gelu_tanh_and_mul);
}
