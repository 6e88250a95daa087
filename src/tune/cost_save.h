/* SPDX-License-Identifier: MIT */
/* Writing the cost model's parameters as a TUTTI_TUNING_FILE (the format tt_cost_load reads). */
#ifndef TT_COST_SAVE_H
#define TT_COST_SAVE_H

#include <stdio.h>

#include "tune/cost.h"

/*
 * Writes every link class of m, the intra/inter classes where a tuning file
 * fixed them, inter_links, wake_us and the corrections to f, after the comment lines of header (each line prefixed with
 * "# "); classes whose bit is set in measured are marked as measured, the
 * others as defaults. Returns 0, or -1 if writing failed.
 */
int tt_cost_save(const tt_cost_model_t *m, unsigned measured, const char *header, FILE *f);

#endif
