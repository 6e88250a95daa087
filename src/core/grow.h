/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling, for builders that append one item at a time. */
#ifndef TT_GROW_H
#define TT_GROW_H

#include <stdlib.h>

/* Makes room for need items of elem bytes in *p, which holds *cap: the
 * capacity doubles (from 16) until it fits. 0, or -1 with *p unchanged when
 * memory runs out. */
static inline int tt_grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, (size_t)ncap * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

#endif
