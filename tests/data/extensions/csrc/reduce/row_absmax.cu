// Per-row maximum absolute value, one warp-shuffle + shared-memory reduction per block
// (look-alike written for kerntune's tests).
#include <ATen/cuda/CUDAContext.h>
#include <torch/all.h>

#include "ext_common.h"
#include "ext_reduce.cuh"
#include "ext_vec.cuh"

namespace ext {

template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) row_absmax_kernel(float* __restrict__ out, const T* __restrict__ x,
                                                             const int rows, const int cols) {
  const int row = blockIdx.x;
  if (row >= rows) return;
  float m = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, fabsf(to_float(x[(int64_t)row * cols + c])));
  m = block_reduce_max<float>(m);
  if (threadIdx.x == 0) out[row] = m;
}

}  // namespace ext

torch::Tensor row_absmax(const torch::Tensor& x) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  auto out = torch::empty({rows}, x.options().dtype(torch::kFloat32));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  EXT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_absmax", [&] {
    ext::row_absmax_kernel<scalar_t, 512><<<rows, 512, 0, stream>>>(out.data_ptr<float>(), x.data_ptr<scalar_t>(),
                                                                    rows, cols);
  });
  return out;
}
