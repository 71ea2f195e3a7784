// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64x1 -> parameters BLOCK
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   elements-per-thread: group_norm: EPT elements per thread, grid divided by EPT
//   unroll: unroll pragmas on 2 loop(s)
//   fast-math: 1 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
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
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 8 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 8; ++kt_e) {
        const int g = kt_first + (int)kt_e * (int)get_local_size(0);
        if (g < groups) {
        for (int b = (int)get_global_id(1); b < batch; b += (int)get_global_size(1)) {
            int cpg = channels / groups;
            int count = cpg * hw;
            int base = (b * channels + g * cpg) * hw;    // a group's elements are contiguous

            float sum = 0.0f;
            
            
            {
                int kt_c0 = 0;
                float4 kt_vacc0 = (float4)(0);
                /*kt:generated*/
                for (; kt_c0 + 4 <= (count); kt_c0 += 4)
                    kt_vacc0 += vload4(0, x + (base) + kt_c0);
                sum += KT_VACC_HSUM(4, kt_vacc0);
                /*kt:generated*/
                for (int i = kt_c0; i < count; ++i)
                    sum += x[base + i];
            }

            

            
            float mean = sum / count;

            float sq = 0.0f;
#pragma unroll 4
            for (int i = 0; i < count; i++) {
                float d = x[base + i] - mean;
                sq += d * d;
            }
            float rstd = 1.0f / sqrt(sq / count + eps);

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

}
