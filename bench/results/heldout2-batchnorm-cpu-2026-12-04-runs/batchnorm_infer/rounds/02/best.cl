// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 1024x1 -> parameters BLOCK
//   vector-columns: batchnorm_infer: VW consecutive values of kt_col per work-item as a vector (1 load(s), 1 store(s), 0 vector variable(s))
//   restrict: restrict on 6 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

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
    
    const int kt_c0 = (int)get_global_id(0) * 16;
    if (kt_c0 >= hw) return;
    if (kt_c0 + 16 <= hw) {
        #pragma unroll 4
        for (int kt_row = (int)get_global_id(1); kt_row < batch * channels; kt_row += (int)get_global_size(1)) {
            int c = (kt_row) % channels;
            float inv_std = 1.0f / native_sqrt(var[c] + eps);
            vstore16((float16)((vload16(0, x + (kt_row * hw) + kt_c0) - mean[c]) * inv_std * gamma[c] + beta[c]), 0, out + (kt_row * hw) + kt_c0);
        }
    } else {
        /*kt:generated*/
        for (int kt_col = kt_c0; kt_col < hw; ++kt_col) {
            #pragma unroll 4
        for (int kt_row = (int)get_global_id(1); kt_row < batch * channels; kt_row += (int)get_global_size(1)) {
            int c = (kt_row) % channels;
            float inv_std = 1.0f / native_sqrt(var[c] + eps);
            out[(kt_row * hw + kt_col)] = (x[(kt_row * hw + kt_col)] - mean[c]) * inv_std * gamma[c] + beta[c];
        }
        }
    }

    

}
