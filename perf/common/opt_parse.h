/* SPDX-License-Identifier: MIT */
/*
 * Strict parsing of the tools' numeric options: a value that is not a
 * number, has trailing text or falls outside its range stops the tool with
 * a message naming the flag, never a silent zero.
 */
#ifndef TT_OPT_PARSE_H
#define TT_OPT_PARSE_H

#include <stdint.h>

/* Each returns 0, or -1 after printing "TOOL: FLAG: 'TEXT' is not ..." to stderr. */
int tt_opt_int(const char *tool, const char *flag, const char *text, long long min, long long max, int *out);
int tt_opt_size(const char *tool, const char *flag, const char *text, uint64_t min, uint64_t *out);
int tt_opt_double(const char *tool, const char *flag, const char *text, double min, double max, double *out);

#endif
