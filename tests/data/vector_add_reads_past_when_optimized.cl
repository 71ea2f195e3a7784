// vector_add that reads one element past a's end, only where __OPTIMIZE__ is defined: the device's
// optimized build reads it, Oclgrind's build (-cl-opt-disable leaves __OPTIMIZE__ undefined) does not.
// The read never changes a result (the canary past a is never that value), so only a checker that
// looks at the device's code path sees it.
__kernel void vector_add(__global float* c, __global const float* a, __global const float* b, const int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float s = a[i] + b[i];
#ifdef __OPTIMIZE__
        if (a[i + 1] == 1234.5678f)
            s = 0.0f;
#endif
        c[i] = s;
    }
}
