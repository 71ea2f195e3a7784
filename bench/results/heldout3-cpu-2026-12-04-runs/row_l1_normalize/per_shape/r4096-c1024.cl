// kerntune: shape r4096-c1024: BLOCK=32,REDUCE_0='tree',VEC=1,HOIST=True,UNROLL_0=4,UNROLL_1=2,RESTRICT=True,FAST_FLAGS=True from round 1, 1.795x
// launch: grid ['rows'], block [32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK; 1 literal(s) rewritten
//   shuffle-reduction: 1 shared-memory tree(s) may reduce with sub-group reductions
//   vectorize: 2 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 5 index offset(s) hoisted out of 5 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// out[r, c] = x[r, c] / max(sum_c |x[r, c]|, eps): each row scaled to unit L1 norm.
// One work-group of 128 work-items per row: each sums |x| over a strided slice of the row,
// the group adds the partial sums in local memory, then every work-item writes its slice.
#define BLOCK  32

__kernel void row_l1_normalize(__global float* restrict out, __global const float* restrict x,
                               const int rows, const int cols, const float eps)
{
    __local float partial[BLOCK];
    int row = get_group_id(0);
    int tid = get_local_id(0);

    float acc = 0.0f;
    
    const int kt_o1 = (row * cols);
    for (int c = tid; c < cols; c += BLOCK) {
        acc += fabs(x[kt_o1 + c]);
    }

    
    partial[tid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);

    
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            partial[tid] += partial[tid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    

    float norm = fmax(partial[0], eps);
    
    const int kt_o4 = (row * cols);
    for (int c = tid; c < cols; c += BLOCK) {
        out[kt_o4 + c] = x[kt_o4 + c] / norm;
    }

    
}
