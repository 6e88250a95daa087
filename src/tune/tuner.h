/* SPDX-License-Identifier: MIT */
/*
 * The tuner: for each call, the algorithm and slice size the cost model
 * predicts to be fastest for this collective, size, rank count and host
 * layout. Decisions are kept per collective and power-of-two size class.
 */
#ifndef TT_TUNER_H
#define TT_TUNER_H

#include "tune/cost.h"

/* Another choice must be predicted this much faster than the reference; */
#define TT_TUNER_MARGIN 0.2
/* ... or this much, where tutti-bw --fit measured the algorithms on this
 * job's shape (the model's corrections, tune/cost_fix.h): what remains is
 * the machine's noise. */
#define TT_TUNER_MARGIN_MEASURED 0.05
/* The reference slice size, and forced algorithms' when TUTTI_SLICE_BYTES is 0. */
#define TT_TUNER_DEFAULT_SLICE ((size_t)256 << 10)

/* The tuner leaves out algorithms in which a rank connects to every other
 * (TT_ALGO_EVERY_PEER) beyond this many peers: each pair costs descriptors
 * and shm queues (a host's pool runs out and pairs fall to tcp), and the
 * first call connects them all. On this project's 2-core machine the
 * direct all-reduce of 4 B beat recursive doubling up to 32 ranks (138
 * against 310 us) and lost at 64 (1024 against 417 us); at 512 ranks its
 * first call took 54 s and left each rank 2,000 sockets. */
#define TT_TUNER_MAX_PEERS 32

/* At most this many slices per call, however small the slice size. */
#define TT_MAX_SLICES (1 << 20)

typedef struct {
    const tt_algorithm_t *algo;
    size_t slice_bytes;
    double predicted; /* seconds, for the size that filled the entry */
} tt_tuned_t;

typedef struct {
    tt_cost_model_t model;
    size_t slice_bytes; /* TUTTI_SLICE_BYTES when set; 0: the tuner picks */
    int deterministic;  /* only algorithms that add in rank order */
    tt_tuned_t cache[TT_COLL_COUNT][64];
} tt_tuner_t;

/* Engine slices for a call whose rank chunk is chunk_bytes. */
int tt_tuner_slices(size_t chunk_bytes, size_t slice_bytes);
/* The bytes of a rank's chunk, which the engine slices: the call's count
 * (per rank where the API counts per rank), all-reduce's cut p ways. */
size_t tt_tuner_chunk_bytes(const tt_coll_args_t *args, size_t elem);
/* Whether the tuner considers algo for args (deterministic: rank-order adders only). */
int tt_tuner_considers(const tt_tuner_t *t, const tt_algorithm_t *algo, const tt_coll_args_t *args);
/* The cheapest choice for args moving bytes in elements of elem bytes;
 * .algo is NULL when no algorithm serves the collective. */
tt_tuned_t tt_tuner_pick(tt_tuner_t *t, const tt_coll_args_t *args, size_t bytes, size_t elem);

#endif
