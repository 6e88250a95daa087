/* SPDX-License-Identifier: MIT */
/* Grouping ranks by host: the layout the hierarchical algorithms follow. */
#ifndef TT_HOSTS_H
#define TT_HOSTS_H

#include <stdint.h>

#include "tutti.h"

/* How ranks sit on hosts, for the hierarchical algorithms. Hosts are
 * numbered by their lowest rank, a host's ranks by rank. */
typedef struct {
    int nhosts;
    int per_host;        /* ranks on every host; 0 when hosts hold different numbers */
    const int *host_of;  /* [rank] */
    const int *local_of; /* [rank]: index among the ranks of its host */
    const int *rank_at;  /* [host * per_host + local], when per_host > 0 */
} tt_hosts_t;

/* Fills h from each rank's host identity (equal ids share a host). Hosts
 * are numbered by their lowest rank; a host's ranks get local indices in
 * the order of place (NUMA node, then CPU, so that neighbours in a ring
 * share a socket), ties and place NULL in rank order. per_host is 0 unless
 * every host holds the same number of ranks. Returns TUTTI_ERR_NO_MEMORY
 * or success. */
tutti_status_t tt_hosts_init(tt_hosts_t *h, int nranks, const uint64_t *host_id, const uint64_t *place);
void tt_hosts_free(tt_hosts_t *h);

#endif
