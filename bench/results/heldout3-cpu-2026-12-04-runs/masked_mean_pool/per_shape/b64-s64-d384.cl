// kerntune: shape b64-s64-d384: BLOCK=32,VW=16,UNROLL_0=0,UNROLL_1=2,RESTRICT=False,FAST_FLAGS=False from round 2, 8.974x
// launch: grid ['ceil_div(dim, 32 * 16)', 'batch'], block [32, 1], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64x1 -> parameters BLOCK
//   vector-columns: masked_mean_pool: VW consecutive values of d per work-item as a vector (1 load(s), 1 store(s), 1 vector variable(s))
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   row-column-grid: masked_mean_pool: idx split into row b and column d by a 2-D grid (rows batch, columns dim)
//   hoist-invariants: 0 loop-invariant load(s), 2 index offset(s) hoisted out of 2 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Mean of each sequence's unmasked token vectors:
//   out[b, d] = sum_t mask[b, t] * x[b, t, d] / max(sum_t mask[b, t], 1)
// x is [batch, seq, dim], mask is [batch, seq] of 0/1 (1 = real token, 0 = padding).
// One work-item per output element; the flat index is split into (b, d).
__kernel void masked_mean_pool(__global float*   out, __global const float*   x,
                               __global const int*   mask,
                               const int batch, const int seq, const int dim)
{
    
    const int kt_c0 = (int)get_global_id(0) * 16;
    if (kt_c0 >= dim) return;
    if (kt_c0 + 16 <= dim) {
        for (int b = (int)get_global_id(1); b < batch; b += (int)get_global_size(1)) {

            float16 sum = (float16)(0.0f);
            int count = 0;
            const int kt_o1 = (b * seq);
            for (int t = 0; t < seq; t++) {
                int m = mask[kt_o1 + t];
                sum += (float)m * vload16(0, x + (((size_t)b * seq + t) * dim) + kt_c0);
                count += m;
            }

            vstore16((float16)(sum / (float)max(count, 1)), 0, out + (b * dim) + kt_c0);
        }
    } else {
        /*kt:generated*/
        for (int d = kt_c0; d < dim; ++d) {
            for (int b = (int)get_global_id(1); b < batch; b += (int)get_global_size(1)) {

            float sum = 0.0f;
            int count = 0;
            const int kt_o1 = (b * seq);
#pragma unroll 2
            for (int t = 0; t < seq; t++) {
                int m = mask[kt_o1 + t];
                sum += (float)m * x[((size_t)b * seq + t) * dim + d];
                count += m;
            }

            out[(b * dim + d)] = sum / (float)max(count, 1);
        }
        }
    }

    

}
