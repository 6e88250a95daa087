/* SPDX-License-Identifier: MIT */
#include "tuner.h"

#include "algo.h"

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
    if (t->deterministic && tt_algo_ordered.build[args->coll])
        return algo == &tt_algo_ordered || algo == &tt_algo_direct;
    if (algo == &tt_algo_ordered)
        return 0; /* it exists for deterministic mode */
    /* On one host, or hosts of one rank, hierarchical is just the ring. */
    if (algo == &tt_algo_hierarchical)
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

tt_tuned_t tt_tuner_pick(tt_tuner_t *t, const tt_coll_args_t *args, size_t bytes, size_t elem)
{
    tt_tuned_t *slot = &t->cache[args->coll][size_class(bytes)];
    if (slot->algo)
        return *slot;
    size_t chunk = tt_tuner_chunk_bytes(args, elem);
    size_t default_slice = t->slice_bytes ? t->slice_bytes : TT_TUNER_DEFAULT_SLICE;
    int nchoices = t->slice_bytes ? 1 : (int)(sizeof slice_choices / sizeof slice_choices[0]);
    /* The reference: the first registered algorithm the tuner considers
     * (the ring where it serves), at the default slice size. */
    tt_tuned_t ref = {0}, best = {0};
    for (int i = 0; i < tt_num_algorithms && !ref.algo; i++)
        if (tt_tuner_considers(t, tt_algorithms[i], args)) {
            ref.algo = tt_algorithms[i];
            ref.slice_bytes = default_slice;
            ref.predicted =
                tt_cost_predict(&t->model, ref.algo, args, elem, tt_tuner_slices(chunk, default_slice));
        }
    for (int i = 0; i < tt_num_algorithms && ref.algo; i++) {
        const tt_algorithm_t *algo = tt_algorithms[i];
        if (!tt_tuner_considers(t, algo, args))
            continue;
        for (int c = 0; c < nchoices; c++) {
            size_t slice = t->slice_bytes ? t->slice_bytes : slice_choices[c];
            double predicted = tt_cost_predict(&t->model, algo, args, elem, tt_tuner_slices(chunk, slice));
            if (predicted >= 0 && (!best.algo || predicted < best.predicted))
                best = (tt_tuned_t){algo, slice, predicted};
        }
    }
    /* The model misjudges real machines by tens of percent (caches, CPU
     * sharing), so anything else must beat the reference by a clear margin. */
    *slot = best.algo && best.predicted < ref.predicted * (1.0 - TT_TUNER_MARGIN) ? best : ref;
    return *slot;
}
