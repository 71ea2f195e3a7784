// Row-wise dot products of two matrices, naive: one work-item per row, through row pointers.
//   out[r] = sum_c a[r, c] * b[r, c]
__kernel void row_dot(__global float* out, __global const float* a, __global const float* b, const int rows,
                      const int cols)
{
    const int r = get_global_id(0);
    if (r < rows) {
        __global const float* ar = a + (long)r * cols;
        __global const float* br = b + (long)r * cols;
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c)
            acc += ar[c] * br[c];
        out[r] = acc;
    }
}
