// Per-row KL divergence KL(p || q) with q given as log-probabilities, as in
// torch.nn.functional.kl_div(log_q, p, reduction="none").sum(dim=1):
//   out[r] = sum_c p[r][c] * (log p[r][c] - log_q[r][c])      (a term with p = 0 counts 0)
// One work-item per row, a serial loop over the columns.

float kl_term(float p, float log_q)
{
    if (p > 0.0f)
        return p * (log(p) - log_q);
    return 0.0f;
}

__kernel void kl_div_rows(__global float* out,
                          __global const float* p,
                          __global const float* log_q,
                          int rows, int cols)
{
    int r = get_global_id(0);
    if (r >= rows)
        return;

    float acc = 0.0f;
    for (int c = 0; c < cols; c++) {
        int i = r * cols + c;
        acc += kl_term(p[i], log_q[i]);
    }
    out[r] = acc;
}
