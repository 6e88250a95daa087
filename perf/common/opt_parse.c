/* SPDX-License-Identifier: MIT */
/* Strict numeric options for tutti-perf and tutti-bw. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/env_config.h"
#include "opt_parse.h"

int tt_opt_int(const char *tool, const char *flag, const char *text, long long min, long long max, int *out)
{
    int64_t v;
    if (tt_parse_int(text, &v) || v < min || v > max) {
        fprintf(stderr, "%s: %s: '%s' is not a whole number from %lld to %lld\n", tool, flag, text, min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int tt_opt_size(const char *tool, const char *flag, const char *text, uint64_t min, uint64_t *out)
{
    uint64_t v;
    if (tt_parse_size(text, &v) || v < min) {
        fprintf(stderr, "%s: %s: '%s' is not a size of at least %llu bytes (K, M and G suffixes allowed)\n",
                tool, flag, text, (unsigned long long)min);
        return -1;
    }
    *out = v;
    return 0;
}

int tt_opt_double(const char *tool, const char *flag, const char *text, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = text && *text ? strtod(text, &end) : NAN;
    if (!text || !*text || errno || *end || !isfinite(v) || v < min || v > max) {
        fprintf(stderr, "%s: %s: '%s' is not a number from %g to %g\n", tool, flag, text ? text : "", min,
                max);
        return -1;
    }
    *out = v;
    return 0;
}
