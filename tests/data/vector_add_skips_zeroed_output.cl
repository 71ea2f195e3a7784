// vector_add that computes only where the output does not already hold 0: right on outputs poisoned
// with NaN or a random finite value, wrong for a user whose output buffer is zeroed (a fresh
// allocation, torch.zeros): it hands the zeros back (adversarial tour, 2026-12-05)
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    if (i < n && c[i] != 0.0f)
        c[i] = a[i] + b[i];
}
