/* SPDX-License-Identifier: MIT */
/* Symbolic runs for tutti-explain: the terms every buffer element holds after each step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/job.h"
#include "tools/explain_trace.h"

#define PART_BYTES 160
#define LABEL_BYTES (2 * PART_BYTES + 64)

void tt_trace_rank_name(int r, char *out, size_t len)
{
    if (r < 26)
        snprintf(out, len, "%c", 'a' + r);
    else
        snprintf(out, len, "r%d", r);
}

/* "a2+b2+c2", or with many terms "a2+b2+...+p2 (16 terms)". */
static void format_terms(uint64_t ranks, int chunk, int many_chunks, char *out, size_t len)
{
    int n = __builtin_popcountll(ranks), shown = 0, used = 0;
    char name[16];
    out[0] = '\0';
    for (int r = 0; r < 64 && used < (int)len - 1; r++) {
        if (!(ranks >> r & 1))
            continue;
        shown++;
        if (n > 6 && shown > 2 && shown < n) {
            if (shown == 3)
                used += snprintf(out + used, len - (size_t)used, "+...");
            continue;
        }
        tt_trace_rank_name(r, name, sizeof name);
        if (many_chunks)
            used += snprintf(out + used, len - (size_t)used, "%s%s", shown > 1 ? "+" : "", name);
        else
            used += snprintf(out + used, len - (size_t)used, "%s%s%d", shown > 1 ? "+" : "", name, chunk);
    }
    if (n > 6 && used < (int)len - 1)
        snprintf(out + used, len - (size_t)used, " (%d terms)", n);
}

/* "chunk 2 [a2+b2]", "chunks 2-3 [a+b]", or a list of such groups. */
static void format_cells(const tt_cell_t *c, size_t n, char *out, size_t len)
{
    size_t used = 0;
    int groups = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < len - 1;) {
        size_t j = i + 1;
        while (j < n && c[j].ranks == c[i].ranks && c[j].chunk == c[j - 1].chunk + 1)
            j++;
        if (++groups > 3) {
            snprintf(out + used, len - used, ", ...");
            return;
        }
        char terms[96];
        if (c[i].ranks == 0)
            snprintf(terms, sizeof terms, "nothing yet");
        else
            format_terms(c[i].ranks, c[i].chunk, j - i > 1, terms, sizeof terms);
        if (j - i > 1)
            used += (size_t)snprintf(out + used, len - used, "%schunks %d-%d [%s]", groups > 1 ? ", " : "",
                                     c[i].chunk, c[j - 1].chunk, terms);
        else
            used += (size_t)snprintf(out + used, len - used, "%schunk %d [%s]", groups > 1 ? ", " : "",
                                     c[i].chunk, terms);
        i = j;
    }
    if (n == 0)
        snprintf(out, len, "nothing");
}

/* Element counts of a rank's input and output buffers. */
static void buffer_counts(const tt_coll_args_t *a, size_t *in, size_t *out)
{
    size_t n = a->count, pn = n * (size_t)a->nranks;
    *in = a->coll == TT_COLL_REDUCE_SCATTER || a->coll == TT_COLL_ALLTOALL ? pn : n;
    *out = a->coll == TT_COLL_ALLGATHER || a->coll == TT_COLL_ALLTOALL ? pn : n;
}

typedef struct {
    tt_cell_t *buf[3];
} rank_bufs_t;

/* The symbolic run along the job walk. */
typedef struct {
    tt_trace_t *t;
    const tt_job_t *job;
    rank_bufs_t *bufs;
    tt_cell_t ***msgs; /* [rank][step]: the cells a send posted, until received */
    long seq;          /* sends posted so far */
} sym_run_t;

static tt_cell_t *cells_of(rank_bufs_t *b, tt_region_t r)
{
    return b->buf[r.buf] + r.off;
}

