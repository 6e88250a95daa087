/* SPDX-License-Identifier: MIT */
/*
 * The TUTTI_* variables' rules and parsers, and the check that names each
 * bad value (the core's table and reading a variable's text are
 * env_table.c's, which the logger uses too); with it, the only getenv()
 * of TUTTI_*.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env_config.h"
#include "core/hash.h"
#include "core/log.h"

int tt_parse_int(const char *text, int64_t *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int tt_parse_size(const char *text, uint64_t *out)
{
    if (!text || !*text || *text == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int config_parse(const tt_config_entry_t *e, const char *text, int64_t *out)
{
    uint64_t size;
    switch (e->type) {
    case TT_CFG_TYPE_SIZE:
        if (tt_parse_size(text, &size) || size > INT64_MAX)
            return -1;
        *out = (int64_t)size;
        return 0;
    case TT_CFG_TYPE_INT: return tt_parse_int(text, out);
    default: return -1;
    }
}

/* Whether the len bytes at word are one of the comma-separated words. */
static int is_word(const char *words, const char *word, size_t len)
{
    for (const char *w = words; *w;) {
        size_t n = strcspn(w, ",");
        if (n == len && strncmp(w, word, len) == 0)
            return 1;
        w += n + (w[n] == ',');
    }
    return 0;
}

static int valid_str(const tt_config_rule_t *rule, const char *text)
{
    if (rule->hex) {
        size_t n = strspn(text, "0123456789abcdefABCDEF");
        return n == (size_t)rule->hex && text[n] == '\0';
    }
    if (rule->hostport) {
        const char *colon = strrchr(text, ':');
        int64_t port;
        return colon && colon != text && tt_parse_int(colon + 1, &port) == 0 && port >= 1 && port <= 65535;
    }
    if (!rule->words)
        return 1;
    if (!rule->list)
        return is_word(rule->words, text, strlen(text));
    for (const char *t = text;;) { /* every item of the list, none empty */
        size_t n = strcspn(t, ",");
        if (!is_word(rule->words, t, n))
            return 0;
        if (t[n] == '\0')
            return 1;
        t += n + 1;
    }
}

int tt_config_table_valid(const tt_config_table_t *t, int id, const char *text)
{
    const tt_config_rule_t *rule = &t->rules[id];
    int64_t v;
    if (t->entries[id].type == TT_CFG_TYPE_STR)
        return !rule->set || valid_str(rule, text) ? 0 : -1;
    if (config_parse(&t->entries[id], text, &v))
        return -1;
    if (!rule->set || (rule->zero_ok && v == 0))
        return 0;
    if (v < rule->min || (rule->max && v > rule->max) || (rule->multiple && v % rule->multiple))
        return -1;
    return 0;
}

/* 1073741824 as "1G", 4096 as "4K", 100 as "100". */
static void size_text(int64_t v, char *out, size_t outlen)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        int64_t unit = (int64_t)1 << (10 * (3 - i));
        if (v >= unit && v % unit == 0) {
            snprintf(out, outlen, "%lld%c", (long long)(v / unit), units[i]);
            return;
        }
    }
    snprintf(out, outlen, "%lld", (long long)v);
}

void tt_config_table_allowed(const tt_config_table_t *t, int id, char *out, size_t outlen)
{
    const tt_config_rule_t *r = &t->rules[id];
    char lo[32], hi[32];
    size_t n = 0;
    switch (t->entries[id].type) {
    case TT_CFG_TYPE_STR:
        if (r->hex)
            snprintf(out, outlen, "exactly %d hex digits", r->hex);
        else if (r->hostport)
            snprintf(out, outlen, "host:port, with a port from 1 to 65535");
        else if (r->words)
            snprintf(out, outlen, "%s %s", r->list ? "a comma-separated list of" : "one of", r->words);
        else
            snprintf(out, outlen, "a string");
        return;
    case TT_CFG_TYPE_INT:
        if (!r->set)
            snprintf(out, outlen, "an integer");
        else if (r->min == 0 && r->max == 1)
            snprintf(out, outlen, "0 or 1");
        else if (r->max)
            snprintf(out, outlen, "an integer from %lld to %lld", (long long)r->min, (long long)r->max);
        else
            snprintf(out, outlen, "an integer >= %lld", (long long)r->min);
        return;
    case TT_CFG_TYPE_SIZE:
        size_text(r->min, lo, sizeof lo);
        size_text(r->max, hi, sizeof hi);
        n = (size_t)snprintf(out, outlen, "%sa size in bytes", r->zero_ok ? "0, or " : "");
        if (r->set && n < outlen)
            n += (size_t)(r->max ? snprintf(out + n, outlen - n, " from %s to %s", lo, hi)
                                 : snprintf(out + n, outlen - n, " of at least %s", lo));
        if (r->multiple && n < outlen)
            n += (size_t)snprintf(out + n, outlen - n, ", a multiple of %lld", (long long)r->multiple);
        if (n < outlen)
            snprintf(out + n, outlen - n, " (K, M, G suffixes: powers of 1024)");
        return;
    }
}

