// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   guard-first: 1 declaration(s) moved before the global index, 0 after its bounds check
//   launch-config: block 256 -> parameters BLOCK
//   row-column-grid: batchnorm_infer: i split into row kt_row and column kt_col by a 2-D grid (rows batch * channels, columns hw)
//   unroll: unroll pragmas on 1 loop(s)
//   restrict: restrict on 6 pointer parameter(s)
//   fast-math: 2 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Batch normalization in inference mode (torch.nn.BatchNorm2d in eval()) over NCHW data
// x[batch][channels][hw], with the running statistics:
//   out = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]
// One work-item per element, flat 1-D index; the channel is recovered with / and %.
__kernel void batchnorm_infer(__global float*  out,
                              __global const float*  x,
                              __global const float*  mean,
                              __global const float*  var,
                              __global const float*  gamma,
                              __global const float*  beta,
                              int batch, int channels, int hw,
                              float eps)
{
    int n = batch * channels * hw;
    const int kt_col = (int)get_global_id(0);
    if (kt_col < hw) {
#pragma unroll 4
        for (int kt_row = (int)get_global_id(1); kt_row < batch * channels; kt_row += (int)get_global_size(1)) {
            int c = (kt_row) % channels;
            float inv_std = 1.0f / native_sqrt(var[c] + eps);
            out[(kt_row * hw + kt_col)] = (x[(kt_row * hw + kt_col)] - mean[c]) * inv_std * gamma[c] + beta[c];
        }
    }

}
