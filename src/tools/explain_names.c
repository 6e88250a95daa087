/* SPDX-License-Identifier: MIT */
/*
 * Algorithm names as a student types them: any case, "_" and "-" not
 * counting (as collective names), and on a name that is not one, the
 * algorithms that serve the collective, with the ones the typed words
 * describe first ("tree", "recursive halving").
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/registry.h"
#include "tools/explain_names.h"

const tt_algorithm_t *tt_explain_algo_find(const char *name)
{
    for (int i = 0; i < tt_num_algorithms; i++)
        if (tt_coll_name_matches(name, tt_algorithms[i]->name))
            return tt_algorithms[i];
    return NULL;
}

/* Lower case, "_" and "-" as spaces: how words are compared with a summary. */
static void words_of(const char *s, char *out, size_t len)
{
    size_t k = 0;
    for (; *s && k + 1 < len; s++)
        out[k++] = *s == '_' || *s == '-' ? ' ' : (char)tolower((unsigned char)*s);
    out[k] = '\0';
}

/* Whether the typed name is part of the algorithm's name or summary. */
static int describes(const char *typed, const tt_algorithm_t *a)
{
    char want[64], name[64], summary[256];
    words_of(typed, want, sizeof want);
    words_of(a->name, name, sizeof name);
    words_of(a->summary, summary, sizeof summary);
    return want[0] && (strstr(name, want) || strstr(summary, want));
}

/* "broadcast reduce": the collectives a serves. */
static void serves(const tt_algorithm_t *a, char *out, size_t len)
{
    size_t k = 0;
    out[0] = '\0';
    for (int c = 0; c <= TT_COLL_BARRIER && k < len; c++)
        if (a->build[c])
            k += (size_t)snprintf(out + k, len - k, "%s%s", k ? ", " : "", tt_coll_name((tt_coll_t)c));
}

void tt_explain_algo_help(FILE *f, const char *typed, tt_coll_t coll)
{
    const tt_algorithm_t *known = tt_explain_algo_find(typed);
    char list[128];
    if (known) {
        serves(known, list, sizeof list);
        fprintf(f, "tutti-explain: %s does not serve %s (it serves %s)", known->name, tt_coll_name(coll),
                list);
    } else {
        fprintf(f, "tutti-explain: unknown algorithm '%s'", typed);
    }
    int hints = 0;
    for (int i = 0; i < tt_num_algorithms && !known; i++) {
        const tt_algorithm_t *a = tt_algorithms[i];
        if (a == &tt_algo_p2p || !describes(typed, a))
            continue;
        serves(a, list, sizeof list);
        fprintf(f, "%s%s", hints++ ? " or " : "; did you mean ", a->name);
        if (!a->build[coll])
            fprintf(f, " (for %s)", list);
    }
    fprintf(f, "%s\nthe algorithms of %s (-a takes any case; tutti-info -A lists all):\n", hints ? "?" : "",
            tt_coll_name(coll));
    for (int i = 0; i < tt_num_algorithms; i++)
        if (tt_algorithms[i]->build[coll] && tt_algorithms[i] != &tt_algo_p2p)
            fprintf(f, "  %-19s %s\n", tt_algorithms[i]->name, tt_algorithms[i]->summary);
}
