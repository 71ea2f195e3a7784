// One Adam optimizer step (torch.optim.Adam, no weight decay), updating param, m and v in place:
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   param -= lr * (m / bias_corr1) / (sqrt(v / bias_corr2) + eps)
// bias_corr1 = 1 - beta1^t and bias_corr2 = 1 - beta2^t are computed on the host.
// One work-item per parameter.
__kernel void adam_step(__global float* param,
                        __global float* m,
                        __global float* v,
                        __global const float* grad,
                        float lr, float beta1, float beta2, float eps,
                        float bias_corr1, float bias_corr2,
                        int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float g = grad[i];
        float m_new = beta1 * m[i] + (1.0f - beta1) * g;
        float v_new = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = m_new;
        v[i] = v_new;

        float m_hat = m_new / bias_corr1;
        float v_hat = v_new / bias_corr2;
        param[i] = param[i] - lr * m_hat / (sqrt(v_hat) + eps);
    }
}
