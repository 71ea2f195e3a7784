// Mean of each column of a row-major [rows, cols] matrix. One thread per column,
// walking down the rows.
extern "C" __global__ void col_mean(float* out,
                                    const float* x,
                                    int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols)
        return;

    float sum = 0.0f;
    for (int r = 0; r < rows; r++)
        sum += x[r * cols + col];
    out[col] = sum / rows;
}
