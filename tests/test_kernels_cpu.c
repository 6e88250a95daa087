/* SPDX-License-Identifier: MIT */
/*
 * The CUDA kernels' own source, run on the CPU by the kernel stand-in
 * (tests/kernel_cpu), through the library's entry points to them
 * (src/cuda/kernels.h), against the CPU's code bit for bit, each case with
 * blocks and threads run forward, reversed and shuffled; TT_KCPU_SWEEP=1
 * runs a larger sweep. This file: the stand-in itself and the gate and
 * signal kernels.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/kernels.h"
#include "harness.h"
#include "kernels_cpu.h"
#include "reduce/reduce.h"

static void *store_later(void *word)
{
    struct timespec t = {0, 20 * 1000 * 1000};
    nanosleep(&t, NULL);
    __atomic_store_n((unsigned *)word, 6u, __ATOMIC_RELEASE);
    return NULL;
}

/* The gate returns once the word reaches its ticket, in wrap-around
 * order; the signal stores its ticket. Both on mapped host words. */
START_TEST(gate_and_signal_kernels)
{
    kc_begin();
    unsigned *word = tt_kcpu_host_alloc(sizeof *word);
    ck_assert_int_eq(tt_cuda_signal_ticket(word, 41, NULL), 0);
    ck_assert_uint_eq(*word, 41);
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 41, NULL), 0); /* reached */
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 40, NULL), 0); /* passed */
    *word = 3;
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 0xfffffff0u, NULL), 0); /* passed, across the wrap */
    *word = 5;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, store_later, word), 0);
    ck_assert_int_eq(tt_cuda_wait_ticket(word, 6, NULL), 0); /* returns once the host stores it */
    pthread_join(t, NULL);
    ck_assert_uint_eq(*word, 6);
    tt_kcpu_free(word);
    kc_end();
}
END_TEST

/* The stand-in itself: what it must catch, and what it must not mistake. */
START_TEST(stand_in_keeps_its_model)
{
    char *why = tt_kcpu_selftest();
    ck_assert_msg(why == NULL, "%s", why ? why : "");
}
END_TEST

#if defined(__SANITIZE_THREAD__)
#define KC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KC_TSAN 1
#endif
#endif

int main(int argc, char **argv)
{
#ifdef KC_TSAN
    /* Its threads are fibers switching stacks, which ThreadSanitizer would
     * take for threads racing on one. */
    printf("1..0 # SKIP the kernel stand-in does not run under ThreadSanitizer\n");
    return 0;
#endif
    tt_case_t cases[KC_MAX_CASES] = {
        {"stand_in", stand_in_keeps_its_model, 0, 0},
        {"gate_signal", gate_and_signal_kernels, 0, 0},
    };
    size_t n = 0;
    while (cases[n].name)
        n++;
    return tt_run_cases("kernels-cpu", cases, n, 300, argc, argv);
}
