/* SPDX-License-Identifier: MIT */
/* The cost model's parameters written in the tuning-file format, so a fit can be loaded back. */
#include <string.h>

#include "tune/cost_save.h"

int tt_cost_save(const tt_cost_model_t *m, unsigned measured, const char *header, FILE *f)
{
    for (const char *line = header; line && *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        fprintf(f, "# %.*s\n", len, line);
        line = end ? end + 1 : line + len;
    }
    fprintf(f, "# CLASS ALPHA_US GB_PER_S REDUCE_GB_PER_S\n");
    for (int l = 0; l < TT_LINK_COUNT; l++) {
        const tt_link_cost_t *c = &m->link[l];
        /* %.17g: the values read back are the values written, so every rank agrees on them. */
        fprintf(f, "%-6s %.17g %.17g %.17g  # %s\n", tt_link_name((tt_link_t)l), c->alpha * 1e6,
                1.0 / (c->beta * 1e9), 1.0 / (c->gamma * 1e9), measured & (1u << l) ? "measured" : "default");
    }
    if (m->classes_fixed) /* else each pair's class comes from the transport that joins it */
        fprintf(f, "intra %s\ninter %s\n", tt_link_name(m->intra), tt_link_name(m->inter));
    fprintf(f, "inter_links %d\nwake_us %.17g\n", m->inter_links, m->wake_s * 1e6);
    tt_cost_fix_save(&m->fix, f);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
