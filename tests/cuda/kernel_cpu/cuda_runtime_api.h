/* SPDX-License-Identifier: MIT */
/* The kernel stand-in's runtime, as the host code includes it (C or C++):
 * cuda_runtime.h, whose C part is what such code uses. */
#ifndef TT_TEST_KCPU_CUDA_RUNTIME_API_H
#define TT_TEST_KCPU_CUDA_RUNTIME_API_H

#include "cuda_runtime.h"

#endif
