// Count how many (token, k) routing slots picked each expert: per-block histogram in
// dynamic shared memory, merged into the global counts with atomics (look-alike written
// for kerntune's tests). expert_counts must be zeroed by the caller.
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

#include "ext_common.h"

template <typename index_t>
__global__ void count_expert_tokens_kernel(const index_t* __restrict__ topk_ids,  // [numel]
                                           int32_t* __restrict__ expert_counts,   // [num_experts]
                                           const int64_t numel, const int num_experts) {
  extern __shared__ int32_t local_counts[];
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) local_counts[e] = 0;
  __syncthreads();
  const int64_t stride = (int64_t)blockDim.x * gridDim.x;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += stride) {
    atomicAdd(&local_counts[topk_ids[i]], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) atomicAdd(expert_counts + e, local_counts[e]);
}

void moe_expert_count(torch::Tensor topk_ids, torch::Tensor expert_counts, int64_t num_experts) {
  EXT_CHECK_INPUT(topk_ids);
  const int64_t numel = topk_ids.numel();
  const int threads = 256;
  const int blocks = std::min<int64_t>(EXT_CEIL_DIV(numel, threads), 1024);
  const size_t smem = num_experts * sizeof(int32_t);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_INDEX_TYPES(topk_ids.scalar_type(), "moe_expert_count", [&] {
    count_expert_tokens_kernel<index_t><<<blocks, threads, smem, stream>>>(
        topk_ids.data_ptr<index_t>(), expert_counts.data_ptr<int32_t>(), numel, num_experts);
  });
}
