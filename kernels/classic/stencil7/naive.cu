// Naive 7-point 3-D stencil, fp32, x and out are [nz, ny, nx] (x fastest):
//   out = c0 * x + c1 * (x[west] + x[east] + x[south] + x[north] + x[below] + x[above]) on the interior,
//   out = x on the boundary (any point with x, y or z index 0 or n-1).
// Every point is computed on its own from seven global loads. The launch (spec.yaml) is shared with
// optimized.cu: a 32 x 8 block per column tile of 16 planes, so each thread computes the 16 points of
// its (x, y) column one after another. Same algorithm as templates/classic/stencil7.cu.j2 at its baseline.
// Indices are int: nx * ny * nz must stay below 2^31.
extern "C" __global__ void stencil7(float* out, const float* x, float c0, float c1, int nx, int ny, int nz)
{
    const int i = blockIdx.x * 32 + threadIdx.x;
    const int j = blockIdx.y * 8 + threadIdx.y;
    const int z0 = blockIdx.z * 16;
    if (i >= nx || j >= ny)
        return;
    const int plane = nx * ny;
    const int z1 = min(z0 + 16, nz);
    for (int k = z0; k < z1; ++k) {
        const int idx = (k * ny + j) * nx + i;
        if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1)
            out[idx] = x[idx];
        else
            out[idx] = c0 * x[idx] + c1 * (x[idx - 1] + x[idx + 1] + x[idx - nx] + x[idx + nx]
                                          + x[idx - plane] + x[idx + plane]);
    }
}
