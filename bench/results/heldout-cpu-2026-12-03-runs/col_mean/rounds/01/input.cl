// Mean of each column of a row-major [rows, cols] matrix. One work-item per column,
// walking down the rows.
__kernel void col_mean(__global float* out,
                       __global const float* x,
                       int rows, int cols)
{
    int col = get_global_id(0);
    if (col >= cols)
        return;

    float sum = 0.0f;
    for (int r = 0; r < rows; r++)
        sum += x[r * cols + col];
    out[col] = sum / rows;
}