/*
 * Each bad value is logged once per process: the hashes of the "name=value"
 * pairs logged, and of each unknown name warned about. Checks run at every
 * communicator creation and reads at every use; one message is enough.
 */
static pthread_mutex_t told_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t told_values[64], told_names[64];
static int ntold_values, ntold_names;

/* Whether h is new to the set (and now in it, while there is room). */
static int first_time(uint64_t *set, int *n, uint64_t h)
{
    int first = 1;
    pthread_mutex_lock(&told_lock);
    for (int i = 0; i < *n && first; i++)
        first = set[i] != h;
    if (first && *n < 64)
        set[(*n)++] = h;
    pthread_mutex_unlock(&told_lock);
    return first;
}

static int first_time_value(const tt_config_entry_t *e, const char *text)
{
    uint64_t h = tt_hash(e->name, strlen(e->name), TT_HASH_SEED);
    return first_time(told_values, &ntold_values, tt_hash(text, strlen(text), h));
}

static int first_time_name(const char *name, size_t len)
{
    return first_time(told_names, &ntold_names, tt_hash(name, len, TT_HASH_SEED));
}

static void describe_bad(const tt_config_table_t *t, int id, const char *text, char *out, size_t outlen)
{
    char allowed[200];
    tt_config_table_allowed(t, id, allowed, sizeof allowed);
    snprintf(out, outlen, "%s=%s is not allowed: it takes %s (%s)", t->entries[id].name, text, allowed,
             t->entries[id].help);
}

int64_t tt_config_table_int(const tt_config_table_t *t, int id)
{
    int64_t v = 0;
    const tt_config_entry_t *e = &t->entries[id];
    const char *text = tt_config_table_str(t, id);
    if (tt_config_table_valid(t, id, text) == 0 && config_parse(e, text, &v) == 0)
        return v;
    if (first_time_value(e, text)) {
        char why[400];
        describe_bad(t, id, text, why, sizeof why);
        TT_WARN(TT_SUB_CONFIG, "%s; using the default %s", why, e->def);
    }
    config_parse(e, e->def, &v);
    return v;
}

/* Edit distance of two short names, for "did you mean". */
static int distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    int row[64];
    if (la >= 63 || lb >= 63)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* The core's table, then those of more (NULL-terminated), into all. */
static int every_table(const tt_config_table_t *const *more, const tt_config_table_t **all, int max)
{
    int n = 0;
    all[n++] = &tt_config_core;
    for (int i = 0; more && more[i] && n < max; i++)
        all[n++] = more[i];
    return n;
}

/* TUTTI_* names in the environment that are no variable: typos, mostly. */
static void warn_unknown_names(const tt_config_table_t *const *tables, int ntables)
{
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "TUTTI_", 6) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        int known = 0, best_d = 3;
        const char *best = NULL;
        for (int t = 0; t < ntables && !known; t++)
            for (int id = 0; id < tables[t]->count && !known; id++) {
                const char *name = tables[t]->entries[id].name;
                known = strlen(name) == len && strncmp(*e, name, len) == 0;
                int d = distance(*e, len, name);
                if (d < best_d) {
                    best_d = d;
                    best = name;
                }
            }
        if (known || !first_time_name(*e, len))
            continue;
        if (best)
            TT_WARN(TT_SUB_CONFIG, "%.*s is not a tutti variable and is ignored; did you mean %s?", (int)len,
                    *e, best);
        else
            TT_WARN(TT_SUB_CONFIG, "%.*s is not a tutti variable and is ignored (tutti-info -e lists them)",
                    (int)len, *e);
    }
}

tutti_status_t tt_config_check(const tt_config_table_t *const *more, char *msg, size_t msglen)
{
    const tt_config_table_t *tables[16];
    int ntables = every_table(more, tables, 16), bad = 0;
    warn_unknown_names(tables, ntables);
    for (int t = 0; t < ntables; t++)
        for (int id = 0; id < tables[t]->count; id++) {
            const char *text = getenv(tables[t]->entries[id].name);
            if (!text || !*text || tt_config_table_valid(tables[t], id, text) == 0)
                continue;
            char why[400];
            describe_bad(tables[t], id, text, why, sizeof why);
            if (first_time_value(&tables[t]->entries[id], text))
                TT_ERROR(TT_SUB_CONFIG, "%s", why);
            if (bad++ == 0)
                snprintf(msg, msglen, "%s", why);
        }
    if (bad > 1) {
        size_t n = strlen(msg);
        snprintf(msg + n, msglen - n, "; and %d more invalid TUTTI_* variables (see the log)", bad - 1);
    }
    return bad ? TUTTI_ERR_CONFIG : TUTTI_SUCCESS;
}
