// kerntune: shape b1-c32-112x112: BLOCK=256,EPT=1,RESTRICT=False,FAST_MATH=False,FAST_FLAGS=False from round 2, 1.382x
// launch: grid ['ceil_div(batch * channels * hw, 256 * 1)'], block [256], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: batchnorm_infer: the 1 elements per thread of an earlier round as a parameter again
//   restrict: restrict on 6 pointer parameter(s)
//   fast-math: 1 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   guard-first: 1 declaration(s) moved before the global index, 0 after its bounds check
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: batchnorm_infer: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 6 pointer parameter(s)
//   fast-math: 1 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Batch normalization in inference mode (torch.nn.BatchNorm2d in eval()) over NCHW data
// x[batch][channels][hw], with the running statistics:
//   out = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]
// One work-item per element, flat 1-D index; the channel is recovered with / and %.
__kernel void batchnorm_infer(__global float*   out,
                              __global const float*   x,
                              __global const float*   mean,
                              __global const float*   var,
                              __global const float*   gamma,
                              __global const float*   beta,
                              int batch, int channels, int hw,
                              float eps)
{
    int n = batch * channels * hw;
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < n) {
        int c = (i / hw) % channels;
        float inv_std = 1.0f / sqrt(var[c] + eps);
        out[i] = (x[i] - mean[c]) * inv_std * gamma[c] + beta[c];
        }
    }
}
