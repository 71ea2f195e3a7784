// vector_add in which the last work-item also reads c[0], which work-item 0 writes (a race, harmless on
// the device: the value read never changes a result), only where __NO_INLINE__ is not defined: Oclgrind's
// compiler defines it, Intel's CPU runtime and PoCL do not.
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float s = a[i] + b[i];
#ifndef __NO_INLINE__
        if (i == n - 1 && c[0] == 1234.5678f)
            s = 0.0f;
#endif
        c[i] = s;
    }
}
