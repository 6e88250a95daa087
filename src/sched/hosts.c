/* SPDX-License-Identifier: MIT */
/* The host layout of a communicator: which host each rank is on and its index there. */
#include <stdlib.h>

#include "sched/hosts.h"

/* A rank as the layout sorts it: by host, then by place (or rank). */
typedef struct {
    uint64_t host, place;
    int rank;
} member_t;

static int by_host(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_place(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    if (x->place != y->place)
        return x->place < y->place ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A host as the layout numbers them: by its lowest rank. */
typedef struct {
    int lowest, first, count; /* first: its first member in the sorted array */
} group_t;

static int by_lowest(const void *a, const void *b)
{
    const group_t *x = a, *y = b;
    return (x->lowest > y->lowest) - (x->lowest < y->lowest);
}

/* Sorting, not comparing every pair: a communicator of many thousands of
 * ranks lays itself out in O(N log N). */
tutti_status_t tt_hosts_init(tt_hosts_t *h, int nranks, const uint64_t *host_id, const uint64_t *place)
{
    int *host_of = calloc((size_t)nranks * 3, sizeof(int));
    member_t *m = malloc((size_t)nranks * sizeof *m);
    group_t *g = malloc((size_t)nranks * sizeof *g);
    if (!host_of || !m || !g) {
        free(host_of);
        free(m);
        free(g);
        return TUTTI_ERR_NO_MEMORY;
    }
    int *local_of = host_of + nranks, *rank_at = local_of + nranks;
    for (int r = 0; r < nranks; r++)
        m[r] = (member_t){host_id[r], place ? place[r] : 0, r};
    qsort(m, (size_t)nranks, sizeof *m, by_host);
    int nhosts = 0;
    for (int i = 0; i < nranks; i++) {
        if (i == 0 || m[i].host != m[i - 1].host)
            g[nhosts++] = (group_t){m[i].rank, i, 0};
        g[nhosts - 1].count++;
    }
    qsort(g, (size_t)nhosts, sizeof *g, by_lowest);
    /* A rank's local index: its place among its host's ranks in (place,
     * rank) order. Also whether every host is the same size. */
    int per_host = nhosts ? g[0].count : 0, uniform = 1;
    for (int k = 0; k < nhosts; k++) {
        member_t *first = m + g[k].first;
        qsort(first, (size_t)g[k].count, sizeof *m, by_place);
        for (int i = 0; i < g[k].count; i++) {
            host_of[first[i].rank] = k;
            local_of[first[i].rank] = i;
        }
        uniform &= g[k].count == per_host;
    }
    if (!uniform)
        per_host = 0;
    else
        for (int r = 0; r < nranks; r++)
            rank_at[host_of[r] * per_host + local_of[r]] = r;
    free(m);
    free(g);
    *h = (tt_hosts_t){
        .nhosts = nhosts, .per_host = per_host, .host_of = host_of, .local_of = local_of, .rank_at = rank_at};
    return TUTTI_SUCCESS;
}

void tt_hosts_free(tt_hosts_t *h)
{
    free((void *)h->host_of);
    *h = (tt_hosts_t){0};
}
