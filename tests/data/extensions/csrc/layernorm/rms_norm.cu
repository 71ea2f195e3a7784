// out = x * rsqrt(mean(x^2) + eps) * weight, one block per token, scalar accesses
// (look-alike of a serving-library kernel, written for kerntune's tests).
#include <torch/all.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>

#include "ext_common.h"
#include "ext_reduce.cuh"
#include "ext_vec.cuh"

namespace ext {
namespace norm {

template <typename scalar_t>
__global__ void rms_norm_kernel(scalar_t* __restrict__ out,           // [num_tokens, hidden_size]
                                const scalar_t* __restrict__ input,   // [num_tokens, hidden_size]
                                const scalar_t* __restrict__ weight,  // [hidden_size]
                                const float epsilon, const int num_tokens, const int hidden_size) {
  __shared__ float s_variance;
  float variance = 0.0f;
  for (int idx = threadIdx.x; idx < hidden_size; idx += blockDim.x) {
    const float x = to_float(input[blockIdx.x * hidden_size + idx]);
    variance += x * x;
  }
  variance = block_reduce_sum<float>(variance);
  if (threadIdx.x == 0) s_variance = rsqrtf(variance / hidden_size + epsilon);
  __syncthreads();
  for (int idx = threadIdx.x; idx < hidden_size; idx += blockDim.x) {
    const float x = to_float(input[blockIdx.x * hidden_size + idx]);
    out[blockIdx.x * hidden_size + idx] = from_float<scalar_t>(x * s_variance * to_float(weight[idx]));
  }
}

}  // namespace norm
}  // namespace ext

void rms_norm(torch::Tensor& out, torch::Tensor& input, torch::Tensor& weight, double epsilon) {
  EXT_CHECK_INPUT(input);
  const int hidden_size = input.size(-1);
  const int num_tokens = input.numel() / hidden_size;
  dim3 grid(num_tokens);
  dim3 block(std::min(hidden_size, 1024));
  const at::cuda::OptionalCUDAGuard device_guard(device_of(input));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "rms_norm", [&] {
    ext::norm::rms_norm_kernel<scalar_t><<<grid, block, 0, stream>>>(
        out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), epsilon, num_tokens,
        hidden_size);
  });
}
