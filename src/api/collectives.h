/* SPDX-License-Identifier: MIT */
/* The public collectives by tt_coll_t, for callers that choose the collective at run time. */
#ifndef TT_API_COLLECTIVES_H
#define TT_API_COLLECTIVES_H

#include <stddef.h>

#include "sched/schedule.h"
#include "tutti.h"

/* Runs coll through its public call (tutti_allreduce, ...), with the
 * arguments that call takes: op where coll reduces, root where it has one,
 * and root as the peer of a send or a receive. */
tutti_status_t tt_coll_call(tt_coll_t coll, const void *send, void *recv, size_t count, tutti_dtype_t dtype,
                            tutti_op_t op, int root, tutti_comm_t comm, tutti_stream_t stream);

#endif
