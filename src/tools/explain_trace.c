/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
    tt_cell_t *cells;
    size_t n;
} msg_t;

typedef struct {
    msg_t *items;
    int head, len, cap;
} queue_t;

static int push(queue_t *q, const tt_cell_t *cells, size_t n)
{
    if (q->head + q->len == q->cap) {
        int cap = q->cap ? 2 * q->cap : 8;
        msg_t *grown = realloc(q->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        q->items = grown;
        q->cap = cap;
    }
    msg_t m = {malloc((n ? n : 1) * sizeof(tt_cell_t)), n};
    if (!m.cells)
        return -1;
    memcpy(m.cells, cells, n * sizeof(tt_cell_t));
    q->items[q->head + q->len++] = m;
    return 0;
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

static tt_cell_t *cells_of(rank_bufs_t *b, tt_region_t r)
{
    return b->buf[r.buf] + r.off;
}

int tt_trace_run(tt_trace_t *t, const tt_algorithm_t *algo, const tt_coll_args_t *args)
{
    int p = args->nranks, rc = -1;
    memset(t, 0, sizeof *t);
    t->nranks = p;
    t->s = calloc((size_t)p, sizeof *t->s);
    t->labels = calloc((size_t)p, sizeof *t->labels);
    t->out = calloc((size_t)p, sizeof *t->out);
    rank_bufs_t *bufs = calloc((size_t)p, sizeof *bufs);
    queue_t *queues = calloc((size_t)p * (size_t)p, sizeof *queues); /* [from * p + to] */
    int *round = calloc((size_t)p, sizeof *round), *posted = calloc((size_t)p, sizeof *posted);
    int *need = calloc((size_t)p, sizeof *need); /* receives per peer in the round at hand */
    if (!t->s || !t->labels || !t->out || !bufs || !queues || !round || !posted || !need) {
        snprintf(t->error, sizeof t->error, "out of memory");
        goto out;
    }
    size_t nin, nout;
    buffer_counts(args, &nin, &nout);
    t->nout = nout;
    for (int r = 0; r < p; r++) {
        tt_coll_args_t a = *args;
        a.rank = r;
        if (tt_sched_build(algo, &a, &t->s[r]) != TUTTI_SUCCESS) {
            snprintf(t->error, sizeof t->error, "%s does not serve %s", algo->name, tt_coll_name(args->coll));
            goto out;
        }
        t->labels[r] = calloc((size_t)t->s[r].nsteps + 1, sizeof(char *));
        bufs[r].buf[TT_BUF_INPUT] = calloc(nin + 1, sizeof(tt_cell_t));
        bufs[r].buf[TT_BUF_OUTPUT] = calloc(nout + 1, sizeof(tt_cell_t));
        bufs[r].buf[TT_BUF_SCRATCH] = calloc(t->s[r].scratch_count + 1, sizeof(tt_cell_t));
        if (!t->labels[r] || !bufs[r].buf[0] || !bufs[r].buf[1] || !bufs[r].buf[2])
            goto out;
        for (int i = 0; i < t->s[r].nsteps; i++)
            if (!(t->labels[r][i] = calloc(LABEL_BYTES, 1)))
                goto out;
        for (size_t i = 0; i < nin; i++) /* all-gather: rank r's data is chunk r */
            bufs[r].buf[TT_BUF_INPUT][i] =
                (tt_cell_t){1ull << r, (int)(args->coll == TT_COLL_ALLGATHER ? r * args->count + i : i)};
    }
    int left = 0, progress = 1;
    for (int r = 0; r < p; r++)
        left += t->s[r].nrounds > 0;
    while (left && progress) {
        progress = 0;
        for (int r = 0; r < p; r++) {
            tt_sched_t *s = &t->s[r];
            while (round[r] < s->nrounds) {
                int n, first = s->round_first[round[r]];
                const tt_step_t *st = tt_sched_round_steps(s, round[r], &n);
                char a[PART_BYTES], b[PART_BYTES];
                if (!posted[r]) { /* local steps first, then the sends go out */
                    for (int i = 0; i < n; i++) {
                        char *label = t->labels[r][first + i];
                        if (st[i].kind == TT_STEP_COPY || st[i].kind == TT_STEP_REDUCE) {
                            tt_cell_t *dst = cells_of(&bufs[r], st[i].dst),
                                      *src = cells_of(&bufs[r], st[i].src);
                            for (size_t e = 0; e < st[i].dst.count; e++) {
                                if (st[i].kind == TT_STEP_COPY)
                                    dst[e] = src[e];
                                else
                                    dst[e].ranks |= src[e].ranks;
                            }
                            format_cells(dst, st[i].dst.count, a, sizeof a);
                            snprintf(label, LABEL_BYTES, "%s %s",
                                     st[i].kind == TT_STEP_COPY ? "copies" : "adds up", a);
                        } else if (st[i].kind == TT_STEP_SEND) {
                            tt_cell_t *src = cells_of(&bufs[r], st[i].src);
                            if (push(&queues[r * p + st[i].peer], src, st[i].src.count))
                                goto out;
                            format_cells(src, st[i].src.count, a, sizeof a);
                            snprintf(label, LABEL_BYTES, "sends %s to rank %d", a, st[i].peer);
                        }
                    }
                    posted[r] = 1;
                    progress = 1;
                }
                /* The round completes once every receive has its message. */
                int ready = 1;
                memset(need, 0, (size_t)p * sizeof *need);
                for (int i = 0; i < n; i++)
                    if (st[i].kind == TT_STEP_RECV || st[i].kind == TT_STEP_RECV_REDUCE)
                        ready &= ++need[st[i].peer] <= queues[st[i].peer * p + r].len;
                if (!ready)
                    break;
                for (int i = 0; i < n; i++) {
                    if (st[i].kind != TT_STEP_RECV && st[i].kind != TT_STEP_RECV_REDUCE)
                        continue;
                    queue_t *q = &queues[st[i].peer * p + r];
                    msg_t m = q->items[q->head++];
                    q->len--;
                    if (m.n != st[i].dst.count) {
                        snprintf(t->error, sizeof t->error,
                                 "rank %d round %d: %zu elements sent by %d, %zu expected", r, round[r], m.n,
                                 st[i].peer, st[i].dst.count);
                        free(m.cells);
                        goto out;
                    }
                    tt_cell_t *dst = cells_of(&bufs[r], st[i].dst), *src = cells_of(&bufs[r], st[i].src);
                    format_cells(m.cells, m.n, a, sizeof a);
                    for (size_t e = 0; e < m.n; e++) {
                        if (st[i].kind == TT_STEP_RECV)
                            dst[e] = m.cells[e];
                        else
                            dst[e] = (tt_cell_t){src[e].ranks | m.cells[e].ranks, m.cells[e].chunk};
                    }
                    free(m.cells);
                    format_cells(dst, st[i].dst.count, b, sizeof b);
                    if (st[i].kind == TT_STEP_RECV)
                        snprintf(t->labels[r][first + i], LABEL_BYTES, "gets %s from rank %d", a, st[i].peer);
                    else
                        snprintf(t->labels[r][first + i], LABEL_BYTES, "adds %s from rank %d: %s", a,
                                 st[i].peer, b);
                }
                round[r]++;
                posted[r] = 0;
                progress = 1;
                if (round[r] == s->nrounds)
                    left--;
            }
        }
    }
    if (left) {
        snprintf(t->error, sizeof t->error, "the schedule deadlocks (%d ranks never finish)", left);
        goto out;
    }
    rc = 0;
out:
    for (int r = 0; bufs && r < p; r++) {
        if (t->out) { /* the caller keeps the outputs */
            t->out[r] = bufs[r].buf[TT_BUF_OUTPUT];
            bufs[r].buf[TT_BUF_OUTPUT] = NULL;
        }
        for (int b = 0; b < 3; b++)
            free(bufs[r].buf[b]);
    }
    for (int i = 0; queues && i < p * p; i++) {
        for (int k = queues[i].head; k < queues[i].head + queues[i].len; k++)
            free(queues[i].items[k].cells);
        free(queues[i].items);
    }
    free(bufs);
    free(queues);
    free(round);
    free(posted);
    free(need);
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
        if (t->s)
            tt_sched_free(&t->s[r]);
        if (t->out)
            free(t->out[r]);
    }
    free(t->out);
    free(t->labels);
    free(t->s);
    memset(t, 0, sizeof *t);
}
