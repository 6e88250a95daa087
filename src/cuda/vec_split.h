/* SPDX-License-Identifier: MIT */
/*
 * How the GPU reduction kernels split dst[i] = a[i] op b[i] into a scalar
 * head, 16-byte vectors and a scalar tail: when the three pointers sit at the
 * same offset from a 16-byte boundary, the head takes the elements before it
 * and the rest goes 16 bytes at a time. Shared by the kernels and the host
 * tests (TT_HD), so the split the kernels use is the one tested without a GPU.
 */
#ifndef TT_CUDA_VEC_SPLIT_H
#define TT_CUDA_VEC_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/hd.h"

typedef struct {
    size_t head; /* scalar elements before the first aligned vector */
    size_t nvec; /* 16-byte vectors after them */
    size_t tail; /* scalar elements after the vectors */
    int aligned; /* every pointer is aligned to the element size */
} tt_vec_split_t;

static inline TT_HD tt_vec_split_t tt_vec_split(uintptr_t d, uintptr_t a, uintptr_t b, size_t n, size_t elem)
{
    tt_vec_split_t s = {n, 0, 0, (d | a | b) % elem == 0};
    size_t off = d % 16;
    if (!s.aligned || a % 16 != off || b % 16 != off)
        return s; /* no common boundary: element by element */
    size_t head = off ? (16 - off) / elem : 0, per = 16 / elem;
    if (head >= n)
        return s;
    s.head = head;
    s.nvec = (n - head) / per;
    s.tail = n - head - s.nvec * per;
    return s;
}

#endif
