/* SPDX-License-Identifier: MIT */
/*
 * The kernel stand-in: runs the CUDA kernels' own source (the .cu files of
 * src/cuda, compiled unmodified as C++ against cuda_runtime.h beside this file) on
 * the CPU, so the suites compare them with the CPU kernels without a GPU.
 *
 * What it models:
 * - a launch: its shape is checked as CUDA checks it (grid x below 2^31,
 *   y and z below 65536, at most 1024 threads a block), and every pointer
 *   parameter must point into device memory (tt_kcpu_malloc) or mapped
 *   host memory (tt_kcpu_host_alloc); the grid runs at once, on the
 *   launching thread, block after block;
 * - threads with real barriers: a block's threads are fibers on one OS
 *   thread, and __syncthreads switches to the next thread until every
 *   thread has reached it; a barrier that some threads reach while others
 *   of the block have returned is reported. Threads of a block whose first
 *   thread returns without a barrier run one after another as calls;
 * - orders: blocks and threads run in index order, reversed, or shuffled
 *   (a fresh order each launch, block and barrier), so a kernel whose
 *   result depends on the order its threads happen to run in shows it;
 * - shared memory: every __shared__ array is filled with 0xff bytes (a NaN
 *   in every float type) before each block, as a GPU leaves garbage;
 * - device memory: allocations are 256-byte aligned, start filled with
 *   0xff bytes, and have guard bytes on both sides that are checked after
 *   every launch, copy and set; copies and sets must stay inside one
 *   allocation on their device side;
 * - misaligned loads and stores: the kernels are compiled with the
 *   alignment check of UndefinedBehaviorSanitizer, so an access a GPU
 *   would fault on ("misaligned address") stops the program;
 * - atomics, __threadfence_system, __nanosleep (a real sleep; a launch
 *   that sleeps more than 10 s in all is reported as a hang), and the
 *   rounding intrinsics (__fadd_rn and friends: IEEE operations, never
 *   contracted, as the kernels are compiled with -ffp-contract=off, whose
 *   NaN results are the GPU's 0x7fffffff, so a NaN the kernels do not make
 *   canonical shows);
 * - which kernels were preloaded (cudaFuncGetAttributes) before a launch.
 * What it does not model: warps and their lockstep (no warp intrinsics),
 * any memory ordering between threads or with the host (everything a
 * thread wrote is seen at once), concurrency between blocks, streams and
 * timing (a launch, copy or set is done when its call returns), the
 * hardware's float units beyond IEEE single and double precision with
 * round to nearest (no flush to zero; the NaN bits of operators other than
 * the intrinsics are the CPU's; that the kernels' PTX has no fused,
 * approximate or flush-to-zero operation is checked apart, by
 * tests/cuda/test-kernels-ptx.sh), and the sizes of real resources (registers,
 * shared memory per block: the same script reads ptxas's figures).
 *
 * A fault (a bad pointer, a divergent barrier, a hang, a guard overwritten)
 * prints what and where, and aborts: a test run by Check fails with it.
 */
#ifndef TT_TEST_KCPU_H
#define TT_TEST_KCPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The order blocks and threads run in. */
typedef enum { TT_KCPU_FORWARD, TT_KCPU_REVERSED, TT_KCPU_SHUFFLED } tt_kcpu_order_t;

/* Sets the order (and, shuffled, the seed of its random numbers) for the
 * launches from now on. */
void tt_kcpu_set_order(tt_kcpu_order_t order, uint64_t seed);
/* Device memory: 256-byte aligned, filled with 0xff bytes. */
void *tt_kcpu_malloc(size_t bytes);
void tt_kcpu_free(void *p);
/* Host memory that kernels may use too (pinned and mapped, as the device
 * queue's words are). */
void *tt_kcpu_host_alloc(size_t bytes);
/* Names what the next launches are for, in fault reports. */
void tt_kcpu_label(const char *what);
/* Launches so far; launches of a kernel not preloaded before. */
uint64_t tt_kcpu_launches(void);
uint64_t tt_kcpu_unloaded_launches(void);

/* The stand-in's own test (selftest.cc): NULL, or what it does not
 * model as it should. */
char *tt_kcpu_selftest(void);

/* For cuda_runtime.h. */
struct tt_kcpu_grid {
    unsigned grid[3], block[3];
    size_t shared_bytes;
    const void *kernel;
    const char *signature; /* the kernel's parameter types */
    int nargs;
    const void *const *pointers; /* each pointer parameter's value, else (void *)-1 */
};
int tt_kcpu_launch(const struct tt_kcpu_grid *l, void (*thread)(void *), void *arg);
int tt_kcpu_copy(void *dst, const void *src, size_t bytes, int kind);
int tt_kcpu_set(void *dst, int value, size_t bytes);
void tt_kcpu_loaded(const void *kernel);
void tt_kcpu_barrier(void);
void tt_kcpu_nanosleep(unsigned ns);

#ifdef __cplusplus
}
#endif

#endif
