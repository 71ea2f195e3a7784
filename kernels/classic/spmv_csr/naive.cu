// y = A x, A in CSR form, fp32. Naive (CSR-scalar): one thread per row walks its
// row serially. Neighbouring threads read different rows, so the reads of vals
// and col_idx are scattered (uncoalesced), and long rows hold up their warp.
extern "C" __global__ void spmv_csr(float* __restrict__ y, const int* __restrict__ row_ptr,
                                    const int* __restrict__ col_idx, const float* __restrict__ vals,
                                    const float* __restrict__ x, int rows)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    const int end = row_ptr[row + 1];
    float sum = 0.0f;
    for (int k = row_ptr[row]; k < end; ++k)
        sum += vals[k] * x[col_idx[k]];
    y[row] = sum;
}
