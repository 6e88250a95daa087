/* SPDX-License-Identifier: MIT */
/*
 * The table of TUTTI_* variables, their rules and parsers, and the check
 * that names each bad value; the only getenv() of TUTTI_*.
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

const tt_config_entry_t tt_config_entries[TT_CFG_COUNT] = {
#define TT_CFG_ENTRY(id, type, def, help) [TT_CFG_##id] = {"TUTTI_" #id, TT_CFG_TYPE_##type, def, help},
    TT_CONFIG_TABLE(TT_CFG_ENTRY)
#undef TT_CFG_ENTRY
};

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

const tt_config_rule_t tt_config_rules[TT_CFG_COUNT] = {
#define TT_CFG_RULE(id, ...) [TT_CFG_##id] = {.set = 1, __VA_ARGS__},
    TT_CONFIG_RULES(TT_CFG_RULE)
#undef TT_CFG_RULE
};

const char *tt_config_str(tt_config_id_t id)
{
    const char *v = getenv(tt_config_entries[id].name);
    return v && *v ? v : tt_config_entries[id].def;
}

int tt_config_is_set(tt_config_id_t id)
{
    const char *v = getenv(tt_config_entries[id].name);
    return v && *v; /* empty counts as unset, as tt_config_str reads it */
}

static int config_parse(tt_config_id_t id, const char *text, int64_t *out)
{
    uint64_t size;
    switch (tt_config_entries[id].type) {
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

int tt_config_valid(tt_config_id_t id, const char *text)
{
    const tt_config_rule_t *rule = &tt_config_rules[id];
    int64_t v;
    if (tt_config_entries[id].type == TT_CFG_TYPE_STR)
        return !rule->set || valid_str(rule, text) ? 0 : -1;
    if (config_parse(id, text, &v))
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

void tt_config_allowed(tt_config_id_t id, char *out, size_t outlen)
{
    const tt_config_rule_t *r = &tt_config_rules[id];
    char lo[32], hi[32];
    size_t n = 0;
    switch (tt_config_entries[id].type) {
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
 * Each bad value is logged once per process: the hash of the last value
 * logged per variable, and of each unknown name warned about. Checks run at
 * every communicator creation and reads at every use; one message is enough.
 */
static pthread_mutex_t told_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t told_value[TT_CFG_COUNT];
static uint64_t told_names[64];
static int ntold_names;

static int first_time_value(tt_config_id_t id, const char *text)
{
    uint64_t h = tt_hash(text, strlen(text), TT_HASH_SEED) | 1; /* never 0, the "nothing told" mark */
    pthread_mutex_lock(&told_lock);
    int first = told_value[id] != h;
    told_value[id] = h;
    pthread_mutex_unlock(&told_lock);
    return first;
}

static int first_time_name(const char *name, size_t len)
{
    uint64_t h = tt_hash(name, len, TT_HASH_SEED);
    int first = 1;
    pthread_mutex_lock(&told_lock);
    for (int i = 0; i < ntold_names && first; i++)
        first = told_names[i] != h;
    if (first && ntold_names < (int)(sizeof told_names / sizeof told_names[0]))
        told_names[ntold_names++] = h;
    pthread_mutex_unlock(&told_lock);
    return first;
}

static void describe_bad(tt_config_id_t id, const char *text, char *out, size_t outlen)
{
    char allowed[200];
    tt_config_allowed(id, allowed, sizeof allowed);
    snprintf(out, outlen, "%s=%s is not allowed: it takes %s (%s)", tt_config_entries[id].name, text, allowed,
             tt_config_entries[id].help);
}

int64_t tt_config_int(tt_config_id_t id)
{
    int64_t v = 0;
    const char *text = tt_config_str(id);
    if (tt_config_valid(id, text) == 0 && config_parse(id, text, &v) == 0)
        return v;
    if (first_time_value(id, text)) {
        char why[400];
        describe_bad(id, text, why, sizeof why);
        TT_WARN(TT_SUB_CONFIG, "%s; using the default %s", why, tt_config_entries[id].def);
    }
    config_parse(id, tt_config_entries[id].def, &v);
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

/* TUTTI_* names in the environment that are no variable: typos, mostly. */
static void warn_unknown_names(void)
{
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "TUTTI_", 6) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        int known = 0, best = -1, best_d = 3;
        for (int id = 0; id < TT_CFG_COUNT && !known; id++) {
            const char *name = tt_config_entries[id].name;
            known = strlen(name) == len && strncmp(*e, name, len) == 0;
            int d = distance(*e, len, name);
            if (d < best_d) {
                best_d = d;
                best = id;
            }
        }
        if (known || !first_time_name(*e, len))
            continue;
        if (best >= 0)
            TT_WARN(TT_SUB_CONFIG, "%.*s is not a tutti variable and is ignored; did you mean %s?", (int)len,
                    *e, tt_config_entries[best].name);
        else
            TT_WARN(TT_SUB_CONFIG, "%.*s is not a tutti variable and is ignored (tutti-info -e lists them)",
                    (int)len, *e);
    }
}

tutti_status_t tt_config_check(char *msg, size_t msglen)
{
    int bad = 0;
    warn_unknown_names();
    for (int id = 0; id < TT_CFG_COUNT; id++) {
        const char *text = getenv(tt_config_entries[id].name);
        if (!text || !*text || tt_config_valid((tt_config_id_t)id, text) == 0)
            continue;
        char why[400];
        describe_bad((tt_config_id_t)id, text, why, sizeof why);
        if (first_time_value((tt_config_id_t)id, text))
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
