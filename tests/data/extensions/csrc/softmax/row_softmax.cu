// Row-wise softmax in fp32, one block per row, the block size a template parameter
// (look-alike of a sampling-library kernel, written for kerntune's tests).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#include <cfloat>
#include <vector>

#include "ext_common.h"
#include "ext_reduce.cuh"

template <int BLOCK_SIZE>
__global__ void __launch_bounds__(BLOCK_SIZE)
    row_softmax_kernel(float* __restrict__ out, const float* __restrict__ logits, const int num_cols) {
  const int row = blockIdx.x;
  const float* row_in = logits + (int64_t)row * num_cols;
  float* row_out = out + (int64_t)row * num_cols;

  float thread_max = -FLT_MAX;
  for (int c = threadIdx.x; c < num_cols; c += BLOCK_SIZE) thread_max = fmaxf(thread_max, row_in[c]);
  const float row_max = ext::block_reduce_max<float>(thread_max);

  float thread_sum = 0.0f;
  for (int c = threadIdx.x; c < num_cols; c += BLOCK_SIZE) thread_sum += __expf(row_in[c] - row_max);
  const float inv_sum = 1.0f / ext::block_reduce_sum<float>(thread_sum);

  for (int c = threadIdx.x; c < num_cols; c += BLOCK_SIZE) row_out[c] = __expf(row_in[c] - row_max) * inv_sum;
}

std::vector<torch::Tensor> row_softmax(torch::Tensor logits) {
  TORCH_CHECK(logits.dtype() == torch::kFloat32, "logits must be fp32");
  auto out = torch::empty_like(logits);
  const int num_rows = logits.size(0);
  const int num_cols = logits.size(1);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (num_cols <= 1024) {
    row_softmax_kernel<256><<<num_rows, 256, 0, stream>>>(out.data_ptr<float>(), logits.data_ptr<float>(), num_cols);
  } else {
    row_softmax_kernel<1024><<<num_rows, 1024, 0, stream>>>(out.data_ptr<float>(), logits.data_ptr<float>(), num_cols);
  }
  return {out};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("row_softmax", &row_softmax, "row-wise softmax (CUDA)"); }
