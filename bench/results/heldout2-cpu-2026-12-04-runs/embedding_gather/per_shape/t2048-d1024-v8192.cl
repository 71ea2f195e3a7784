// kerntune: shape t2048-d1024-v8192: BLOCK_X=128,BLOCK_Y=8,RESTRICT=False,FAST_FLAGS=True from round 3, 1.272x
// launch: grid ['ceil_div(dim, 128)', 'ceil_div(tokens, 8)'], block [128, 8], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 3). Applied rules:
//   launch-config: block 64x8 -> parameters BLOCK_X, BLOCK_Y
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64x4 -> parameters BLOCK_X, BLOCK_Y
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 32x8 -> parameters BLOCK_X, BLOCK_Y
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Token embedding lookup with the output scale some models apply (Gemma: sqrt(hidden)):
//   out[t][d] = table[ids[t]][d] * scale
// 2-D launch: dimension 0 walks the hidden dimension, dimension 1 the tokens.
__kernel void embedding_gather(__global float*    out,
                               __global const int*    ids,
                               __global const float*    table,
                               float scale,
                               int tokens, int dim)
{
    int d = get_global_id(0);
    int t = get_global_id(1);
    if (d >= dim || t >= tokens)
        return;

    int row = ids[t];
    out[t * dim + d] = table[row * dim + d] * scale;
}
