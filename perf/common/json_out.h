/* SPDX-License-Identifier: MIT */
/* A small JSON writer into a growing string, for the tools' --json output. */
#ifndef TT_JSON_OUT_H
#define TT_JSON_OUT_H

#include <stddef.h>
#include <stdio.h>

#define TT_JSON_MAX_DEPTH 32

typedef struct {
    char *buf;
    size_t len, cap;
    int depth;
    int count[TT_JSON_MAX_DEPTH];  /* members written at each open level */
    char close[TT_JSON_MAX_DEPTH]; /* and the bracket that closes it */
    int failed;                    /* out of memory: the text is incomplete */
} tt_json_t;

/* key is NULL for array elements and the top level. */
void tt_json_obj(tt_json_t *j, const char *key);
void tt_json_arr(tt_json_t *j, const char *key);
void tt_json_end(tt_json_t *j);                            /* closes the innermost object or array */
void tt_json_num(tt_json_t *j, const char *key, double v); /* non-finite: null */
void tt_json_int(tt_json_t *j, const char *key, long long v);
void tt_json_str(tt_json_t *j, const char *key, const char *v); /* NULL: null */
void tt_json_bool(tt_json_t *j, const char *key, int v);
void tt_json_null(tt_json_t *j, const char *key);
/* Writes the text and a newline; 0, or -1 if it was incomplete or writing failed. */
int tt_json_write(const tt_json_t *j, FILE *f);
void tt_json_free(tt_json_t *j);

#endif
