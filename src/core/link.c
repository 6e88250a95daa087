/* SPDX-License-Identifier: MIT */
/* The link classes' facts, from TT_LINK_LIST. */
#include <string.h>

#include "core/link.h"

#define TT_LINK_FACTS(id, name, alpha_us, gbps, reduce_gbps, copies, reduces)                                \
    [TT_LINK_##id] = {name, alpha_us, gbps, reduce_gbps, copies, reduces},
static const tt_link_facts_t link_facts[TT_LINK_COUNT] = {TT_LINK_LIST(TT_LINK_FACTS)};

const tt_link_facts_t *tt_link_facts(tt_link_t link)
{
    return &link_facts[link];
}

const char *tt_link_name(tt_link_t link)
{
    return (unsigned)link < TT_LINK_COUNT ? link_facts[link].name : "unknown";
}

int tt_link_named(const char *name, tt_link_t *out)
{
    for (int l = 0; l < TT_LINK_COUNT; l++)
        if (strcmp(name, link_facts[l].name) == 0) {
            *out = (tt_link_t)l;
            return 0;
        }
    return -1;
}
