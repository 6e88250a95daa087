/* SPDX-License-Identifier: MIT */
/* Lists of ranks in messages: "rank 3", "ranks 0, 2, 5-9". */
#ifndef TT_RANKS_H
#define TT_RANKS_H

#include <stddef.h>

/*
 * Writes the ranks r < n with set[r] non-zero into out as "rank 3" or
 * "ranks 0, 2, 5-9" (runs of three or more as ranges; "..." when out is
 * too small). Returns how many ranks are set.
 */
int tt_ranks_str(const unsigned char *set, int n, char *out, size_t len);

#endif
