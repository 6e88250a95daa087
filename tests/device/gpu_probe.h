/* SPDX-License-Identifier: MIT */
/*
 * Whether the GPU suites can run here, asked in a child process: CUDA cannot
 * be used after fork once the parent has touched it, and the suites fork
 * their ranks.
 */
#ifndef TT_TEST_GPU_PROBE_H
#define TT_TEST_GPU_PROBE_H

#include <stddef.h>

/* 1 when a GPU is usable; else 0 with the reason in why. */
int tt_test_gpu_usable(char *why, size_t len);

#endif
