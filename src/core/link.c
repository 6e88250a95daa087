/* SPDX-License-Identifier: MIT */
/* Names of the link classes. */
#include <string.h>

#include "core/link.h"

static const char *const link_names[TT_LINK_COUNT] = {"shm", "tcp", "pcie", "nvlink", "ib"};

const char *tt_link_name(tt_link_t link)
{
    return (unsigned)link < TT_LINK_COUNT ? link_names[link] : "unknown";
}

int tt_link_named(const char *name, tt_link_t *out)
{
    for (int l = 0; l < TT_LINK_COUNT; l++)
        if (strcmp(name, link_names[l]) == 0) {
            *out = (tt_link_t)l;
            return 0;
        }
    return -1;
}
