/* SPDX-License-Identifier: MIT */
/*
 * Joining a communicator by an explicit unique id: making the id (rank 0's
 * bootstrap listener and the job's key) and reading it back. The
 * launcher's environment is init_env.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap.h"
#include "comm/comm.h"
#include "comm/error.h"
#include "core/env_config.h"
#include "core/key.h"

#define TT_ID_MAGIC 0x74746964u /* "ttid" */

_Static_assert(sizeof(tt_id_t) <= TUTTI_UNIQUE_ID_BYTES, "unique id layout too large");

TUTTI_API tutti_status_t tutti_get_unique_id(tutti_unique_id_t *id)
{
    if (!id)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "id: NULL output pointer");
    tt_id_t tid = {.magic = TT_ID_MAGIC, .version = 1};
    tutti_status_t st = tt_random_key(tid.key);
    if (!st)
        st = tt_sock_pick_addr(tt_config_str(TT_CFG_SOCKET_IFNAME), &tid.root);
    int fd = -1;
    if (!st)
        st = tt_sock_listen(&tid.root, &fd);
    if (st)
        return tt_comm_error(NULL, st, "tutti_get_unique_id: could not open the bootstrap listener");
    tt_bootstrap_keep_listener(tid.key, fd);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &tid, sizeof tid);
    return TUTTI_SUCCESS;
}

int tt_id_decode(const unsigned char bytes[TUTTI_UNIQUE_ID_BYTES], tt_id_t *id)
{
    memcpy(id, bytes, sizeof *id);
    sa_family_t family = id->root.u.sa.sa_family;
    return id->magic == TT_ID_MAGIC && id->version == 1 &&
                   ((family == AF_INET && id->root.len == sizeof id->root.u.in4) ||
                    (family == AF_INET6 && id->root.len == sizeof id->root.u.in6))
               ? 0
               : -1;
}

TUTTI_API tutti_status_t tutti_comm_init(tutti_comm_t *comm, int nranks, int rank,
                                         const tutti_unique_id_t *id, const tutti_comm_params_t *params)
{
    if (comm && !id) {
        *comm = NULL;
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "id: NULL unique id");
    }
    return tutti_comm_init_roots(comm, nranks, rank, 1, id, params);
}

TUTTI_API tutti_status_t tutti_comm_init_roots(tutti_comm_t *comm, int nranks, int rank, int nids,
                                               const tutti_unique_id_t *ids,
                                               const tutti_comm_params_t *params)
{
    if (!comm)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "comm: NULL output pointer");
    *comm = NULL;
    if (!ids)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "ids: NULL unique ids");
    if (nranks < 1)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "nranks: %d is not >= 1", nranks);
    if (rank < 0 || rank >= nranks)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "rank: %d is outside 0..%d", rank, nranks - 1);
    if (nids < 1 || nids > nranks)
        return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG,
                             "nids: %d is outside 1..%d (one root per rank at most)", nids, nranks);
    tt_id_t *tids = malloc(sizeof *tids * (size_t)nids);
    if (!tids)
        return tt_comm_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory for %d unique ids", nids);
    for (int i = 0; i < nids; i++)
        if (tt_id_decode(ids[i].internal, &tids[i])) {
            free(tids);
            return tt_comm_error(NULL, TUTTI_ERR_INVALID_ARG, "ids[%d]: not made by tutti_get_unique_id", i);
        }
    tutti_status_t st = tt_comm_create(comm, nranks, rank, tids, nids, params, NULL);
    free(tids);
    return st;
}
