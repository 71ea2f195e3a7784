// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 32x8x1 -> parameters BLOCK_X, BLOCK_Y; 2 literal(s) rewritten
//   unroll: unroll pragmas on 1 loop(s)
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// Naive 7-point 3-D stencil, fp32, x and out are [nz, ny, nx] (x fastest):
//   out = c0 * x + c1 * (x[west] + x[east] + x[south] + x[north] + x[below] + x[above]) on the interior,
//   out = x on the boundary (any point with x, y or z index 0 or n-1).
// Every point is computed on its own from seven global loads. The launch (spec.yaml) is shared with
// optimized.cl: a 32 x 8 work-group per column tile of 16 planes, so each work-item computes the 16
// points of its (x, y) column one after another. Twin of naive.cu.
__kernel void stencil7(__global float*  out, __global const float*  x, const float c0, const float c1,
                       const int nx, const int ny, const int nz)
{
    const int i = get_group_id(0) * 64 + get_local_id(0);
    const int j = get_group_id(1) * 8 + get_local_id(1);
    const int z0 = get_group_id(2) * 16;
    if (i >= nx || j >= ny)
        return;
    const int plane = nx * ny;
    const int z1 = min(z0 + 16, nz);
#pragma unroll 4
    for (int k = z0; k < z1; ++k) {
        const int idx = (k * ny + j) * nx + i;
        if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1)
            out[idx] = x[idx];
        else
            out[idx] = c0 * x[idx] + c1 * (x[idx - 1] + x[idx + 1] + x[idx - nx] + x[idx + nx]
                                          + x[idx - plane] + x[idx + plane]);
    }
}
