/* SPDX-License-Identifier: MIT */
/* How the host runner turns a validated call into the engine's execution; shared by run.c and batch.c. */
#ifndef TT_COLL_EXEC_H
#define TT_COLL_EXEC_H

#include "coll/coll.h"
#include "coll/engine.h"

/* What the algorithm builders are asked for c. */
tt_coll_args_t tt_coll_args(tt_comm_t *comm, const tt_call_t *c);
/* The algorithm and slice size for c over route (NULL: the host connections). */
tt_tuned_t tt_coll_choose(tt_comm_t *comm, const tt_call_t *c, const tt_route_t *route,
                          const tt_coll_args_t *args);
/* The engine's execution of c's schedule s, numbered seq, sliced as
 * choice says (whole where s must be); the scratch buffer is left for the
 * caller to set. */
void tt_coll_exec(const tt_call_t *c, const tt_sched_t *s, uint64_t seq, const tt_route_t *route,
                  const tt_coll_args_t *args, tt_tuned_t choice, tt_exec_t *x);

#endif
