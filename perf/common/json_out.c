/* SPDX-License-Identifier: MIT */
/* The JSON writer: commas and nesting kept per level, strings escaped. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

static void put(tt_json_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(tt_json_t *j, const char *fmt, ...)
{
    if (j->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = j->cap - j->len;
        int n = vsnprintf(j->buf ? j->buf + j->len : NULL, j->buf ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            j->failed = 1;
            return;
        }
        if (j->buf && (size_t)n < room) {
            j->len += (size_t)n;
            return;
        }
        size_t cap = (j->cap ? j->cap * 2 : 4096) + (size_t)n;
        char *grown = realloc(j->buf, cap);
        if (!grown) {
            j->failed = 1;
            return;
        }
        j->buf = grown;
        j->cap = cap;
    }
}

static void put_string(tt_json_t *j, const char *s)
{
    put(j, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(j, "\\%c", c);
        else if (c < 0x20)
            put(j, "\\u%04x", c);
        else
            put(j, "%c", c);
    }
    put(j, "\"");
}

/* The separator and key before a member. */
static void member(tt_json_t *j, const char *key)
{
    if (j->depth > 0 && j->count[j->depth - 1]++ > 0)
        put(j, ",");
    if (key) {
        put_string(j, key);
        put(j, ":");
    }
}

static void open_level(tt_json_t *j, const char *key, const char *bracket)
{
    member(j, key);
    put(j, "%s", bracket);
    if (j->depth == TT_JSON_MAX_DEPTH) {
        j->failed = 1;
        return;
    }
    j->close[j->depth] = bracket[0] == '{' ? '}' : ']';
    j->count[j->depth++] = 0;
}

void tt_json_obj(tt_json_t *j, const char *key)
{
    open_level(j, key, "{");
}

void tt_json_arr(tt_json_t *j, const char *key)
{
    open_level(j, key, "[");
}

void tt_json_end(tt_json_t *j)
{
    if (j->depth == 0) {
        j->failed = 1;
        return;
    }
    j->depth--;
    put(j, "%c", j->close[j->depth]);
}

void tt_json_num(tt_json_t *j, const char *key, double v)
{
    member(j, key);
    if (isfinite(v))
        put(j, "%.6g", v);
    else
        put(j, "null");
}

void tt_json_int(tt_json_t *j, const char *key, long long v)
{
    member(j, key);
    put(j, "%lld", v);
}

void tt_json_str(tt_json_t *j, const char *key, const char *v)
{
    member(j, key);
    if (v)
        put_string(j, v);
    else
        put(j, "null");
}

void tt_json_bool(tt_json_t *j, const char *key, int v)
{
    member(j, key);
    put(j, v ? "true" : "false");
}

void tt_json_null(tt_json_t *j, const char *key)
{
    member(j, key);
    put(j, "null");
}

int tt_json_write(const tt_json_t *j, FILE *f)
{
    if (j->failed || j->depth != 0 || !j->buf)
        return -1;
    return fwrite(j->buf, 1, j->len, f) == j->len && fputc('\n', f) != EOF ? 0 : -1;
}

void tt_json_free(tt_json_t *j)
{
    free(j->buf);
    memset(j, 0, sizeof *j);
}
