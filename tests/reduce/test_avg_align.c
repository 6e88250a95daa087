/* SPDX-License-Identifier: MIT */
/*
 * The average's division on buffers that are not aligned to their element
 * size, as a user's recvbuf may be. This program compiles the reduction
 * front (src/reduce/reduce.c) with UBSan's alignment check, which stops it
 * at the first misaligned load or store.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "tests/lib/harness.h"
#include "reduce/reduce.h"

START_TEST(avg_divides_misaligned_buffers)
{
    enum { N = 37, P = 3 };
    for (int t = 0; t < TUTTI_NUM_DTYPES; t++) {
        size_t e = tutti_dtype_size((tutti_dtype_t)t);
        for (size_t shift = 1; shift < e; shift++) {
            _Alignas(16) unsigned char raw[N * 8 + 16], want[N * 8];
            unsigned char *buf = raw + shift;
            for (size_t i = 0; i < N; i++) {
                tt_test_value((tutti_dtype_t)t, TUTTI_SUM, want, i, 0, i);
                /* P times the value, so the average is the value again */
                unsigned char one[8];
                memcpy(one, want + i * e, e);
                switch (t) {
                case TUTTI_FP16: {
                    uint16_t h;
                    memcpy(&h, one, 2);
                    h = tt_f32_to_fp16(tt_fp16_to_f32(h) * P);
                    memcpy(one, &h, 2);
                    break;
                }
                case TUTTI_BF16: {
                    uint16_t h;
                    memcpy(&h, one, 2);
                    h = tt_f32_to_bf16(tt_bf16_to_f32(h) * P);
                    memcpy(one, &h, 2);
                    break;
                }
                case TUTTI_FP32: {
                    float f;
                    memcpy(&f, one, 4);
                    f *= P;
                    memcpy(one, &f, 4);
                    break;
                }
                case TUTTI_FP64: {
                    double d;
                    memcpy(&d, one, 8);
                    d *= P;
                    memcpy(one, &d, 8);
                    break;
                }
                default: { /* small unsigned values in little-endian integers of any width */
                    uint64_t v = 0;
                    memcpy(&v, one, e);
                    v *= P;
                    memcpy(one, &v, e);
                }
                }
                memcpy(buf + i * e, one, e);
            }
            tt_reduce_avg_finish(buf, N, (tutti_dtype_t)t, P);
            ck_assert_msg(memcmp(buf, want, N * e) == 0, "%s at offset %zu: wrong average",
                          tutti_dtype_name((tutti_dtype_t)t), shift);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("avg-align");
    TCase *tc = tcase_create("avg-align");
    tcase_add_test(tc, avg_divides_misaligned_buffers);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
