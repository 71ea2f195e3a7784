// Grammar-constrained decoding: set the logits of tokens whose bit is 0 to -inf, in place
// (look-alike written for kerntune's tests). Grid: x over vocabulary chunks, y over rows.
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

#include <cmath>

#include "ext_common.h"

#define BITS_PER_WORD 32
#define THREADS_PER_BLOCK 256

__global__ void apply_token_bitmask_inplace_kernel(float* __restrict__ logits,          // [batch, vocab_size]
                                                   const int32_t* __restrict__ bitmask,  // [batch, words]
                                                   const int vocab_size, const int bitmask_words) {
  const int row = blockIdx.y;
  const int token = blockIdx.x * THREADS_PER_BLOCK + threadIdx.x;
  if (token >= vocab_size) return;
  const int32_t word = bitmask[row * bitmask_words + token / BITS_PER_WORD];
  const bool allowed = (word >> (token % BITS_PER_WORD)) & 1;
  if (!allowed) logits[(int64_t)row * vocab_size + token] = -INFINITY;
}

void apply_token_bitmask_inplace(torch::Tensor logits, torch::Tensor bitmask) {
  TORCH_CHECK(logits.dim() == 2 && bitmask.dim() == 2, "expected 2-D logits and bitmask");
  const int batch = logits.size(0);
  const int vocab_size = logits.size(1);
  const int bitmask_words = bitmask.size(1);
  TORCH_CHECK(bitmask_words * 32 >= vocab_size, "bitmask too short");
  dim3 grid(EXT_CEIL_DIV(vocab_size, THREADS_PER_BLOCK), batch);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  apply_token_bitmask_inplace_kernel<<<grid, THREADS_PER_BLOCK, 0, stream>>>(
      logits.data_ptr<float>(), bitmask.data_ptr<int32_t>(), vocab_size, bitmask_words);
}
