// Rewritten by kerntune's rule catalog (round 3). Applied rules:
//   launch-config: block 32 -> parameters BLOCK; 1 literal(s) rewritten
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 2). Applied rules:
//   launch-config: block 64 -> parameters BLOCK; 1 literal(s) rewritten
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   unroll: unroll pragmas on 2 loop(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 128 -> parameters BLOCK; 1 literal(s) rewritten
//   vectorize: 1 block-strided loop(s) take VEC consecutive elements per thread
//   hoist-invariants: 0 loop-invariant load(s), 3 index offset(s) hoisted out of 3 loop(s)
//   unroll: unroll pragmas on 2 loop(s)
//   restrict: restrict on 3 pointer parameter(s)
//   fast-math: 2 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Cosine similarity of matching rows of a and b (torch.nn.functional.cosine_similarity, dim=1):
//   out[r] = dot(a[r], b[r]) / max(|a[r]| * |b[r]|, eps)
// One work-group of 128 per row: each work-item accumulates the three sums over a strided
// slice of the row, then three trees in local memory combine them.

#define WG    32

__kernel void cosine_sim_rows(__global float* restrict out,
                              __global const float* restrict a,
                              __global const float* restrict b,
                              int rows, int cols, float eps)
{
    __local float s_ab[WG];
    __local float s_aa[WG];
    __local float s_bb[WG];

    int r = get_group_id(0);
    int lid = get_local_id(0);

    float ab = 0.0f, aa = 0.0f, bb = 0.0f;
    
    const int kt_o2 = (r * cols);
    
    
    for (int c = lid; c < cols; c += WG) {
        float x = a[kt_o2 + c];
        float y = b[kt_o2 + c];
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }

    

    

    
    s_ab[lid] = ab;
    s_aa[lid] = aa;
    s_bb[lid] = bb;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int stride = WG / 2; stride > 0; stride >>= 1) {
        if (lid < stride) {
            s_ab[lid] += s_ab[lid + stride];
            s_aa[lid] += s_aa[lid + stride];
            s_bb[lid] += s_bb[lid + stride];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (lid == 0) {
        float denom = native_sqrt(s_aa[0]) * native_sqrt(s_bb[0]);
        out[r] = s_ab[0] / fmax(denom, eps);
    }
}
