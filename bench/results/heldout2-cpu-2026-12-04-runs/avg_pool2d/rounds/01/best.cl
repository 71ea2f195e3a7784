// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 16x16 -> parameters BLOCK
//   vector-accumulators: 1 serial sum(s) over consecutive elements taken VACC at a time
//   hoist-invariants: 0 loop-invariant load(s), 1 index offset(s) hoisted out of 1 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

#ifndef KT_HAVE_VACC_HSUM
#define KT_HAVE_VACC_HSUM 1
#define KT_VACC_HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define KT_VACC_HSUM8(v) (KT_VACC_HSUM4((v).lo) + KT_VACC_HSUM4((v).hi))
#define KT_VACC_HSUM16(v) (KT_VACC_HSUM8((v).lo) + KT_VACC_HSUM8((v).hi))
#define KT_VACC_HSUM(n, v) KT_VACC_HSUM_(n, v)
#define KT_VACC_HSUM_(n, v) KT_VACC_HSUM##n(v)
#endif
// 2-D average pooling, window k x k, stride k, no padding, floor mode (a partial window at the
// bottom or right edge is dropped), over x[planes][h][w] where planes = batch * channels:
//   out[p][oy][ox] = mean of x[p][oy*k + dy][ox*k + dx], 0 <= dy, dx < k
// 2-D launch: dimension 0 walks the output columns, dimension 1 the (plane, output row) pairs.
__kernel void avg_pool2d(__global float* restrict out,
                         __global const float* restrict x,
                         int planes, int h, int w, int k)
{
    int ox = get_global_id(0);
    int py = get_global_id(1);      // plane * out_h + oy
    int out_h = h / k;
    int out_w = w / k;

    if (ox < out_w && py < planes * out_h) {
        int p = py / out_h;
        int oy = py % out_h;
        float acc = 0.0f;
        for (int dy = 0; dy < k; dy++) {
            
            const int kt_o0 = ((p * h + oy * k + dy) * w) + (ox * k);
#pragma unroll 8
            for (int dx = 0; dx < k; dx++) {
                acc += x[kt_o0 + dx];
            }

            
        }
        out[py * out_w + ox] = acc / (float)(k * k);
    }
}
