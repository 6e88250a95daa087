/* SPDX-License-Identifier: MIT */
/* What the kernel stand-in's suite shares (kernels_cpu.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/kernels.h"
#include "tests/cuda/kernels_cpu.h"

static const tt_kcpu_order_t orders[KC_ORDERS] = {TT_KCPU_FORWARD, TT_KCPU_REVERSED, TT_KCPU_SHUFFLED};

void kc_order(int order, uint64_t seed)
{
    tt_kcpu_set_order(orders[order], seed);
}

const char *kc_order_name(int order)
{
    static const char *names[KC_ORDERS] = {"forward", "reversed", "shuffled"};
    return names[order];
}

int kc_sweep(void)
{
    const char *v = getenv("TT_KCPU_SWEEP");
    return v && *v && strcmp(v, "0") != 0;
}

void kc_begin(void)
{
    ck_assert_int_eq(tt_cuda_preload(), 0);
}

void kc_end(void)
{
    ck_assert_msg(tt_kcpu_unloaded_launches() == 0,
                  "%llu launches of kernels that tt_cuda_preload did not load (a preload list lacks one)",
                  (unsigned long long)tt_kcpu_unloaded_launches());
    kc_free_all();
}

static void **live;
static size_t nlive;

void *kc_dev(size_t bytes)
{
    void **grown = realloc(live, (nlive + 1) * sizeof *live);
    ck_assert_ptr_nonnull(grown);
    live = grown;
    return live[nlive++] = tt_kcpu_malloc(bytes);
}

void kc_free_all(void)
{
    while (nlive)
        tt_kcpu_free(live[--nlive]);
}

uint64_t kc_mix(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i * 0xD1B54A32D192ED03ull + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static const uint32_t special32[] = {0,          0x80000000, 0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff,
                                     0x7f7ffffe, 0x00800000, 0x00000001, 0x807fffff, 0x7f800000, 0xff800000,
                                     0x7fc00000, 0xffc00000, 0x7f800001, 0x7fc12345, 0xff812345};
static const uint64_t special64[] = {0,
                                     0x8000000000000000ull,
                                     0x3ff0000000000000ull,
                                     0x7fefffffffffffffull,
                                     0xffefffffffffffffull,
                                     0x0010000000000000ull,
                                     0x0000000000000001ull,
                                     0x7ff0000000000000ull,
                                     0xfff0000000000000ull,
                                     0x7ff8000000000000ull,
                                     0xfff8000000000000ull,
                                     0x7ff0000000000001ull,
                                     0x7ff8000012345678ull};

/* An integer's extremes: 0, 1, all ones, the sign bit alone, all but it. */
static uint64_t special_int(size_t size, uint64_t pick)
{
    uint64_t top = 1ull << (8 * size - 1);
    const uint64_t v[] = {0, 1, ~0ull, top, top - 1};
    return v[pick % 5];
}

void kc_fill(void *p, size_t n, tutti_dtype_t dtype, uint64_t seed)
{
    size_t size = tutti_dtype_size(dtype);
    int narrow =
        dtype == TUTTI_FP16 || dtype == TUTTI_BF16 || dtype == TUTTI_FP8_E4M3 || dtype == TUTTI_FP8_E5M2;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kc_mix(seed, i), v = r;
        int special = r % 8 == 0;
        if (dtype == TUTTI_FP32)
            v = special ? special32[(r >> 3) % (sizeof special32 / 4)]
                        : (r >> 63) << 31 | (uint64_t)(127 - 8 + (r >> 8) % 17) << 23 | (r >> 20 & 0x7fffff);
        else if (dtype == TUTTI_FP64)
            v = special ? special64[(r >> 3) % (sizeof special64 / 8)]
                        : (r >> 63) << 63 | (uint64_t)(1023 - 8 + (r >> 8) % 17) << 52 |
                              (r >> 12 & 0xfffffffffffffull);
        else if (special && !narrow) /* fp16, bf16 and fp8: every bit pattern is worth trying */
            v = special_int(size, r >> 3);
        memcpy((char *)p + i * size, &v, size); /* little-endian: the low bytes */
    }
}

void kc_fill_f32(float *p, size_t n, int lo_exp, int hi_exp, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kc_mix(seed, i);
        uint32_t bits = (uint32_t)(r >> 63) << 31 |
                        (uint32_t)(127 + lo_exp + (int)((r >> 8) % (uint64_t)(hi_exp - lo_exp + 1))) << 23 |
                        (uint32_t)(r >> 20 & 0x7fffff);
        memcpy(p + i, &bits, 4);
    }
}

int kc_differ(const void *got, const void *want, size_t bytes, size_t elem, const char *what, char *why,
              size_t len)
{
    if (!memcmp(got, want, bytes))
        return 0;
    size_t i = 0;
    while (!memcmp((const char *)got + i * elem, (const char *)want + i * elem, elem))
        i++;
    uint64_t g = 0, w = 0;
    memcpy(&g, (const char *)got + i * elem, elem < 8 ? elem : 8);
    memcpy(&w, (const char *)want + i * elem, elem < 8 ? elem : 8);
    snprintf(why, len, "%s: element %zu is 0x%llx on the kernels, 0x%llx on the CPU", what, i,
             (unsigned long long)g, (unsigned long long)w);
    return 1;
}

void kc_same(const void *got, const void *want, size_t bytes, size_t elem, const char *what)
{
    char why[400];
    if (kc_differ(got, want, bytes, elem, what, why, sizeof why))
        ck_abort_msg("%s", why);
}
