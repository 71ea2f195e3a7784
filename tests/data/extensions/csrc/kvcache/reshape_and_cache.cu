// Write this step's keys and values into the paged KV cache at the slots the scheduler
// assigned (look-alike written for kerntune's tests). Slots < 0 are padding and skipped.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/all.h>

#include "ext_common.h"

namespace ext {

template <typename scalar_t>
__global__ void reshape_and_cache_kernel(const scalar_t* __restrict__ key,    // [num_tokens, num_heads, head_size]
                                         const scalar_t* __restrict__ value,  // [num_tokens, num_heads, head_size]
                                         scalar_t* __restrict__ key_cache,    // [num_blocks, block_size, num_heads, head_size]
                                         scalar_t* __restrict__ value_cache,  // [num_blocks, block_size, num_heads, head_size]
                                         const int64_t* __restrict__ slot_mapping,  // [num_tokens]
                                         const int num_heads, const int head_size, const int block_size) {
  const int64_t token_idx = blockIdx.x;
  const int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) return;
  const int64_t block_idx = slot_idx / block_size;
  const int64_t block_offset = slot_idx % block_size;
  const int n = num_heads * head_size;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t src = token_idx * n + i;
    const int64_t dst = (block_idx * block_size + block_offset) * n + i;
    key_cache[dst] = key[src];
    value_cache[dst] = value[src];
  }
}

}  // namespace ext

void reshape_and_cache(torch::Tensor& key, torch::Tensor& value, torch::Tensor& key_cache,
                       torch::Tensor& value_cache, torch::Tensor& slot_mapping) {
  const int num_tokens = key.size(0);
  const int num_heads = key.size(1);
  const int head_size = key.size(2);
  const int block_size = key_cache.size(1);
  dim3 grid(num_tokens);
  dim3 block(std::min(num_heads * head_size, 512));
  const at::cuda::OptionalCUDAGuard device_guard(device_of(key));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(key.scalar_type(), "reshape_and_cache", [&] {
    ext::reshape_and_cache_kernel<scalar_t><<<grid, block, 0, stream>>>(
        key.data_ptr<scalar_t>(), value.data_ptr<scalar_t>(), key_cache.data_ptr<scalar_t>(),
        value_cache.data_ptr<scalar_t>(), slot_mapping.data_ptr<int64_t>(), num_heads, head_size, block_size);
  });
}
