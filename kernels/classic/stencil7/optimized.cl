// 7-point 3-D stencil marching along z, fp32: out = c0 * x + c1 * (six neighbours) on the interior,
// out = x on the boundary. A 32 x 8 work-group walks a tile of 16 consecutive planes. Each work-item
// keeps x[z-1], x[z], x[z+1] of its own (x, y) column in registers; the current plane's tile plus a
// one-point halo is staged in local memory for the x/y neighbours. Work-items outside the volume
// still take part in the barriers. Twin of optimized.cu.
#define BX 32
#define BY 8
#define ZC 16

__kernel __attribute__((reqd_work_group_size(BX, BY, 1)))
void stencil7(__global float* restrict out, __global const float* restrict x, const float c0, const float c1,
              const int nx, const int ny, const int nz)
{
    __local float tile[BY + 2][BX + 2];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int i = get_group_id(0) * BX + tx;
    const int j = get_group_id(1) * BY + ty;
    const int z0 = get_group_id(2) * ZC;
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
        if (inside) {
            if (tx == 0 && i > 0)
                tile[ty + 1][0] = x[idx - 1];
            if (tx == BX - 1 && i + 1 < nx)
                tile[ty + 1][BX + 1] = x[idx + 1];
            if (ty == 0 && j > 0)
                tile[0][tx + 1] = x[idx - nx];
            if (ty == BY - 1 && j + 1 < ny)
                tile[BY + 1][tx + 1] = x[idx + nx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (inside) {
            if (xy_interior && k > 0 && k < nz - 1)
                out[idx] = c0 * cur + c1 * (tile[ty + 1][tx] + tile[ty + 1][tx + 2] + tile[ty][tx + 1]
                                            + tile[ty + 2][tx + 1] + below + above);
            else
                out[idx] = cur;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        below = cur;
        cur = above;
        idx += plane;
        if (inside && k + 1 < z1 && k + 2 < nz)
            above = x[idx + plane];
    }
}
