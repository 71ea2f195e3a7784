// Row L2 normalization, naive: one work-item per row, through row pointers.
//   out[r, :] = x[r, :] / max(||x[r, :]||, eps)
__kernel void l2_normalize(__global float* out, __global const float* x, const float eps, const int rows,
                           const int cols)
{
    const int r = get_global_id(0);
    if (r < rows) {
        __global const float* xr = x + (long)r * cols;
        __global float* yr = out + (long)r * cols;
        float ss = 0.0f;
        for (int c = 0; c < cols; ++c)
            ss += xr[c] * xr[c];
        const float inv = 1.0f / fmax(sqrt(ss), eps);
        for (int c = 0; c < cols; ++c)
            yr[c] = xr[c] * inv;
    }
}
