/* SPDX-License-Identifier: MIT */
/* The host layout of a communicator: which host each rank is on and its index there. */
#include <stdlib.h>

#include "sched/hosts.h"

tutti_status_t tt_hosts_init(tt_hosts_t *h, int nranks, const uint64_t *host_id, const uint64_t *place)
{
    int *host_of = calloc((size_t)nranks * 3, sizeof(int));
    if (!host_of)
        return TUTTI_ERR_NO_MEMORY;
    int *local_of = host_of + nranks, *rank_at = local_of + nranks;
    int nhosts = 0;
    for (int r = 0; r < nranks; r++) {
        int first = 0; /* the lowest rank on r's host */
        while (host_id[first] != host_id[r])
            first++;
        host_of[r] = first == r ? nhosts++ : host_of[first];
    }
    /* A rank's local index: how many ranks of its host come before it in
     * (place, rank) order. Also whether every host is the same size. */
    int per_host = 0, uniform = 1;
    for (int r = 0; r < nranks; r++) {
        local_of[r] = 0;
        for (int q = 0; q < nranks; q++)
            if (host_of[q] == host_of[r] && q != r &&
                (place && place[q] != place[r] ? place[q] < place[r] : q < r))
                local_of[r]++;
    }
    for (int hst = 0; hst < nhosts; hst++) {
        int local = 0;
        for (int r = 0; r < nranks; r++)
            local += host_of[r] == hst;
        if (hst == 0)
            per_host = local;
        uniform &= local == per_host;
    }
    if (!uniform)
        per_host = 0;
    else
        for (int r = 0; r < nranks; r++)
            rank_at[host_of[r] * per_host + local_of[r]] = r;
    *h = (tt_hosts_t){
        .nhosts = nhosts, .per_host = per_host, .host_of = host_of, .local_of = local_of, .rank_at = rank_at};
    return TUTTI_SUCCESS;
}

void tt_hosts_free(tt_hosts_t *h)
{
    free((void *)h->host_of);
    *h = (tt_hosts_t){0};
}