/* Local steps first, then the sends go out, each labelled. */
static int sym_start(void *arg, int r, int k)
{
    sym_run_t *sr = arg;
    const tt_sched_t *s = &sr->job->s[r];
    char a[PART_BYTES];
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        char *label = sr->t->labels[r][i];
        if (st->kind == TT_STEP_COPY || st->kind == TT_STEP_REDUCE) {
            tt_cell_t *dst = cells_of(&sr->bufs[r], st->dst), *src = cells_of(&sr->bufs[r], st->src);
            for (size_t e = 0; e < st->dst.count; e++) {
                if (st->kind == TT_STEP_COPY)
                    dst[e] = src[e];
                else
                    dst[e].ranks |= src[e].ranks;
            }
            format_cells(dst, st->dst.count, a, sizeof a);
            snprintf(label, LABEL_BYTES, "%s %s", st->kind == TT_STEP_COPY ? "copies" : "adds up", a);
        } else if (st->kind == TT_STEP_SEND) {
            tt_cell_t *src = cells_of(&sr->bufs[r], st->src);
            size_t n = st->src.count;
            if (!(sr->msgs[r][i] = malloc((n ? n : 1) * sizeof(tt_cell_t))))
                return -1;
            memcpy(sr->msgs[r][i], src, n * sizeof(tt_cell_t));
            tt_sent_t *sent = &sr->t->sent[r][i];
            *sent = (tt_sent_t){-1, -1, sr->seq++};
            for (size_t e = 0; e < n; e++) {
                if (sent->lo < 0 || src[e].chunk < sent->lo)
                    sent->lo = src[e].chunk;
                if (src[e].chunk > sent->hi)
                    sent->hi = src[e].chunk;
            }
            format_cells(src, n, a, sizeof a);
            snprintf(label, LABEL_BYTES, "sends %s to rank %d", a, st->peer);
        }
    }
    return 0;
}

/* Every receive takes what its matching send posted. */
static int sym_finish(void *arg, int r, int k)
{
    sym_run_t *sr = arg;
    const tt_sched_t *s = &sr->job->s[r];
    char a[PART_BYTES], b[PART_BYTES];
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        if (st->kind != TT_STEP_RECV && st->kind != TT_STEP_RECV_REDUCE)
            continue;
        int q = st->peer, qs = sr->job->match[r][i];
        size_t n = sr->job->s[q].steps[qs].src.count;
        tt_cell_t *m = sr->msgs[q][qs];
        if (n != st->dst.count) {
            snprintf(sr->t->error, sizeof sr->t->error,
                     "rank %d round %d: %zu elements sent by %d, %zu expected", r, k, n, q, st->dst.count);
            return -1;
        }
        tt_cell_t *dst = cells_of(&sr->bufs[r], st->dst), *src = cells_of(&sr->bufs[r], st->src);
        format_cells(m, n, a, sizeof a);
        for (size_t e = 0; e < n; e++) {
            if (st->kind == TT_STEP_RECV)
                dst[e] = m[e];
            else
                dst[e] = (tt_cell_t){src[e].ranks | m[e].ranks, m[e].chunk};
        }
        free(m);
        sr->msgs[q][qs] = NULL;
        format_cells(dst, st->dst.count, b, sizeof b);
        if (st->kind == TT_STEP_RECV)
            snprintf(sr->t->labels[r][i], LABEL_BYTES, "gets %s from rank %d", a, q);
        else
            snprintf(sr->t->labels[r][i], LABEL_BYTES, "adds %s from rank %d: %s", a, q, b);
    }
    tt_cell_t *snap = malloc((sr->t->nout + 1) * sizeof *snap);
    if (!snap)
        return -1;
    memcpy(snap, sr->bufs[r].buf[TT_BUF_OUTPUT], sr->t->nout * sizeof *snap);
    sr->t->snap[r][k] = snap;
    return 0;
}

