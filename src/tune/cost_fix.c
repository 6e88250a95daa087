/* SPDX-License-Identifier: MIT */
/* The measured corrections of the cost model: parsing, lookup and writing. */
#include <stdio.h>
#include <string.h>

#include "tune/cost_fix.h"

int tt_cost_size_class(size_t bytes)
{
    int c = 0;
    while (bytes >>= 1)
        c++;
    return c;
}

static int shape_nhosts(const tt_coll_args_t *args)
{
    return args->hosts ? args->hosts->nhosts : 1;
}

int tt_cost_fix_set(tt_cost_fix_t *f, const tt_cost_fix_entry_t *e)
{
    for (int i = 0; i < f->n; i++) {
        tt_cost_fix_entry_t *x = &f->e[i];
        if (x->coll == e->coll && x->nranks == e->nranks && x->nhosts == e->nhosts &&
            x->size_class == e->size_class && strcmp(x->algo, e->algo) == 0) {
            *x = *e;
            return 0;
        }
    }
    if (f->n == TT_COST_FIX_MAX)
        return -1;
    f->e[f->n++] = *e;
    return 0;
}

int tt_cost_fix_parse(tt_cost_fix_t *f, const char *line)
{
    char word[8], coll[32], extra[2];
    tt_cost_fix_entry_t e = {0};
    if (sscanf(line, "%7s %31s %23s %d %d %d %lf %1s", word, coll, e.algo, &e.nranks, &e.nhosts,
               &e.size_class, &e.factor, extra) != 7 ||
        strcmp(word, "fix") != 0 || e.nranks < 1 || e.nhosts < 1 || e.nhosts > e.nranks || e.size_class < 0 ||
        e.size_class > 62 || !(e.factor > 0 && e.factor < 1e6))
        return -1;
    e.coll = -1;
    for (int c = 0; c < TT_COLL_COUNT; c++)
        if (strcmp(coll, tt_coll_name((tt_coll_t)c)) == 0)
            e.coll = c;
    return e.coll < 0 ? -1 : tt_cost_fix_set(f, &e);
}

int tt_cost_fix_covers(const tt_cost_fix_t *f, const tt_coll_args_t *args)
{
    for (int i = 0; i < f->n; i++)
        if (f->e[i].coll == (int)args->coll && f->e[i].nranks == args->nranks &&
            f->e[i].nhosts == shape_nhosts(args))
            return 1;
    return 0;
}

double tt_cost_fix_factor(const tt_cost_fix_t *f, const char *algo, const tt_coll_args_t *args, size_t bytes)
{
    int cls = tt_cost_size_class(bytes);
    for (int i = 0; i < f->n; i++) {
        const tt_cost_fix_entry_t *e = &f->e[i];
        if (e->coll == (int)args->coll && e->nranks == args->nranks && e->nhosts == shape_nhosts(args) &&
            e->size_class == cls && strcmp(e->algo, algo) == 0)
            return e->factor;
    }
    return 1;
}

int tt_cost_fix_save(const tt_cost_fix_t *f, FILE *out)
{
    if (f->n)
        fprintf(out, "# fix COLL ALGO NRANKS NHOSTS SIZE_CLASS(log2 bytes) MEASURED/PREDICTED\n");
    for (int i = 0; i < f->n; i++) {
        const tt_cost_fix_entry_t *e = &f->e[i];
        fprintf(out, "fix %s %s %d %d %d %.4f\n", tt_coll_name((tt_coll_t)e->coll), e->algo, e->nranks,
                e->nhosts, e->size_class, e->factor);
    }
    return ferror(out) ? -1 : 0;
}
