// Type conversions and packed vector types for the look-alike extension corpus.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include "ext_common.h"

namespace ext {

EXT_DEVICE_INLINE float to_float(float x) { return x; }
EXT_DEVICE_INLINE float to_float(__half x) { return __half2float(x); }
EXT_DEVICE_INLINE float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
EXT_DEVICE_INLINE T from_float(float x);
template <>
EXT_DEVICE_INLINE float from_float<float>(float x) { return x; }
template <>
EXT_DEVICE_INLINE __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
EXT_DEVICE_INLINE __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// N elements of T moved as one aligned access
template <typename T, int N>
struct alignas(sizeof(T) * N) vec_t {
  T data[N];
};

// how many elements of T fit in 16 bytes
template <typename T>
struct pack_traits {
  static constexpr int kElems = 16 / sizeof(T);
};

}  // namespace ext

// host side: the element size of a tensor, for the launchers
inline int64_t ext_element_size(const at::Tensor& t) { return t.element_size(); }