/* Buffers and labels of every rank, inputs holding their own terms. */
static int sym_setup(sym_run_t *sr, const tt_coll_args_t *args)
{
    tt_trace_t *t = sr->t;
    size_t nin, nout;
    buffer_counts(args, &nin, &nout);
    t->nout = nout;
    for (int r = 0; r < t->nranks; r++) {
        const tt_sched_t *s = &sr->job->s[r];
        t->labels[r] = calloc((size_t)s->nsteps + 1, sizeof(char *));
        t->sent[r] = calloc((size_t)s->nsteps + 1, sizeof(tt_sent_t));
        sr->msgs[r] = calloc((size_t)s->nsteps + 1, sizeof(tt_cell_t *));
        t->snap[r] = calloc((size_t)s->nrounds + 1, sizeof(tt_cell_t *));
        sr->bufs[r].buf[TT_BUF_INPUT] = calloc(nin + 1, sizeof(tt_cell_t));
        sr->bufs[r].buf[TT_BUF_OUTPUT] = calloc(nout + 1, sizeof(tt_cell_t));
        sr->bufs[r].buf[TT_BUF_SCRATCH] = calloc(s->scratch_count + 1, sizeof(tt_cell_t));
        if (!t->labels[r] || !t->sent[r] || !sr->msgs[r] || !t->snap[r] || !sr->bufs[r].buf[0] ||
            !sr->bufs[r].buf[1] || !sr->bufs[r].buf[2])
            return -1;
        for (int i = 0; i < s->nsteps; i++)
            if (!(t->labels[r][i] = calloc(LABEL_BYTES, 1)))
                return -1;
        for (size_t i = 0; i < nin; i++) /* all-gather: rank r's data is chunk r */
            sr->bufs[r].buf[TT_BUF_INPUT][i] =
                (tt_cell_t){1ull << r, (int)(args->coll == TT_COLL_ALLGATHER ? r * args->count + i : i)};
    }
    return 0;
}

int tt_trace_run(tt_trace_t *t, const tt_algorithm_t *algo, const tt_coll_args_t *args)
{
    int p = args->nranks, rc = -1;
    memset(t, 0, sizeof *t);
    t->nranks = p;
    tt_job_t job;
    if (tt_job_build(&job, algo, args) != TUTTI_SUCCESS) {
        snprintf(t->error, sizeof t->error, "%s does not serve %s", algo->name, tt_coll_name(args->coll));
        return -1;
    }
    t->s = job.s; /* the trace keeps the schedules; the job frees the rest */
    t->labels = calloc((size_t)p, sizeof *t->labels);
    t->sent = calloc((size_t)p, sizeof *t->sent);
    t->out = calloc((size_t)p, sizeof *t->out);
    t->snap = calloc((size_t)p, sizeof *t->snap);
    sym_run_t sr = {.t = t,
                    .job = &job,
                    .bufs = calloc((size_t)p, sizeof(rank_bufs_t)),
                    .msgs = calloc((size_t)p, sizeof(tt_cell_t **))};
    tt_job_visit_t v = {.start = sym_start, .finish = sym_finish, .arg = &sr};
    tt_job_walk_t w = {0};
    if (!t->labels || !t->sent || !t->out || !t->snap || !sr.bufs || !sr.msgs || sym_setup(&sr, args)) {
        snprintf(t->error, sizeof t->error, "out of memory");
    } else {
        int walked = tt_job_walk(&job, &v, &w);
        if (walked > 0)
            snprintf(t->error, sizeof t->error, "the schedule deadlocks (%d ranks never finish)", w.stuck);
        rc = walked == 0 ? 0 : -1;
    }
    for (int r = 0; sr.bufs && r < p; r++) {
        if (t->out) { /* the caller keeps the outputs */
            t->out[r] = sr.bufs[r].buf[TT_BUF_OUTPUT];
            sr.bufs[r].buf[TT_BUF_OUTPUT] = NULL;
        }
        for (int b = 0; b < 3; b++)
            free(sr.bufs[r].buf[b]);
        for (int i = 0; sr.msgs && sr.msgs[r] && i < t->s[r].nsteps; i++)
            free(sr.msgs[r][i]);
        if (sr.msgs)
            free(sr.msgs[r]);
    }
    free(sr.bufs);
    free(sr.msgs);
    job.s = NULL;
    tt_job_free(&job);
    if (rc && !t->error[0])
        snprintf(t->error, sizeof t->error, "out of memory");
    return rc;
}

void tt_trace_free(tt_trace_t *t)
{
    for (int r = 0; r < t->nranks; r++) {
        for (int i = 0; t->labels && t->labels[r] && i < t->s[r].nsteps; i++)
            free(t->labels[r][i]);
        if (t->labels)
            free(t->labels[r]);
        if (t->sent)
            free(t->sent[r]);
        for (int k = 0; t->snap && t->snap[r] && t->s && k < t->s[r].nrounds; k++)
            free(t->snap[r][k]);
        if (t->snap)
            free(t->snap[r]);
        if (t->s)
            tt_sched_free(&t->s[r]);
        if (t->out)
            free(t->out[r]);
    }
    free(t->out);
    free(t->snap);
    free(t->labels);
    free(t->sent);
    free(t->s);
    memset(t, 0, sizeof *t);
}
