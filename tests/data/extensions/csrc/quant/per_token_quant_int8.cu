// Dynamic per-token symmetric int8 quantization: scale[t] = max|x[t, :]| / 127 and
// out[t, i] = round(x[t, i] / scale[t]) (look-alike written for kerntune's tests).
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

#include "ext_common.h"
#include "ext_reduce.cuh"
#include "ext_vec.cuh"
#include "quant_utils.cuh"

template <typename T>
__global__ void per_token_quant_int8_kernel(const T* __restrict__ input,  // [num_tokens, hidden_size]
                                            int8_t* __restrict__ output,  // [num_tokens, hidden_size]
                                            float* __restrict__ scale,    // [num_tokens]
                                            const int hidden_size) {
  const int token = blockIdx.x;
  const T* row = input + (int64_t)token * hidden_size;
  int8_t* out_row = output + (int64_t)token * hidden_size;
  float amax = 0.0f;
  for (int i = threadIdx.x; i < hidden_size; i += blockDim.x) amax = fmaxf(amax, fabsf(ext::to_float(row[i])));
  __shared__ float s_scale;
  amax = ext::block_reduce_max<float>(amax);
  if (threadIdx.x == 0) {
    s_scale = fmaxf(amax / QUANT_INT8_MAX, QUANT_MIN_SCALE);
    scale[token] = s_scale;
  }
  __syncthreads();
  const float inv = 1.0f / s_scale;
  for (int i = threadIdx.x; i < hidden_size; i += blockDim.x) out_row[i] = float_to_int8_rn(ext::to_float(row[i]) * inv);
}

void per_token_quant_int8(torch::Tensor& output, const torch::Tensor& input, torch::Tensor& scales) {
  EXT_CHECK_INPUT(input);
  const int hidden_size = input.size(-1);
  const int num_tokens = input.numel() / hidden_size;
  const int block = std::min(hidden_size, 1024);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "per_token_quant_int8", [&] {
    per_token_quant_int8_kernel<scalar_t><<<num_tokens, block, 0, stream>>>(
        input.data_ptr<scalar_t>(), output.data_ptr<int8_t>(), scales.data_ptr<float>(), hidden_size);
  });
}
