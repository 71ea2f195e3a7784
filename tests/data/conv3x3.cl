// 3x3 convolution of a single-channel image with zero padding, through a local tile with a halo.
// Work-groups of 16x16; each loads an 18x18 tile of the input.
#define TS 16

__kernel void conv3x3(__global const float* img, __constant float* filt,
                      __global float* out, const int height, const int width)
{
    __local float tile[TS + 2][TS + 2];
    const int gx = get_global_id(0), gy = get_global_id(1);
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int x0 = get_group_id(0) * TS - 1, y0 = get_group_id(1) * TS - 1;

    for (int ty = ly; ty < TS + 2; ty += TS)
        for (int tx = lx; tx < TS + 2; tx += TS) {
            const int ix = x0 + tx, iy = y0 + ty;
            tile[ty][tx] = (ix >= 0 && ix < width && iy >= 0 && iy < height) ? img[iy * width + ix] : 0.0f;
        }
    barrier(CLK_LOCAL_MEM_FENCE);

    if (gx < width && gy < height) {
        float acc = 0.0f;
        for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx)
                acc += filt[dy * 3 + dx] * tile[ly + dy][lx + dx];
        out[gy * width + gx] = acc;
    }
}
