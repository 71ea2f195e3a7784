// Mixture-of-experts routing: per token, a softmax over the gating logits and the k experts with the
// largest weights, in the style of vLLM's topk_softmax (look-alike written for kerntune's tests).
// One block per token; each pass picks the best expert not picked yet by an arg-max over the block, and
// with renormalize the k weights are scaled to sum to 1.
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

#include "ext_common.h"

template <int TPB>
__global__ void __launch_bounds__(TPB) topk_gating_kernel(const float* __restrict__ gating_output,  // [tokens, E]
                                                          float* __restrict__ topk_weights,         // [tokens, k]
                                                          int* __restrict__ topk_ids,               // [tokens, k]
                                                          const int num_experts, const int k,
                                                          const bool renormalize) {
  __shared__ float s_val[TPB];
  __shared__ int s_idx[TPB];
  __shared__ float s_max, s_sum;
  const int token = blockIdx.x;
  const float* logits = gating_output + (int64_t)token * num_experts;

  // softmax normalisation of this token's logits
  float m = -INFINITY;
  for (int e = threadIdx.x; e < num_experts; e += TPB) m = fmaxf(m, logits[e]);
  s_val[threadIdx.x] = m;
  __syncthreads();
  for (int step = TPB / 2; step > 0; step >>= 1) {
    if (threadIdx.x < step) s_val[threadIdx.x] = fmaxf(s_val[threadIdx.x], s_val[threadIdx.x + step]);
    __syncthreads();
  }
  if (threadIdx.x == 0) s_max = s_val[0];
  __syncthreads();
  float sum = 0.0f;
  for (int e = threadIdx.x; e < num_experts; e += TPB) sum += __expf(logits[e] - s_max);
  s_val[threadIdx.x] = sum;
  __syncthreads();
  for (int step = TPB / 2; step > 0; step >>= 1) {
    if (threadIdx.x < step) s_val[threadIdx.x] += s_val[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) s_sum = s_val[0];
  __syncthreads();

  // k passes of an arg-max over the experts not chosen yet
  for (int j = 0; j < k; ++j) {
    float best = -INFINITY;
    int best_e = num_experts;
    for (int base = 0; base < num_experts; base += TPB) {
      const int e = base + threadIdx.x;
      bool taken = false;
      for (int p = 0; p < j; ++p) taken |= topk_ids[token * k + p] == e;
      const float v = e < num_experts ? gating_output[token * num_experts + e] : -INFINITY;
      if (!taken && v > best) {
        best = v;
        best_e = e;
      }
    }
    s_val[threadIdx.x] = best;
    s_idx[threadIdx.x] = best_e;
    __syncthreads();
    for (int step = TPB / 2; step > 0; step >>= 1) {
      if (threadIdx.x < step) {
        const float o = s_val[threadIdx.x + step];
        const int oi = s_idx[threadIdx.x + step];
        if (o > s_val[threadIdx.x] || (o == s_val[threadIdx.x] && oi < s_idx[threadIdx.x])) {
          s_val[threadIdx.x] = o;
          s_idx[threadIdx.x] = oi;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      topk_weights[token * k + j] = __expf(s_val[0] - s_max) / s_sum;
      topk_ids[token * k + j] = s_idx[0];
    }
    __syncthreads();
  }
  // the k weights renormalised to sum to 1, read back by the thread that wrote them
  if (renormalize && threadIdx.x == 0) {
    float picked = 0.0f;
    for (int j = 0; j < k; ++j) picked += topk_weights[token * k + j];
    for (int j = 0; j < k; ++j) topk_weights[token * k + j] /= picked;
  }
}

void topk_gating(torch::Tensor& topk_weights, torch::Tensor& topk_ids, const torch::Tensor& gating_output,
                 bool renormalize) {
  EXT_CHECK_INPUT(gating_output);
  const int num_tokens = gating_output.size(0);
  const int num_experts = gating_output.size(1);
  const int k = topk_weights.size(1);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  topk_gating_kernel<256><<<num_tokens, 256, 0, stream>>>(gating_output.data_ptr<float>(),
                                                          topk_weights.data_ptr<float>(),
                                                          topk_ids.data_ptr<int>(), num_experts, k,
                                                          renormalize);
}
