// kerntune: shape r160-c11008: BLOCK=32,REDUCE_0='tree',VEC=1,HOIST=True,UNROLL_0=4,UNROLL_1=4,FAST_FLAGS=True from round 2, 1.101x
// launch: grid ['rows'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 32 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 2 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 5 index offset(s) hoisted out of 5 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 2 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 5 index offset(s) hoisted out of 5 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Symmetric per-row int8 quantization (absmax, as in LLM.int8 / W8A8 activation quantization):
//   scale[r] = max_c |x[r][c]| / 127
//   q[r][c]  = clamp(round(x[r][c] / scale[r]), -127, 127)      (0 for an all-zero row)
// One work-group of 256 per row: a strided pass finds each work-item's max, a tree in
// local memory combines them, then the same work-items write the codes.

#define BLOCK   32

__kernel void absmax_quant_rows(__global char* restrict q,
                                __global float* restrict scale,
                                __global const float* restrict x,
                                int rows, int cols)
{
    __local float red[BLOCK];

    int row = get_group_id(0);
    int tid = get_local_id(0);

    float m = 0.0f;
    
    
    const int kt_o1 = (row * cols);
    for (int c = tid; c < cols; c += BLOCK) {
        m = fmax(m, fabs(x[kt_o1 + c]));
    }

    

    
    red[tid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);

    
    
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (tid < s)
            red[tid] = fmax(red[tid], red[tid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    

    

    float sc = red[0] / 127.0f;
    if (tid == 0)
        scale[row] = sc;

    float inv = 0.0f;
    if (sc > 0.0f)
        inv = 1.0f / sc;
    
    
    const int kt_o4 = (row * cols);
    for (int c = tid; c < cols; c += BLOCK) {
        float v = rint(x[kt_o4 + c] * inv);
        v = clamp(v, -127.0f, 127.0f);
        q[kt_o4 + c] = (char)v;
    }

    

    
}
