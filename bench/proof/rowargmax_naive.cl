// out[r] = the first index of row r's maximum: one work-item per row, a strict > so that an
// equal value later in the row does not replace the first.
__kernel void rowargmax(__global int* out, __global const float* x, const int rows, const int cols)
{
    const int r = get_global_id(0);
    if (r >= rows)
        return;
    __global const float* row = x + (long)r * cols;
    float best = row[0];
    int at = 0;
    for (int c = 1; c < cols; ++c) {
        if (row[c] > best) {
            best = row[c];
            at = c;
        }
    }
    out[r] = at;
}
