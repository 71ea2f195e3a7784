// Warp and block reductions for the look-alike extension corpus.
#pragma once

#include "ext_common.h"

namespace ext {

template <typename T>
EXT_DEVICE_INLINE T warp_reduce_sum(T val) {
#pragma unroll
  for (int offset = EXT_WARP_SIZE / 2; offset > 0; offset >>= 1)
    val += __shfl_xor_sync(EXT_FULL_MASK, val, offset);
  return val;
}

template <typename T>
EXT_DEVICE_INLINE T warp_reduce_max(T val) {
#pragma unroll
  for (int offset = EXT_WARP_SIZE / 2; offset > 0; offset >>= 1)
    val = fmaxf(val, __shfl_xor_sync(EXT_FULL_MASK, val, offset));
  return val;
}

// every thread of the block gets the block's sum; blockDim.x a multiple of 32
template <typename T>
EXT_DEVICE_INLINE T block_reduce_sum(T val) {
  __shared__ T partial[EXT_MAX_BLOCK / EXT_WARP_SIZE];
  const int lane = threadIdx.x % EXT_WARP_SIZE;
  const int warp = threadIdx.x / EXT_WARP_SIZE;
  val = warp_reduce_sum(val);
  if (lane == 0) partial[warp] = val;
  __syncthreads();
  const int num_warps = blockDim.x / EXT_WARP_SIZE;
  val = lane < num_warps ? partial[lane] : T(0);
  val = warp_reduce_sum(val);
  __syncthreads();
  return val;
}

template <typename T>
EXT_DEVICE_INLINE T block_reduce_max(T val) {
  __shared__ T partial[EXT_MAX_BLOCK / EXT_WARP_SIZE];
  const int lane = threadIdx.x % EXT_WARP_SIZE;
  const int warp = threadIdx.x / EXT_WARP_SIZE;
  val = warp_reduce_max(val);
  if (lane == 0) partial[warp] = val;
  __syncthreads();
  const int num_warps = blockDim.x / EXT_WARP_SIZE;
  val = lane < num_warps ? partial[lane] : T(-INFINITY);
  val = warp_reduce_max(val);
  __syncthreads();
  return val;
}

}  // namespace ext
