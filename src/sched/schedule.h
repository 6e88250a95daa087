/* SPDX-License-Identifier: MIT */
/*
 * Schedules are data. An algorithm turns (collective, nranks, rank, count)
 * into this rank's schedule: rounds of steps that may run concurrently. Round
 * r + 1 of a slice starts when round r of that slice is complete. The engine,
 * the simulator, the cost model and tutti-explain all consume the same steps.
 * Algorithms include only this header and do no I/O.
 *
 * Within a round the local steps (COPY, REDUCE) run first, in list order,
 * then the transfers start.
 *
 * Slicing rule: the engine runs slice k of every step's regions on its own
 * (the k-th of nslices nearly equal parts of each region). So a region that
 * reads what an earlier step wrote must have the same extent as the region
 * that step wrote: copy or send block by block, not one block then parts.
 */
#ifndef TT_SCHEDULE_H
#define TT_SCHEDULE_H

#include <stddef.h>

#include "core/try.h"
#include "sched/hosts.h"
#include "tutti.h"

/*
 * Every collective, in tt_coll_t's order; code that needs a fact of each
 * expands this list. X(ID, NAME, PER_RANK, REDUCES, SCHEDULED):
 *   NAME       tt_coll_name's
 *   PER_RANK   1: count is one rank's block, and the larger buffer holds a
 *              block per rank (reduce-scatter's input, all-gather's output)
 *   REDUCES    1: it takes a tutti_op_t
 *   SCHEDULED  1: algorithms serve it, and TUTTI_ALGO_<NAME> forces one;
 *              0: a send or a receive, which goes to its peer as it is
 */
#define TT_COLL_LIST(X)                                                                                      \
    X(ALLREDUCE, "allreduce", 0, 1, 1)                                                                       \
    X(REDUCE_SCATTER, "reduce_scatter", 1, 1, 1)                                                             \
    X(ALLGATHER, "allgather", 1, 0, 1)                                                                       \
    X(BROADCAST, "broadcast", 0, 0, 1)                                                                       \
    X(REDUCE, "reduce", 0, 1, 1)                                                                             \
    X(ALLTOALL, "alltoall", 1, 0, 1)                                                                         \
    X(BARRIER, "barrier", 0, 0, 1)                                                                           \
    X(SEND, "send", 0, 0, 0)                                                                                 \
    X(RECV, "recv", 0, 0, 0)

typedef enum {
#define TT_COLL_ENUM(ID, NAME, PER_RANK, REDUCES, SCHEDULED) TT_COLL_##ID,
    TT_COLL_LIST(TT_COLL_ENUM)
#undef TT_COLL_ENUM
        TT_COLL_COUNT
} tt_coll_t;

/* Whether coll's count is one rank's block (PER_RANK above): its buffers
 * are count, or count * nranks, elements. */
static inline int tt_coll_count_per_rank(tt_coll_t coll)
{
#define TT_COLL_PER_RANK_BIT(ID, NAME, PER_RANK, REDUCES, SCHEDULED) | (PER_RANK##u << TT_COLL_##ID)
    return (0u TT_COLL_LIST(TT_COLL_PER_RANK_BIT)) >> coll & 1u;
#undef TT_COLL_PER_RANK_BIT
}

/* Whether coll takes a tutti_op_t (REDUCES above). */
static inline int tt_coll_reduces(tt_coll_t coll)
{
#define TT_COLL_REDUCES_BIT(ID, NAME, PER_RANK, REDUCES, SCHEDULED) | (REDUCES##u << TT_COLL_##ID)
    return (0u TT_COLL_LIST(TT_COLL_REDUCES_BIT)) >> coll & 1u;
#undef TT_COLL_REDUCES_BIT
}

/* Name of a collective ("allreduce"). */
const char *tt_coll_name(tt_coll_t coll);
/* Whether text is name spelt any usual way: case, '_' and '-' do not count
 * ("reduce_scatter", "reducescatter", "Reduce-Scatter", "all_reduce"). */
int tt_coll_name_matches(const char *text, const char *name);
/* The collective text names, spelt any usual way ("bcast" too); 0, or -1
 * if it names none. */
int tt_coll_parse(const char *text, tt_coll_t *out);

typedef enum { TT_BUF_INPUT = 0, TT_BUF_OUTPUT, TT_BUF_SCRATCH } tt_buf_t;

/* count elements starting at element off of one buffer. */
typedef struct {
    tt_buf_t buf;
    size_t off;
    size_t count;
} tt_region_t;

typedef enum {
    TT_STEP_SEND = 0,    /* send src to peer */
    TT_STEP_RECV,        /* receive from peer into dst */
    TT_STEP_RECV_REDUCE, /* dst = src op (what peer sends) */
    TT_STEP_COPY,        /* dst = src */
    TT_STEP_REDUCE       /* dst = dst op src */
} tt_step_kind_t;

