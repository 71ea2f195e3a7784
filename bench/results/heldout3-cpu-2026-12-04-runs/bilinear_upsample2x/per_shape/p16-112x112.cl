// kerntune: shape p16-112x112: BLOCK=32,RESTRICT=False,FAST_FLAGS=True from round 1, 1.218x
// launch: grid ['ceil_div(2 * w, 32)', 'ceil_div(planes * 2 * h, 32)'], block [32, 32], dynamic shared memory 0 B (expressions of the sizes)
// compile options: -cl-fast-relaxed-math
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 16x16 -> parameters BLOCK
//   restrict: restrict on 2 pointer parameter(s)
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// 2x bilinear upsampling of x[planes, h, w] into out[planes, 2h, 2w], align_corners=False
// (half-pixel centres: src = (dst + 0.5) / 2 - 0.5, clamped at 0; the right/bottom
// neighbour is clamped to the last column/row), as torch.nn.functional.interpolate does.
// 2-D launch: x is the output column, y runs over (plane, output row) pairs.
__kernel void bilinear_upsample2x(__global float*  out, __global const float*  x,
                                  const int planes, const int h, const int w)
{
    int oh = 2 * h;
    int ow = 2 * w;
    int ox = get_global_id(0);
    int gy = get_global_id(1);
    if (ox >= ow || gy >= planes * oh)
        return;

    int p = gy / oh;
    int oy = gy % oh;

    float sy = (oy + 0.5f) * 0.5f - 0.5f;
    float sx = (ox + 0.5f) * 0.5f - 0.5f;
    if (sy < 0.0f) sy = 0.0f;
    if (sx < 0.0f) sx = 0.0f;

    int y0 = (int)sy;
    int x0 = (int)sx;
    int y1 = (y0 < h - 1) ? y0 + 1 : y0;
    int x1 = (x0 < w - 1) ? x0 + 1 : x0;
    float ly = sy - y0;
    float lx = sx - x0;

    __global const float* src = x + (size_t)p * h * w;
    float v00 = src[y0 * w + x0];
    float v01 = src[y0 * w + x1];
    float v10 = src[y1 * w + x0];
    float v11 = src[y1 * w + x1];

    float top = (1.0f - lx) * v00 + lx * v01;
    float bottom = (1.0f - lx) * v10 + lx * v11;
    out[(size_t)gy * ow + ox] = (1.0f - ly) * top + ly * bottom;
}
