/* SPDX-License-Identifier: MIT */
/*
 * Kernels of the stand-in's own, for its own test (test_kernels_cpu.c): a
 * barrier is real, shared memory starts as garbage, orders differ, and what
 * a GPU would refuse or fault on stops the program.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/grid.cuh"

namespace
{

/* A tree sum in shared memory: wrong unless every barrier holds every
 * thread until all have arrived. first gets what shared memory held. */
__global__ void tree_sum(const unsigned *in, unsigned *out, unsigned *first)
{
    __shared__ unsigned s[THREADS];
    if (threadIdx.x == 0)
        *first = s[blockDim.x - 1];
    __syncthreads();
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = s[0];
}

/* Every thread stores its index: the last to run wins. */
__global__ void last_writer(unsigned *out)
{
    *out = blockIdx.x * blockDim.x + threadIdx.x;
}

__global__ void early_return(unsigned *out)
{
    if (threadIdx.x == 0)
        return;
    __syncthreads();
    *out = 1;
}

__global__ void load_float(const float *p, float *out)
{
    *out = *p;
}

__global__ void store_past(unsigned *p, size_t n)
{
    p[n] = 1;
}

/* Whether f, run in a child process, ends it abnormally. */
template <typename F> bool stops(F f)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        f();
        _exit(0);
    }
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

} // namespace

extern "C" char *tt_kcpu_selftest(void)
{
    static char why[160];
    unsigned *in = (unsigned *)tt_kcpu_malloc(THREADS * sizeof *in), *out = (unsigned *)tt_kcpu_malloc(64);
    for (unsigned i = 0; i < THREADS; i++)
        in[i] = i * i + 1;
    unsigned want = 0;
    for (unsigned i = 0; i < THREADS; i++)
        want += in[i];
    unsigned lasts[3];
    for (int o = 0; o < 3; o++) {
        tt_kcpu_set_order((tt_kcpu_order_t)o, 99);
        if (launch_on(NULL, 2, THREADS, tree_sum, (const unsigned *)in, out, out + 4) || out[0] != want ||
            out[1] != want)
            return snprintf(why, sizeof why, "a tree sum in shared memory gave %u, %u, not %u (order %d)",
                            out[0], out[1], want, o),
                   why;
        if (out[4] != 0xffffffffu)
            return snprintf(why, sizeof why, "shared memory held 0x%x, not 0xff bytes", out[4]), why;
        launch_on(NULL, 3, THREADS, last_writer, out);
        lasts[o] = out[0];
    }
    if (lasts[0] != 3 * THREADS - 1 || lasts[1] != 0 || lasts[2] == lasts[0])
        return snprintf(why, sizeof why, "orders forward, reversed, shuffled ended on threads %u, %u, %u",
                        lasts[0], lasts[1], lasts[2]),
               why;
    if (launch_on(NULL, 0, THREADS, last_writer, out) != cudaErrorInvalidConfiguration ||
        launch_on(NULL, 1, 1025, last_writer, out) != cudaErrorInvalidConfiguration)
        return snprintf(why, sizeof why, "a launch of 0 blocks or of 1025 threads was not refused"), why;
    static unsigned host_word;
    if (!stops([] { launch_on(NULL, 1, 1, last_writer, &host_word); }))
        return snprintf(why, sizeof why, "a kernel was given host memory"), why;
    if (!stops([out] { launch_on(NULL, 1, 32, early_return, out); }))
        return snprintf(why, sizeof why, "a barrier that thread 0 never reaches went unnoticed"), why;
    if (!stops([out] { launch_on(NULL, 1, 1, load_float, (const float *)((char *)out + 1), (float *)out); }))
        return snprintf(why, sizeof why, "a misaligned load went unnoticed"), why;
    if (!stops([out] { launch_on(NULL, 1, 1, store_past, out, (size_t)16); }))
        return snprintf(why, sizeof why, "a store past the end of an allocation went unnoticed"), why;
    tt_kcpu_free(in);
    tt_kcpu_free(out);
    return NULL;
}