typedef struct {
    tt_step_kind_t kind;
    int peer; /* -1 for COPY and REDUCE */
    tt_region_t dst;
    tt_region_t src;
} tt_step_t;

/* What a builder is asked for. count is in elements as the API defines it
 * per collective (allgather: per-rank count; alltoall: per-peer count). */
typedef struct {
    tt_coll_t coll;
    int nranks;
    int rank;
    int root; /* broadcast, reduce; the peer for send/recv */
    size_t count;
    int in_place;
    const tt_hosts_t *hosts; /* NULL: all ranks count as one host */
} tt_coll_args_t;

typedef struct {
    tt_step_t *steps;
    int nsteps, steps_cap;
    int *round_first; /* round r holds steps [round_first[r], round_first[r + 1]) */
    int nrounds, rounds_cap;
    size_t scratch_count; /* elements of scratch the schedule touches */
    size_t sent_count;    /* elements this rank sends in all */
    int max_round_steps;  /* steps in the widest round */
    int whole;            /* 1: runs as one slice (see tt_sched_slices) */
} tt_sched_t;

/* Builder helpers; each returns TUTTI_SUCCESS or TUTTI_ERR_NO_MEMORY. */
void tt_sched_init(tt_sched_t *s);
void tt_sched_free(tt_sched_t *s);
tutti_status_t tt_sched_round(tt_sched_t *s); /* opens the next round */
tutti_status_t tt_sched_add(tt_sched_t *s, tt_step_t step);
tutti_status_t tt_sched_send(tt_sched_t *s, int peer, tt_region_t src);
tutti_status_t tt_sched_recv(tt_sched_t *s, int peer, tt_region_t dst);
tutti_status_t tt_sched_recv_reduce(tt_sched_t *s, int peer, tt_region_t dst, tt_region_t src);
tutti_status_t tt_sched_copy(tt_sched_t *s, tt_region_t dst, tt_region_t src);
/* Steps of round r: *n of them from the returned pointer. */
const tt_step_t *tt_sched_round_steps(const tt_sched_t *s, int r, int *n);

/* The slices s runs in where a call's size asks for nslices: a schedule
 * that breaks the slicing rule on purpose (a message packed from blocks
 * copied one by one) sets whole and runs as one slice, everywhere a
 * schedule is run or priced. */
static inline int tt_sched_slices(const tt_sched_t *s, int nslices)
{
    return s->whole ? 1 : nslices;
}

static inline tt_region_t tt_region(tt_buf_t buf, size_t off, size_t count)
{
    tt_region_t r = {buf, off, count};
    return r;
}

/* Split of count elements into n nearly equal blocks (the first count % n
 * blocks get one more); used by every algorithm so all ranks agree. */
static inline size_t tt_block_off(size_t count, int n, int i)
{
    size_t q = count / (size_t)n, rem = count % (size_t)n;
    return q * (size_t)i + ((size_t)i < rem ? (size_t)i : rem);
}

static inline size_t tt_block_count(size_t count, int n, int i)
{
    return count / (size_t)n + ((size_t)i < count % (size_t)n ? 1 : 0);
}

/* Block i of those n blocks of buffer buf, as a region. */
static inline tt_region_t tt_block_region(tt_buf_t buf, size_t count, int n, int i)
{
    return tt_region(buf, tt_block_off(count, n, i), tt_block_count(count, n, i));
}

/* The largest power of two not above n (n >= 1): the ranks that take part
 * in halving and doubling; the others fold into them. */
static inline int tt_pow2_floor(int n)
{
    int pof2 = 1;
    while (pof2 * 2 <= n)
        pof2 *= 2;
    return pof2;
}

static inline int tt_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

typedef tutti_status_t (*tt_sched_builder_t)(const tt_coll_args_t *args, tt_sched_t *s);

/* What the tuner needs to know about an algorithm beyond its schedules. */
enum {
    TT_ALGO_RANK_ORDER = 1u << 0,   /* reductions add the terms in rank order (deterministic mode) */
    TT_ALGO_ONLY_ORDERED = 1u << 1, /* worth running only for its order, in deterministic mode */
    TT_ALGO_MULTI_HOST = 1u << 2,   /* differs from the ring only across several hosts of several ranks */
    TT_ALGO_EVERY_PEER = 1u << 3    /* a rank connects to every other, where the collective does not need it */
};

/* One algorithm: its name, what it does, a builder per collective it
 * serves (NULL where it does not), and TT_ALGO_* flags. */
typedef struct {
    const char *name;
    const char *summary;
    tt_sched_builder_t build[TT_COLL_COUNT];
    unsigned flags;
} tt_algorithm_t;

/* Builds this rank's schedule for args with algo; TUTTI_ERR_UNSUPPORTED
 * when algo does not serve args->coll. s is left empty on failure. */
tutti_status_t tt_sched_build(const tt_algorithm_t *algo, const tt_coll_args_t *args, tt_sched_t *s);

#endif
