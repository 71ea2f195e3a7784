// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 64 -> parameters BLOCK
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   elements-per-thread: log_softmax_rows: EPT elements per thread, grid divided by EPT
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   fast-math: 4 call(s) of exp, log may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
// out[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r)), the log-softmax of each row.
// One work-item per row: a pass for the max, a pass for the sum of exponentials, a pass
// writing the outputs.
__kernel void log_softmax_rows(__global float* restrict out, __global const float* restrict x,
                               const int rows, const int cols)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 2 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 2; ++kt_e) {
        const int r = kt_first + (int)kt_e * (int)get_local_size(0);
        if (r < rows) {
        __global const float* row = x + (size_t)r * cols;
        __global float* out_row = out + (size_t)r * cols;
        float row_max = row[0];
#pragma unroll 4
        for (int c = 1; c < cols; c++) {
        if (row[c] > row_max)
            row_max = row[c];
    }
        float sum = 0.0f;
            {
        int kt_c0 = 0;
        float16 kt_vacc0 = (float16)(0);
        /*kt:generated*/
        for (; kt_c0 + 16 <= (cols); kt_c0 += 16)
            kt_vacc0 += exp(vload16(0, row + kt_c0) - row_max);
        sum += KT_VACC_HSUM(16, kt_vacc0);
        /*kt:generated*/
        for (int c = kt_c0; c < cols; ++c)
            {
        sum += exp(row[c] - row_max);
    }
    }

        float log_sum = log(sum);
        for (int c = 0; c < cols; c++) {
        out_row[c] = row[c] - row_max - log_sum;
    }
        }
    }
}
