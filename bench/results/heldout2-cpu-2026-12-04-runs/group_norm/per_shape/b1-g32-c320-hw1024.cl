// kerntune: shape b1-g32-c320-hw1024: BLOCK=1024,GRID2D=True,VACC=16,UNROLL_0=2,UNROLL_1=8,RESTRICT=True,FAST_MATH=True,FAST_FLAGS=True from round 1, 15.453x
// launch: grid ['ceil_div(groups, 1024)', 'batch'], block [1024, 1], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 32 -> parameters BLOCK
//   row-column-grid: group_norm: bg split into row b and column g by a 2-D grid (rows batch, columns groups)
//   vector-accumulators: 2 serial sum(s) over consecutive elements taken VACC at a time
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 4 pointer parameter(s)
//   fast-math: 2 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
// Group normalization (torch.nn.GroupNorm, affine) of x[batch][channels][hw]:
// the channels are split into `groups` groups of channels/groups consecutive channels; each
// (sample, group) is normalized with its own mean and biased variance, then scaled and shifted
// per channel:  out = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c].
// One work-item per (sample, group), looping over the group's elements: a pass for the mean,
// a pass for the variance, a pass to write the output.
__kernel void group_norm(__global float* restrict out,
                         __global const float* restrict x,
                         __global const float* restrict gamma,
                         __global const float* restrict beta,
                         int batch, int channels, int hw, int groups,
                         float eps)
{
    const int g = (int)get_global_id(0);
    if (g < groups) {
        for (int b = (int)get_global_id(1); b < batch; b += (int)get_global_size(1)) {
            int cpg = channels / groups;
            int count = cpg * hw;
            int base = (b * channels + g * cpg) * hw;    // a group's elements are contiguous

            float sum = 0.0f;
            
            {
                int kt_c1 = 0;
                float16 kt_vacc1 = (float16)(0);
                /*kt:generated*/
                for (; kt_c1 + 16 <= (count); kt_c1 += 16)
                    kt_vacc1 += vload16(0, x + (base) + kt_c1);
                sum += KT_VACC_HSUM(16, kt_vacc1);
                /*kt:generated*/
                for (int i = kt_c1; i < count; ++i)
                    sum += x[base + i];
            }

            
            float mean = sum / count;

            float sq = 0.0f;
            for (int i = 0; i < count; i++) {
                float d = x[base + i] - mean;
                sq += d * d;
            }
            float rstd = 1.0f / native_sqrt(sq / count + eps);

            for (int c = 0; c < cpg; c++) {
                int ch = g * cpg + c;
                float ga = gamma[ch];
                float be = beta[ch];
                for (int j = 0; j < hw; j++) {
                    int idx = base + c * hw + j;
                    out[idx] = (x[idx] - mean) * rstd * ga + be;
                }
            }
        }
    }

}
