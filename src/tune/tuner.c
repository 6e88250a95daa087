/* SPDX-License-Identifier: MIT */
/* The tuner: the cheapest algorithm and slice size per collective and size class (see tuner.h). */
#include "tune/tuner.h"

#include "algorithms/registry.h"

/* Slice sizes the tuner tries when TUTTI_SLICE_BYTES is not set; the
 * default first, so it wins ties. */
static const size_t slice_choices[] = {TT_TUNER_DEFAULT_SLICE, 64 << 10, 1 << 20};

int tt_tuner_slices(size_t chunk_bytes, size_t slice_bytes)
{
    size_t n = (chunk_bytes + slice_bytes - 1) / slice_bytes;
    return n < 1 ? 1 : n > TT_MAX_SLICES ? TT_MAX_SLICES : (int)n;
}

size_t tt_tuner_chunk_bytes(const tt_coll_args_t *args, size_t elem)
{
    size_t bytes = args->count * elem;
    return args->coll == TT_COLL_ALLREDUCE ? bytes / (size_t)args->nranks : bytes;
}

int tt_tuner_considers(const tt_tuner_t *t, const tt_algorithm_t *algo, const tt_coll_args_t *args)
{
    if (!algo->build[args->coll])
        return 0;
    int reduces = args->coll == TT_COLL_ALLREDUCE || args->coll == TT_COLL_REDUCE_SCATTER ||
                  args->coll == TT_COLL_REDUCE;
    if (t->deterministic && reduces)
        return (algo->flags & TT_ALGO_RANK_ORDER) != 0;
    if (algo->flags & TT_ALGO_ONLY_ORDERED)
        return 0;
    if ((algo->flags & TT_ALGO_EVERY_PEER) && args->nranks - 1 > TT_TUNER_MAX_PEERS)
        return 0;
    if (algo->flags & TT_ALGO_MULTI_HOST) /* on one host, or hosts of one rank, it is just the ring */
        return args->hosts && args->hosts->nhosts > 1 && args->hosts->per_host > 1;
    return 1;
}

static int size_class(size_t bytes)
{
    int c = 0;
    while (bytes >>= 1)
        c++;
    return c;
}

tt_tuned_t tt_tuner_pick(tt_tuner_t *t, const tt_coll_args_t *call, size_t bytes, size_t elem)
{
    tt_tuned_t *slot = &t->cache[call->coll][size_class(bytes)];
    if (slot->algo)
        return *slot;
    /* Every rank must choose alike, but in-place is each rank's own
     * choice (the root's alone for broadcast): price the out-of-place form. */
    tt_coll_args_t priced = *call;
    priced.in_place = 0;
    const tt_coll_args_t *args = &priced;
    enum { NCHOICES = sizeof slice_choices / sizeof slice_choices[0] };
    size_t chunk = tt_tuner_chunk_bytes(args, elem), slices[NCHOICES];
    int nchoices = t->slice_bytes ? 1 : NCHOICES, nslices[NCHOICES];
    for (int c = 0; c < nchoices; c++) { /* choice 0 is the default slice size */
        slices[c] = t->slice_bytes ? t->slice_bytes : slice_choices[c];
        nslices[c] = tt_tuner_slices(chunk, slices[c]);
    }
    /* The reference: the first registered algorithm the tuner considers
     * (the ring where it serves), at the default slice size. */
    tt_tuned_t ref = {0}, best = {0};
    for (int i = 0; i < tt_num_algorithms; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        double predicted[NCHOICES];
        if (!tt_tuner_considers(t, algo, args))
            continue;
        /* Unpriceable (point-to-point schedules need both ends): -1, kept only as the reference. */
        if (tt_cost_predict_each(&t->model, algo, args, elem, nslices, nchoices, predicted))
            for (int c = 0; c < nchoices; c++)
                predicted[c] = -1;
        double measured_fix = tt_cost_fix_factor(&t->model.fix, algo->name, args, bytes);
        for (int c = 0; c < nchoices; c++)
            predicted[c] *= predicted[c] >= 0 ? measured_fix : 1;
        if (!ref.algo)
            ref = (tt_tuned_t){algo, slices[0], predicted[0]};
        for (int c = 0; c < nchoices; c++)
            if (predicted[c] >= 0 && (!best.algo || predicted[c] < best.predicted))
                best = (tt_tuned_t){algo, slices[c], predicted[c]};
    }
    /* The model misjudges real machines by tens of percent (caches, CPU
     * sharing), so anything else must beat the reference by a clear margin. */
    double margin = tt_cost_fix_covers(&t->model.fix, args) ? TT_TUNER_MARGIN_MEASURED : TT_TUNER_MARGIN;
    *slot = best.algo && best.predicted < ref.predicted * (1.0 - margin) ? best : ref;
    return *slot;
}
