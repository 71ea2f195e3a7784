// Merge two partial attention results by their log-sum-exp values (look-alike of a
// serving-library kernel, written for kerntune's tests). Torch launcher in the same file.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/all.h>

#include <algorithm>
#include <optional>

#include "ext_common.h"
#include "ext_vec.cuh"

namespace ext {

// One thread merges one 16-byte pack of one (token, head) pair.
template <typename scalar_t, uint NUM_THREADS>
__global__ void merge_attn_states_kernel(scalar_t* output, float* output_lse, const scalar_t* prefix_output,
                                         const float* prefix_lse, const scalar_t* suffix_output,
                                         const float* suffix_lse, const uint num_tokens, const uint num_heads,
                                         const uint head_size) {
  using pack_128b_t = uint4;
  const uint pack_size = 16 / sizeof(scalar_t);
  const uint threads_per_head = head_size / pack_size;

  const uint global_idx = blockIdx.x * NUM_THREADS + threadIdx.x;
  const uint token_head_threads = num_tokens * num_heads * threads_per_head;
  if (global_idx >= token_head_threads) return;

  const uint token_head_idx = global_idx / threads_per_head;
  const uint pack_idx = global_idx % threads_per_head;
  const uint token_idx = token_head_idx / num_heads;
  const uint head_idx = token_head_idx % num_heads;

  const uint pack_offset = pack_idx * pack_size;
  const uint head_offset = token_idx * num_heads * head_size + head_idx * head_size;
  const scalar_t* prefix_head_ptr = prefix_output + head_offset;
  const scalar_t* suffix_head_ptr = suffix_output + head_offset;
  scalar_t* output_head_ptr = output + head_offset;

  float p_lse = prefix_lse[head_idx * num_tokens + token_idx];
  float s_lse = suffix_lse[head_idx * num_tokens + token_idx];
  p_lse = isinf(p_lse) ? -INFINITY : p_lse;
  s_lse = isinf(s_lse) ? -INFINITY : s_lse;

  const float max_lse = fmaxf(p_lse, s_lse);
  p_lse = p_lse - max_lse;
  s_lse = s_lse - max_lse;
  const float p_se = __expf(p_lse);
  const float s_se = __expf(s_lse);
  const float out_se = p_se + s_se;
  const float p_scale = p_se / out_se;
  const float s_scale = s_se / out_se;

  pack_128b_t p_pack = reinterpret_cast<const pack_128b_t*>(prefix_head_ptr)[pack_offset / pack_size];
  pack_128b_t s_pack = reinterpret_cast<const pack_128b_t*>(suffix_head_ptr)[pack_offset / pack_size];
  pack_128b_t o_pack;
#pragma unroll
  for (uint i = 0; i < pack_size; ++i) {
    const float p_val = to_float(reinterpret_cast<const scalar_t*>(&p_pack)[i]);
    const float s_val = to_float(reinterpret_cast<const scalar_t*>(&s_pack)[i]);
    reinterpret_cast<scalar_t*>(&o_pack)[i] = from_float<scalar_t>(p_val * p_scale + s_val * s_scale);
  }
  reinterpret_cast<pack_128b_t*>(output_head_ptr)[pack_offset / pack_size] = o_pack;

  if (output_lse != nullptr && pack_idx == 0) {
    const float out_lse = __logf(out_se) + max_lse;
    output_lse[head_idx * num_tokens + token_idx] = out_lse;
  }
}

}  // namespace ext

// ---- host side -------------------------------------------------------------------------
#define LAUNCH_MERGE_ATTN_STATES(scalar_t, NUM_THREADS)                                        \
  {                                                                                            \
    ext::merge_attn_states_kernel<scalar_t, NUM_THREADS><<<grid, block, 0, stream>>>(          \
        reinterpret_cast<scalar_t*>(output.data_ptr()), output_lse_ptr,                       \
        reinterpret_cast<scalar_t*>(prefix_output.data_ptr()),                                \
        reinterpret_cast<float*>(prefix_lse.data_ptr()),                                      \
        reinterpret_cast<scalar_t*>(suffix_output.data_ptr()),                                \
        reinterpret_cast<float*>(suffix_lse.data_ptr()), num_tokens, num_heads, head_size);   \
  }

template <typename scalar_t>
void merge_attn_states_launcher(torch::Tensor& output, std::optional<torch::Tensor> output_lse,
                                const torch::Tensor& prefix_output, const torch::Tensor& prefix_lse,
                                const torch::Tensor& suffix_output, const torch::Tensor& suffix_lse) {
  constexpr uint NUM_THREADS = 128;
  const uint num_tokens = output.size(0);
  const uint num_heads = output.size(1);
  const uint head_size = output.size(2);
  const uint pack_size = 16 / sizeof(scalar_t);
  TORCH_CHECK(head_size % pack_size == 0, "head_size must be a multiple of ", pack_size);
  float* output_lse_ptr = output_lse.has_value() ? reinterpret_cast<float*>(output_lse->data_ptr()) : nullptr;
  const uint threads_per_head = head_size / pack_size;
  const uint total_threads = num_tokens * num_heads * threads_per_head;
  dim3 block(NUM_THREADS);
  dim3 grid((total_threads + NUM_THREADS - 1) / NUM_THREADS);
  const c10::cuda::OptionalCUDAGuard device_guard(prefix_output.device());
  auto stream = at::cuda::getCurrentCUDAStream();
  LAUNCH_MERGE_ATTN_STATES(scalar_t, NUM_THREADS);
}

void merge_attn_states(torch::Tensor& output, std::optional<torch::Tensor> output_lse,
                       const torch::Tensor& prefix_output, const torch::Tensor& prefix_lse,
                       const torch::Tensor& suffix_output, const torch::Tensor& suffix_lse) {
  EXT_CHECK_INPUT(prefix_output);
  EXT_CHECK_INPUT(suffix_output);
  if (output.scalar_type() == at::ScalarType::Float) {
    merge_attn_states_launcher<float>(output, output_lse, prefix_output, prefix_lse, suffix_output, suffix_lse);
  } else if (output.scalar_type() == at::ScalarType::Half) {
    merge_attn_states_launcher<__half>(output, output_lse, prefix_output, prefix_lse, suffix_output, suffix_lse);
  } else if (output.scalar_type() == at::ScalarType::BFloat16) {
    merge_attn_states_launcher<__nv_bfloat16>(output, output_lse, prefix_output, prefix_lse, suffix_output,
                                              suffix_lse);
  } else {
    TORCH_CHECK(false, "unsupported dtype ", output.scalar_type());
  }
}
