// kerntune: shape c2048-s512: BLOCK=512,GRID2D=True,HOIST=False,UNROLL_0=0,UNROLL_1=2,RESTRICT=False,FAST_MATH=False,FAST_FLAGS=False from round 1, 3.498x
// launch: grid ['ceil_div(seqlen, 512)', 'channels'], block [512, 1], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   row-column-grid: causal_conv1d: idx split into row c and column t by a 2-D grid (rows channels, columns seqlen)
//   hoist-invariants: 0 loop-invariant load(s), 2 index offset(s) hoisted out of 2 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 4 pointer parameter(s)
//   fast-math: 1 call(s) of exp may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Depthwise causal 1-D convolution followed by SiLU (as in Mamba's conv1d):
//   y[c][t] = bias[c] + sum_k w[c][k] * x[c][t - (width - 1) + k]   (x is zero before t = 0)
//   out[c][t] = silu(y[c][t])
// One work-item per output element.

float silu(float v)
{
    return v / (1.0f + exp(-v));
}

__kernel void causal_conv1d(__global float*  out,
                            __global const float*  x,
                            __global const float*  w,
                            __global const float*  bias,
                            int channels, int seqlen, int width)
{
    const int t = (int)get_global_id(0);
    if (t < seqlen) {
        for (int c = (int)get_global_id(1); c < channels; c += (int)get_global_size(1)) {

            float acc = bias[c];
            for (int k = 0; k < width; k++) {
                int src = t - (width - 1) + k;
                if (src >= 0)
                    acc += w[c * width + k] * x[c * seqlen + src];
            }

            out[(c * seqlen + t)] = silu(acc);
        }
    }

}
