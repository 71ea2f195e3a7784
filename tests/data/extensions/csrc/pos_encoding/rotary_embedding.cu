// Rotary position embedding applied in place to query and key, positions looked up in a
// cos/sin cache (look-alike of a serving-library kernel, written for kerntune's tests).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/all.h>

#include "ext_common.h"
#include "ext_vec.cuh"

namespace ext {

template <typename scalar_t, bool IS_NEOX>
EXT_DEVICE_INLINE void apply_rotary(scalar_t* __restrict__ arr, const scalar_t* __restrict__ cos_ptr,
                                    const scalar_t* __restrict__ sin_ptr, int rot_offset, int embed_dim) {
  int x_index, y_index;
  float cos_v, sin_v;
  if (IS_NEOX) {
    x_index = rot_offset;
    y_index = embed_dim + rot_offset;
    cos_v = to_float(__ldg(cos_ptr + x_index));
    sin_v = to_float(__ldg(sin_ptr + x_index));
  } else {
    x_index = 2 * rot_offset;
    y_index = 2 * rot_offset + 1;
    cos_v = to_float(__ldg(cos_ptr + x_index / 2));
    sin_v = to_float(__ldg(sin_ptr + x_index / 2));
  }
  const float x = to_float(arr[x_index]);
  const float y = to_float(arr[y_index]);
  arr[x_index] = from_float<scalar_t>(x * cos_v - y * sin_v);
  arr[y_index] = from_float<scalar_t>(y * cos_v + x * sin_v);
}

template <typename scalar_t, bool IS_NEOX>
__global__ void rotary_embedding_kernel(const int64_t* __restrict__ positions,  // [num_tokens]
                                        scalar_t* __restrict__ query,           // [num_tokens, num_heads, head_size]
                                        scalar_t* __restrict__ key,             // [num_tokens, num_kv_heads, head_size]
                                        const scalar_t* __restrict__ cos_sin_cache,  // [max_position, rot_dim]
                                        const int rot_dim, const int64_t query_stride, const int64_t key_stride,
                                        const int num_heads, const int num_kv_heads, const int head_size) {
  const int token_idx = blockIdx.x;
  const int64_t pos = positions[token_idx];
  const scalar_t* cache_ptr = cos_sin_cache + pos * rot_dim;
  const int embed_dim = rot_dim / 2;
  const scalar_t* cos_ptr = cache_ptr;
  const scalar_t* sin_ptr = cache_ptr + embed_dim;

  const int nq = num_heads * embed_dim;
  for (int i = threadIdx.x; i < nq; i += blockDim.x) {
    const int head_idx = i / embed_dim;
    const int64_t token_head = token_idx * query_stride + head_idx * head_size;
    const int rot_offset = i % embed_dim;
    apply_rotary<scalar_t, IS_NEOX>(query + token_head, cos_ptr, sin_ptr, rot_offset, embed_dim);
  }
  const int nk = num_kv_heads * embed_dim;
  for (int i = threadIdx.x; i < nk; i += blockDim.x) {
    const int head_idx = i / embed_dim;
    const int64_t token_head = token_idx * key_stride + head_idx * head_size;
    const int rot_offset = i % embed_dim;
    apply_rotary<scalar_t, IS_NEOX>(key + token_head, cos_ptr, sin_ptr, rot_offset, embed_dim);
  }
}

}  // namespace ext

void rotary_embedding(torch::Tensor& positions, torch::Tensor& query, torch::Tensor& key, int64_t head_size,
                      torch::Tensor& cos_sin_cache, bool is_neox) {
  const int64_t num_tokens = positions.numel();
  const int rot_dim = cos_sin_cache.size(1);
  const int num_heads = query.size(-1) / head_size;
  const int num_kv_heads = key.size(-1) / head_size;
  const int64_t query_stride = query.stride(-2);
  const int64_t key_stride = key.stride(-2);
  dim3 grid(num_tokens);
  dim3 block(std::min<int64_t>(num_heads * rot_dim / 2, 512));
  const at::cuda::OptionalCUDAGuard device_guard(device_of(query));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(query.scalar_type(), "rotary_embedding", [&] {
    if (is_neox) {
      ext::rotary_embedding_kernel<scalar_t, true><<<grid, block, 0, stream>>>(
          positions.data_ptr<int64_t>(), query.data_ptr<scalar_t>(), key.data_ptr<scalar_t>(),
          cos_sin_cache.data_ptr<scalar_t>(), rot_dim, query_stride, key_stride, num_heads, num_kv_heads, head_size);
    } else {
      ext::rotary_embedding_kernel<scalar_t, false><<<grid, block, 0, stream>>>(
          positions.data_ptr<int64_t>(), query.data_ptr<scalar_t>(), key.data_ptr<scalar_t>(),
          cos_sin_cache.data_ptr<scalar_t>(), rot_dim, query_stride, key_stride, num_heads, num_kv_heads, head_size);
    }
  });
}
