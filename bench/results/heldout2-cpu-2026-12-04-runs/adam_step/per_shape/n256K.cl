// kerntune: shape n256K: BLOCK=1024,EPT=1,RESTRICT=False,FAST_MATH=True,FAST_FLAGS=False from round 1, 4.663x
// launch: grid ['ceil_div(n, 1024 * 1)'], block [1024], dynamic shared memory 0 B (expressions of the sizes)
// compile options: none
// Rewritten by kerntune's rule catalog (round 1). Applied rules:
//   launch-config: block 256 -> parameters BLOCK
//   elements-per-thread: adam_step: EPT elements per thread, grid divided by EPT
//   restrict: restrict on 4 pointer parameter(s)
//   fast-math: 1 call(s) of sqrt may use intrinsics
//   compiler-flags: -cl-fast-relaxed-math as a parameter

// One Adam optimizer step (torch.optim.Adam, no weight decay), updating param, m and v in place:
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   param -= lr * (m / bias_corr1) / (sqrt(v / bias_corr2) + eps)
// bias_corr1 = 1 - beta1^t and bias_corr2 = 1 - beta2^t are computed on the host.
// One work-item per parameter.
__kernel void adam_step(__global float*  param,
                        __global float*  m,
                        __global float*  v,
                        __global const float*  grad,
                        float lr, float beta1, float beta2, float eps,
                        float bias_corr1, float bias_corr2,
                        int n)
{
    const int kt_first = (int)(get_group_id(0) * get_local_size(0)) * 1 + (int)get_local_id(0);
    #pragma unroll
    for (int kt_e = 0; kt_e < 1; ++kt_e) {
        const int i = kt_first + (int)kt_e * (int)get_local_size(0);
        if (i < n) {
        float g = grad[i];
        float m_new = beta1 * m[i] + (1.0f - beta1) * g;
        float v_new = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = m_new;
        v[i] = v_new;

        float m_hat = m_new / bias_corr1;
        float v_hat = v_new / bias_corr2;
        param[i] = param[i] - lr * m_hat / (native_sqrt(v_hat) + eps);
    }
    }
}
