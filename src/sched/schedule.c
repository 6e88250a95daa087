/* SPDX-License-Identifier: MIT */
/* Schedules: growable storage for the algorithm builders, building one, naming collectives. */
#include <ctype.h>
#include <stdlib.h>

#include "core/grow.h"
#include "sched/schedule.h"

void tt_sched_init(tt_sched_t *s)
{
    *s = (tt_sched_t){0};
}

void tt_sched_free(tt_sched_t *s)
{
    free(s->steps);
    free(s->round_first);
    tt_sched_init(s);
}

tutti_status_t tt_sched_round(tt_sched_t *s)
{
    /* round_first keeps one extra entry: the end of the last round. */
    if (tt_grow((void **)&s->round_first, &s->rounds_cap, s->nrounds + 2, sizeof(int)))
        return TUTTI_ERR_NO_MEMORY;
    s->round_first[s->nrounds] = s->nsteps;
    s->nrounds++;
    s->round_first[s->nrounds] = s->nsteps;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_sched_add(tt_sched_t *s, tt_step_t step)
{
    if (s->nrounds == 0 && tt_sched_round(s))
        return TUTTI_ERR_NO_MEMORY;
    if (tt_grow((void **)&s->steps, &s->steps_cap, s->nsteps + 1, sizeof(tt_step_t)))
        return TUTTI_ERR_NO_MEMORY;
    s->steps[s->nsteps++] = step;
    if (step.kind == TT_STEP_SEND)
        s->sent_count += step.src.count;
    s->round_first[s->nrounds] = s->nsteps;
    int in_round = s->round_first[s->nrounds] - s->round_first[s->nrounds - 1];
    if (in_round > s->max_round_steps)
        s->max_round_steps = in_round;
    const tt_region_t *regions[2] = {&step.dst, &step.src};
    for (int i = 0; i < 2; i++)
        if (regions[i]->buf == TT_BUF_SCRATCH && regions[i]->off + regions[i]->count > s->scratch_count)
            s->scratch_count = regions[i]->off + regions[i]->count;
    return TUTTI_SUCCESS;
}

tutti_status_t tt_sched_send(tt_sched_t *s, int peer, tt_region_t src)
{
    return tt_sched_add(s, (tt_step_t){TT_STEP_SEND, peer, tt_region(TT_BUF_INPUT, 0, 0), src});
}

tutti_status_t tt_sched_recv(tt_sched_t *s, int peer, tt_region_t dst)
{
    return tt_sched_add(s, (tt_step_t){TT_STEP_RECV, peer, dst, tt_region(TT_BUF_INPUT, 0, 0)});
}

tutti_status_t tt_sched_recv_reduce(tt_sched_t *s, int peer, tt_region_t dst, tt_region_t src)
{
    return tt_sched_add(s, (tt_step_t){TT_STEP_RECV_REDUCE, peer, dst, src});
}

tutti_status_t tt_sched_copy(tt_sched_t *s, tt_region_t dst, tt_region_t src)
{
    return tt_sched_add(s, (tt_step_t){TT_STEP_COPY, -1, dst, src});
}

const tt_step_t *tt_sched_round_steps(const tt_sched_t *s, int r, int *n)
{
    *n = s->round_first[r + 1] - s->round_first[r];
    return s->steps + s->round_first[r];
}

#define COLL_NAME(ID, NAME, PER_RANK, REDUCES, SCHEDULED) NAME,
static const char *const coll_names[TT_COLL_COUNT] = {TT_COLL_LIST(COLL_NAME)};

const char *tt_coll_name(tt_coll_t coll)
{
    return (unsigned)coll < TT_COLL_COUNT ? coll_names[coll] : "unknown";
}

int tt_coll_name_matches(const char *text, const char *name)
{
    for (;;) {
        while (*text == '_' || *text == '-')
            text++;
        while (*name == '_' || *name == '-')
            name++;
        if (tolower((unsigned char)*text) != tolower((unsigned char)*name))
            return 0;
        if (!*text)
            return 1;
        text++;
        name++;
    }
}

int tt_coll_parse(const char *text, tt_coll_t *out)
{
    for (int c = 0; c < TT_COLL_COUNT; c++)
        if (tt_coll_name_matches(text, coll_names[c]) ||
            (c == TT_COLL_BROADCAST && tt_coll_name_matches(text, "bcast"))) {
            *out = (tt_coll_t)c;
            return 0;
        }
    return -1;
}

tutti_status_t tt_sched_build(const tt_algorithm_t *algo, const tt_coll_args_t *args, tt_sched_t *s)
{
    tt_sched_init(s);
    if (!algo || !algo->build[args->coll])
        return TUTTI_ERR_UNSUPPORTED;
    tutti_status_t st = algo->build[args->coll](args, s);
    if (st != TUTTI_SUCCESS)
        tt_sched_free(s);
    return st;
}
