// Shared helpers of the look-alike extension corpus (written for kerntune's tests,
// in the style of a PyTorch CUDA extension: device macros next to host-side checks).
#pragma once

#include <cuda_runtime.h>
#include <torch/all.h>
#include <c10/cuda/CUDAGuard.h>

#define EXT_DEVICE_INLINE __device__ __forceinline__
#define EXT_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#define EXT_WARP_SIZE 32
#define EXT_FULL_MASK 0xffffffffu
#define EXT_MAX_BLOCK 1024
#define EXT_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

// host-side argument checks
#define EXT_CHECK_CUDA(x) TORCH_CHECK((x).is_cuda(), #x " must be a CUDA tensor")
#define EXT_CHECK_CONTIGUOUS(x) TORCH_CHECK((x).is_contiguous(), #x " must be contiguous")
#define EXT_CHECK_INPUT(x) \
  EXT_CHECK_CUDA(x);       \
  EXT_CHECK_CONTIGUOUS(x)

// dispatch over the half-precision types (and fp32) that the kernels support
#define EXT_DISPATCH_CASE_FLOATING_TYPES(...)              \
  AT_DISPATCH_CASE(at::ScalarType::Float, __VA_ARGS__)     \
  AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__)      \
  AT_DISPATCH_CASE(at::ScalarType::BFloat16, __VA_ARGS__)
#define EXT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, EXT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__))

inline int ext_num_sms(int device) {
  int count = 0;
  cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
  return count;
}

EXT_HOST_DEVICE_INLINE int ext_ceil_div(int a, int b) { return (a + b - 1) / b; }
