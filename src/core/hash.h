/* SPDX-License-Identifier: MIT */
/* FNV-1a: the one small non-cryptographic hash tutti uses for tags and ids. */
#ifndef TT_HASH_H
#define TT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TT_HASH_SEED 0xcbf29ce484222325ull

static inline uint64_t tt_hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
