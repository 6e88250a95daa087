/* SPDX-License-Identifier: MIT */
/* Point-to-point send and receive as one-step schedules, so they run (and are
 * sliced, pipelined and checked) by the same engine as the collectives. */
#include "sched/schedule.h"

static tutti_status_t p2p_send(const tt_coll_args_t *a, tt_sched_t *s)
{
    return tt_sched_send(s, a->root, tt_region(TT_BUF_INPUT, 0, a->count));
}

static tutti_status_t p2p_recv(const tt_coll_args_t *a, tt_sched_t *s)
{
    return tt_sched_recv(s, a->root, tt_region(TT_BUF_OUTPUT, 0, a->count));
}

const tt_algorithm_t tt_algo_p2p = {
    .name = "p2p",
    .summary = "direct point-to-point message",
    .build = {[TT_COLL_SEND] = p2p_send, [TT_COLL_RECV] = p2p_recv},
};
