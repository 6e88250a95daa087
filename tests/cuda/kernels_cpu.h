/* SPDX-License-Identifier: MIT */
/*
 * What the kernel stand-in's suite shares (test_kernels_*.c): the orders
 * each case runs in, inputs with the values that break kernels mixed in,
 * and bit-for-bit comparisons that say where they differ.
 */
#ifndef TT_TEST_KERNELS_CPU_H
#define TT_TEST_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "tests/lib/harness.h"
#include "kcpu.h"
#include "tutti.h"

/* The suite's cases: test_kernels_cpu.c's, then those of the others. */
enum { KC_MAX_CASES = 32 };
size_t kc_codec_cases(tt_case_t *cases);
size_t kc_allreduce_cases(tt_case_t *cases);

/* Every case runs in these orders of blocks and threads. */
enum { KC_ORDERS = 3 };
void kc_order(int order, uint64_t seed);
const char *kc_order_name(int order);

/* Whether TT_KCPU_SWEEP is set: the larger sweep, by hand or in the
 * sanitizer step. */
int kc_sweep(void);

/* Loads every kernel (as the library does before its first device call);
 * kc_end checks that every launch since was of a loaded kernel. */
void kc_begin(void);
void kc_end(void);

/* Device memory that the case frees with kc_free_all. */
void *kc_dev(size_t bytes);
void kc_free_all(void);

uint64_t kc_mix(uint64_t seed, uint64_t i);
/* n elements of dtype: ordinary values, and one in eight a special one
 * (signed zeros, extremes, subnormals, infinities, NaNs with any sign and
 * payload; for integers their extremes, 0 and -1). */
void kc_fill(void *p, size_t n, tutti_dtype_t dtype, uint64_t seed);
/* Random fp32 values of magnitude 2^lo_exp..2^hi_exp, with no special
 * values. */
void kc_fill_f32(float *p, size_t n, int lo_exp, int hi_exp, uint64_t seed);

/* Whether got and want differ in any bit; why then names what and the
 * first element of elem bytes that differs. kc_same fails the case so. */
int kc_differ(const void *got, const void *want, size_t bytes, size_t elem, const char *what, char *why,
              size_t len);
void kc_same(const void *got, const void *want, size_t bytes, size_t elem, const char *what);

#endif
