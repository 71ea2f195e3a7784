// residual += input; input = rms_norm(residual) * weight, in place, with 16-byte vector
// accesses (look-alike of a serving-library kernel, written for kerntune's tests).
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

#include "ext_common.h"
#include "ext_reduce.cuh"
#include "ext_vec.cuh"

namespace ext {

template <typename scalar_t, int VEC_SIZE>
__global__ void fused_add_rms_norm_kernel(scalar_t* __restrict__ input,     // [num_tokens, hidden_size]
                                          scalar_t* __restrict__ residual,  // [num_tokens, hidden_size]
                                          const scalar_t* __restrict__ weight,  // [hidden_size]
                                          const float epsilon, const int num_tokens, const int hidden_size) {
  using vec = vec_t<scalar_t, VEC_SIZE>;
  __shared__ float s_inv_rms;
  const int token = blockIdx.x;
  const int vec_hidden = hidden_size / VEC_SIZE;
  vec* input_v = reinterpret_cast<vec*>(input + (int64_t)token * hidden_size);
  vec* residual_v = reinterpret_cast<vec*>(residual + (int64_t)token * hidden_size);
  const vec* weight_v = reinterpret_cast<const vec*>(weight);

  float sum_sq = 0.0f;
  for (int i = threadIdx.x; i < vec_hidden; i += blockDim.x) {
    vec x = input_v[i];
    vec r = residual_v[i];
#pragma unroll
    for (int j = 0; j < VEC_SIZE; ++j) {
      const float z = to_float(x.data[j]) + to_float(r.data[j]);
      sum_sq += z * z;
      r.data[j] = from_float<scalar_t>(z);
    }
    residual_v[i] = r;
  }
  sum_sq = block_reduce_sum<float>(sum_sq);
  if (threadIdx.x == 0) s_inv_rms = rsqrtf(sum_sq / hidden_size + epsilon);
  __syncthreads();

  for (int i = threadIdx.x; i < vec_hidden; i += blockDim.x) {
    vec r = residual_v[i];
    const vec w = weight_v[i];
    vec o;
#pragma unroll
    for (int j = 0; j < VEC_SIZE; ++j)
      o.data[j] = from_float<scalar_t>(to_float(r.data[j]) * s_inv_rms * to_float(w.data[j]));
    input_v[i] = o;
  }
}

}  // namespace ext

void fused_add_rms_norm(torch::Tensor& input, torch::Tensor& residual, torch::Tensor& weight, double epsilon) {
  EXT_CHECK_INPUT(input);
  EXT_CHECK_INPUT(residual);
  const int hidden_size = input.size(-1);
  const int num_tokens = input.numel() / hidden_size;
  TORCH_CHECK(hidden_size % 8 == 0, "hidden_size must be a multiple of 8");
  dim3 grid(num_tokens);
  dim3 block(std::min(hidden_size / 8, 1024));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "fused_add_rms_norm", [&] {
    constexpr int vec_size = 16 / sizeof(scalar_t);
    ext::fused_add_rms_norm_kernel<scalar_t, vec_size><<<grid, block, 0, stream>>>(
        input.data_ptr<scalar_t>(), residual.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), epsilon,
        num_tokens, hidden_size);
  });
}
