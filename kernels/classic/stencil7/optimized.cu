// 7-point 3-D stencil marching along z (the Parboil/Rodinia register + shared-plane scheme), fp32:
//   out = c0 * x + c1 * (six neighbours) on the interior, out = x on the boundary.
// A 32 x 8 block walks a tile of 16 consecutive planes. Each thread keeps x[z-1], x[z], x[z+1] of its
// own (x, y) column in registers, so every value is read from global memory once per plane; the
// current plane's 32 x 8 tile plus a one-point halo is staged in shared memory for the x/y neighbours.
// Threads outside the volume still take part in the barriers. Same algorithm as
// templates/classic/stencil7.cu.j2 with MODE=march, SHARED=true, BX=32, BY=8, ZC=16.
#define BX 32
#define BY 8
#define ZC 16

extern "C" __global__ void __launch_bounds__(BX * BY) stencil7(
    float* __restrict__ out, const float* __restrict__ x, float c0, float c1, int nx, int ny, int nz)
{
    __shared__ float tile[BY + 2][BX + 2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.x * BX + tx;
    const int j = blockIdx.y * BY + ty;
    const int z0 = blockIdx.z * ZC;
    const int z1 = min(z0 + ZC, nz);
    const int plane = nx * ny;
    const bool inside = i < nx && j < ny;
    const bool xy_interior = i > 0 && i < nx - 1 && j > 0 && j < ny - 1;
    int idx = (z0 * ny + j) * nx + i;
    float below = 0.0f, cur = 0.0f, above = 0.0f;
    if (inside) {
        cur = x[idx];
        if (z0 > 0)
            below = x[idx - plane];
        if (z0 + 1 < nz)
            above = x[idx + plane];
    }
    for (int k = z0; k < z1; ++k) {
        tile[ty + 1][tx + 1] = cur;
        if (inside) {                       // halo: only the tile's edge threads load it
            if (tx == 0 && i > 0)
                tile[ty + 1][0] = x[idx - 1];
            if (tx == BX - 1 && i + 1 < nx)
                tile[ty + 1][BX + 1] = x[idx + 1];
            if (ty == 0 && j > 0)
                tile[0][tx + 1] = x[idx - nx];
            if (ty == BY - 1 && j + 1 < ny)
                tile[BY + 1][tx + 1] = x[idx + nx];
        }
        __syncthreads();
        if (inside) {
            if (xy_interior && k > 0 && k < nz - 1)
                out[idx] = c0 * cur + c1 * (tile[ty + 1][tx] + tile[ty + 1][tx + 2] + tile[ty][tx + 1]
                                            + tile[ty + 2][tx + 1] + below + above);
            else
                out[idx] = cur;
        }
        __syncthreads();                    // the tile is overwritten by the next plane
        below = cur;
        cur = above;
        idx += plane;
        if (inside && k + 1 < z1 && k + 2 < nz)
            above = x[idx + plane];
    }
}
