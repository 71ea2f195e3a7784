// kerntune: shape r1024-c1024: BLOCK=32,REDUCE_0='tree',VEC=1,UNROLL_0=0,UNROLL_1=8,FAST_FLAGS=False from round 2, 1.444x
// launch: grid ['rows'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 3 index offset(s) hoisted out of 3 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Mean squared difference of each row of two [rows, cols] matrices:
//   out[r] = (1 / cols) * sum_c (a[r][c] - b[r][c])^2
// One work-group of BLOCK work-items per row: each work-item sums a strided slice of the row,
// then the partial sums are added in local memory by a tree reduction.
#define BLOCK   32

__kernel void sq_dist_rows(__global float* restrict out,
                           __global const float* restrict a,
                           __global const float* restrict b,
                           int rows, int cols)
{
    __local float partial[BLOCK];

    int row = get_group_id(0);
    int tid = get_local_id(0);

    float acc = 0.0f;
    
    const int kt_o2 = (row * cols);
    
    for (int c = tid; c < cols; c += BLOCK) {
        float d = a[kt_o2 + c] - b[kt_o2 + c];
        acc += d * d;
    }

    

    
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);

    
    
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (tid < stride)
            partial[tid] += partial[tid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    

    

    if (tid == 0)
        out[row] = partial[0] / cols;
}
