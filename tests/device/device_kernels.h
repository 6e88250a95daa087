/* SPDX-License-Identifier: MIT */
/*
 * test-device's kernel cases, kept in device_kernels.c apart from its
 * collectives (test_device.c) and run by the same program.
 */
#ifndef TT_TEST_DEVICE_KERNELS_H
#define TT_TEST_DEVICE_KERNELS_H

#include "tests/lib/harness.h"

/* The most cases tt_device_kernel_cases writes. */
#define TT_DEVICE_KERNEL_CASES 8

/* Writes the kernel cases into out; their number. */
size_t tt_device_kernel_cases(tt_case_t *out);

#endif
