// Helpers of the int8 quantization kernels (look-alike corpus for kerntune's tests).
#pragma once

#include <cuda_fp16.h>
#include <cstdint>

#define QUANT_INT8_MAX 127.0f
#define QUANT_MIN_SCALE 1e-10f

__device__ __forceinline__ int8_t float_to_int8_rn(float x) {
  const float r = rintf(x);
  return static_cast<int8_t>(fminf(fmaxf(r, -QUANT_INT8_MAX), QUANT_INT8_MAX));
}
