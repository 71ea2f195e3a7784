// out = a + transpose(b): out[i][j] = a[i][j] + b[j][i], a and out rows x cols, b cols x rows
// (symmetrising a matrix is transpose_add(a, a) then a halving).
// One work-item per output element, 2-D launch: x is the column j, y the row i.
__kernel void transpose_add(__global float* out, __global const float* a, __global const float* b,
                            const int rows, const int cols)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= rows || j >= cols)
        return;
    out[i * cols + j] = a[i * cols + j] + b[j * rows + i];
}
