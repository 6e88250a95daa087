/* SPDX-License-Identifier: MIT */
/* The cost model: link classes' alpha, beta and gamma, and the price of a schedule (see cost.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/job.h"
#include "tune/cost.h"
#include "tune/cost_sample.h"

/* alpha in microseconds, bandwidths in GB/s (1e9 bytes). */
static tt_link_cost_t link_cost(double alpha_us, double gb_per_s, double reduce_gb_per_s)
{
    return (tt_link_cost_t){alpha_us * 1e-6, 1.0 / (gb_per_s * 1e9), 1.0 / (reduce_gb_per_s * 1e9)};
}

void tt_cost_defaults(tt_cost_model_t *m)
{
    *m = (tt_cost_model_t){0}; /* no pair table, no classes fixed */
    /* Each class's typical figures (TT_LINK_LIST says whose). */
    for (int l = 0; l < TT_LINK_COUNT; l++) {
        const tt_link_facts_t *f = tt_link_facts((tt_link_t)l);
        m->link[l] =
            (tt_link_cost_t){f->alpha_us * 1e-6, 1.0 / (f->gb_per_s * 1e9), 1.0 / (f->reduce_gb_per_s * 1e9)};
    }
    m->intra = TT_LINK_SHM;
    m->inter = TT_LINK_TCP;
    m->inter_links = 1;
    m->crowding = 1;
    m->wake_s = 1.5e-6; /* a Linux context switch on a VM, measured at 4 and 8 ranks on 2 CPUs */
    m->fix.n = 0;
}

/* One line of a tuning file into line: 1, or 0 at its end. A line longer
 * than the buffer is read to its end; it is kept (as far as it fits) only
 * when it is a comment by then, for tutti-bw --fit writes long comments (a
 * loaded machine's description) and no setting is that long: -1 else. */
static int read_line(FILE *f, char *line, int size)
{
    if (!fgets(line, size, f))
        return 0;
    if (strchr(line, '\n') || feof(f))
        return 1;
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n')
        ;
    return strchr(line, '#') ? 1 : -1;
}

tutti_status_t tt_cost_load(tt_cost_model_t *m, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "TUTTI_TUNING_FILE %s: %s", path, strerror(errno));
        return TUTTI_ERR_CONFIG;
    }
    char line[256];
    int lineno = 0;
    tutti_status_t st = TUTTI_SUCCESS;
    int got;
    while (st == TUTTI_SUCCESS && (got = read_line(f, line, (int)sizeof line)) != 0) {
        lineno++;
        if (got < 0) {
            snprintf(err, errlen, "TUTTI_TUNING_FILE %s:%d: a setting longer than %d characters", path,
                     lineno, (int)sizeof line - 2);
            st = TUTTI_ERR_CONFIG;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char word[32], name[32], extra[2];
        double alpha, bw, rbw;
        int count;
        tt_link_t link;
        int n = sscanf(line, "%31s", word);
        if (n != 1)
            continue; /* blank or comment */
        if ((strcmp(word, "intra") == 0 || strcmp(word, "inter") == 0) &&
            sscanf(line, "%31s %31s %1s", word, name, extra) == 2 && tt_link_named(name, &link) == 0) {
            *(strcmp(word, "intra") == 0 ? &m->intra : &m->inter) = link;
            m->classes_fixed = 1;
        } else if (strcmp(word, "inter_links") == 0 &&
                   sscanf(line, "%31s %d %1s", word, &count, extra) == 2 && count >= 1) {
            m->inter_links = count;
        } else if (strcmp(word, "wake_us") == 0 && sscanf(line, "%31s %lf %1s", word, &alpha, extra) == 2 &&
                   alpha >= 0) {
            m->wake_s = alpha * 1e-6;
        } else if (strcmp(word, "fix") == 0 && m->fix.n == TT_COST_FIX_MAX) {
            snprintf(err, errlen, "TUTTI_TUNING_FILE %s:%d: more than %d fix lines", path, lineno,
                     TT_COST_FIX_MAX);
            st = TUTTI_ERR_CONFIG;
        } else if (strcmp(word, "fix") == 0 && tt_cost_fix_parse(&m->fix, line) == 0) {
            /* a measured correction */
        } else if (tt_link_named(word, &link) == 0 &&
                   sscanf(line, "%31s %lf %lf %lf %1s", name, &alpha, &bw, &rbw, extra) == 4 && alpha >= 0 &&
                   bw > 0 && rbw > 0) {
            m->link[link] = link_cost(alpha, bw, rbw);
        } else {
            snprintf(err, errlen,
                     "TUTTI_TUNING_FILE %s:%d: expected \"CLASS ALPHA_US GB_PER_S REDUCE_GB_PER_S\", "
                     "\"intra|inter CLASS\" (classes: shm tcp pcie nvlink ib), \"inter_links N\", "
                     "\"wake_us US\" or \"fix COLL ALGO NRANKS NHOSTS SIZE_CLASS FACTOR\"",
                     path, lineno);
            st = TUTTI_ERR_CONFIG;
        }
    }
    fclose(f);
    return st;
}

void tt_cost_use_links(tt_cost_model_t *m, const tt_hosts_t *hosts, int nranks,
                       tt_link_t (*link_of)(const void *arg, int a, int b), const void *arg)
{
    /* The first rank with an earlier one on its host gives intra, the
     * first on another host than rank 0 gives inter: one pass, so that
     * no rank is compared with all. */
    int *first = malloc((size_t)hosts->nhosts * sizeof *first);
    int seen_intra = 0, seen_inter = 0;
    for (int h = 0; first && h < hosts->nhosts; h++)
        first[h] = -1;
    for (int r = 0; first && r < nranks && !(seen_intra && seen_inter); r++) {
        int h = hosts->host_of[r];
        if (first[h] >= 0 && !seen_intra) {
            m->intra = link_of(arg, first[h], r);
            seen_intra = 1;
        }
        if (first[h] < 0)
            first[h] = r;
        if (h != hosts->host_of[0] && !seen_inter) {
            m->inter = link_of(arg, 0, r);
            seen_inter = 1;
        }
    }
    free(first);
    m->link_of = link_of;
    m->link_arg = arg;
}

tt_link_t tt_cost_link(const tt_cost_model_t *m, const tt_hosts_t *hosts, int a, int b)
{
    if (m->link_of)
        return m->link_of(m->link_arg, a, b);
    if (!hosts || hosts->host_of[a] == hosts->host_of[b])
        return m->intra;
    return m->inter;
}

tt_round_cost_t tt_cost_round(const tt_cost_model_t *m, const tt_coll_args_t *args, const tt_sched_t *s,
                              int round, size_t elem, int nslices)
{
    tt_round_cost_t rc = {.busiest = m->intra};
    /* Where the CPU copies or reduces (TT_LINK_LIST), crowded ranks get a
     * share of it; DMA engines and GPU kernels are not shared so. */
    double crowd = m->crowding > 1 ? m->crowding : 1;
    double copy_share[TT_LINK_COUNT], reduce_share[TT_LINK_COUNT];
    for (int l = 0; l < TT_LINK_COUNT; l++) {
        copy_share[l] = tt_link_facts((tt_link_t)l)->cpu_copies ? crowd : 1;
        reduce_share[l] = tt_link_facts((tt_link_t)l)->cpu_reduces ? crowd : 1;
    }
    double out[TT_LINK_COUNT] = {0}, in[TT_LINK_COUNT] = {0}, local = 0;
    int nout[TT_LINK_COUNT] = {0}, nin[TT_LINK_COUNT] = {0};
    int n;
    const tt_step_t *st = tt_sched_round_steps(s, round, &n);
    for (int i = 0; i < n; i++) {
        size_t bytes = (st[i].kind == TT_STEP_SEND ? st[i].src.count : st[i].dst.count) * elem;
        double slice = (double)bytes / nslices;
        tt_link_t l = st[i].peer >= 0 ? tt_cost_link(m, args->hosts, args->rank, st[i].peer) : m->intra;
        int off_host = st[i].peer >= 0 && args->hosts &&
                       args->hosts->host_of[args->rank] != args->hosts->host_of[st[i].peer];
        if (st[i].kind == TT_STEP_SEND) {
            out[l] += slice;
            nout[l]++;
            rc.sent += bytes;
            rc.sent_off_host += off_host ? bytes : 0;
        } else if (st[i].kind == TT_STEP_RECV || st[i].kind == TT_STEP_RECV_REDUCE) {
            in[l] += slice;
            nin[l]++;
            rc.received += bytes;
            rc.received_off_host += off_host ? bytes : 0;
        } else if (st[i].kind == TT_STEP_COPY) {
            local += slice * m->link[m->intra].beta * copy_share[m->intra];
        }
        if (st[i].kind == TT_STEP_RECV_REDUCE || st[i].kind == TT_STEP_REDUCE) {
            /* Received data is reduced where its link class reduces (CPU or GPU). */
            tt_link_t where = st[i].kind == TT_STEP_REDUCE ? m->intra : l;
            local += slice * m->link[where].gamma * reduce_share[where];
            rc.reduced += bytes;
        }
    }
    /* Messages of one round share their class's bandwidth in each
     * direction; reductions and copies come on top of the receiving side. */
    double busiest = -1;
    for (int l = 0; l < TT_LINK_COUNT; l++) {
        double t_out = nout[l] * m->link[l].alpha + out[l] * m->link[l].beta * copy_share[l];
        double t_in = nin[l] * m->link[l].alpha + in[l] * m->link[l].beta * copy_share[l];
        rc.messages += nout[l] + nin[l];
        if (t_out > rc.send_seconds)
            rc.send_seconds = t_out;
        if (t_in > rc.recv_seconds)
            rc.recv_seconds = t_in;
        if ((nout[l] || nin[l]) && (t_out > t_in ? t_out : t_in) > busiest) {
            busiest = t_out > t_in ? t_out : t_in;
            rc.busiest = (tt_link_t)l;
        }
    }
    rc.recv_seconds += local;
    /* On crowded CPUs, waiting for a peer means sleeping until another
     * rank's time slice ends: once per round, whatever its messages. */
    if (crowd > 1 && rc.messages > 0)
        rc.recv_seconds += m->wake_s * crowd;
    rc.seconds = rc.send_seconds > rc.recv_seconds ? rc.send_seconds : rc.recv_seconds;
    return rc;
}

/* Every rank's schedule and, per rank and round, one slice's cost and when
 * the round starts in the walk (-1 until the rank gets there). */
typedef struct {
    tt_job_t job;
    double **round_start; /* [rank][round]; [nrounds]: when the rank finishes */
    double **round_cost;  /* [rank][round]: one slice */
} job_t;

static void job_free(job_t *j)
{
    for (int r = 0; r < j->job.nranks; r++) {
        if (j->round_start)
            free(j->round_start[r]);
        if (j->round_cost)
            free(j->round_cost[r]);
    }
    free(j->round_start);
    free(j->round_cost);
    tt_job_free(&j->job);
}

static int job_build(job_t *j, const tt_algorithm_t *algo, const tt_coll_args_t *args)
{
    if (tt_job_build(&j->job, algo, args) != TUTTI_SUCCESS)
        return -1;
    int p = j->job.nranks;
    j->round_start = calloc((size_t)p, sizeof *j->round_start);
    j->round_cost = calloc((size_t)p, sizeof *j->round_cost);
    if (!j->round_start || !j->round_cost)
        return -1;
    for (int r = 0; r < p; r++) {
        j->round_start[r] = malloc(((size_t)j->job.s[r].nrounds + 1) * sizeof(double));
        j->round_cost[r] = malloc(((size_t)j->job.s[r].nrounds + 1) * sizeof(double));
        if (!j->round_start[r] || !j->round_cost[r])
            return -1;
    }
    return 0;
}

typedef struct {
    job_t *j;
    const tt_cost_model_t *m;
    size_t elem;
    int nslices;
} trip_t;

/* A round ends when its own work is done and its last transfer has
 * arrived; a transfer starts once both ends have reached their rounds. On
 * crowded CPUs a rank that got to a receive first has slept meanwhile, and
 * the data is taken only once it has its CPU back: every hop of a chain of
 * such waits pays a switch, which is what makes a long chain slow there. */
static int trip_finish(void *arg, int r, int k)
{
    trip_t *t = arg;
    const tt_job_t *job = &t->j->job;
    const tt_sched_t *s = &job->s[r];
    double start = t->j->round_start[r][k], end = start + t->j->round_cost[r][k];
    double wake = t->m->crowding > 1 ? t->m->wake_s * t->m->crowding : 0;
    for (int i = s->round_first[k]; i < s->round_first[k + 1]; i++) {
        const tt_step_t *st = &s->steps[i];
        if (st->peer < 0)
            continue;
        int q = st->peer, qstep = job->match[r][i];
        double peer_start = t->j->round_start[q][job->round[q][qstep]];
        size_t bytes = (st->kind == TT_STEP_SEND ? st->src.count : st->dst.count) * t->elem;
        const tt_link_cost_t *c = &t->m->link[tt_cost_link(t->m, job->args[r].hosts, r, q)];
        double ready = peer_start <= start        ? start
                       : st->kind == TT_STEP_SEND ? peer_start
                                                  : peer_start + wake;
        double arrive = ready + c->alpha + (double)bytes / t->nslices * c->beta;
        if (arrive > end)
            end = arrive;
    }
    t->j->round_start[r][k + 1] = end;
    return 0;
}

/* One slice through the whole job, each transfer waiting for both its
 * ends. Returns the last rank's finish time, or -1 on a deadlock. */
static double one_slice_trip(job_t *j, const tt_cost_model_t *m, size_t elem, int nslices)
{
    for (int r = 0; r < j->job.nranks; r++) {
        j->round_start[r][0] = 0;
        for (int k = 1; k <= j->job.s[r].nrounds; k++)
            j->round_start[r][k] = -1;
    }
    trip_t t = {j, m, elem, nslices};
    tt_job_visit_t v = {.finish = trip_finish, .arg = &t};
    tt_job_walk_t w = {.rendezvous = 1};
    if (tt_job_walk(&j->job, &v, &w) != 0)
        return -1;
    double finish = 0;
    for (int r = 0; r < j->job.nranks; r++)
        if (j->round_start[r][j->job.s[r].nrounds] > finish)
            finish = j->round_start[r][j->job.s[r].nrounds];
    return finish;
}

#define TT_COST_EXACT_RANKS 64
/* Beyond TT_COST_EXACT_RANKS, the walk's budget: this many steps per rank and log2 of the ranks. */
#define TT_COST_WALK_STEPS_PER_RANK_LOG 4

/* Fills each rank's per-slice round costs; returns W: the busiest rank's
 * sending or receiving time over all slices, or the busiest host's
 * traffic to other hosts through its shared links, whichever is longer. */
static double job_costs(job_t *j, const tt_cost_model_t *m, size_t elem, int nslices)
{
    const tt_job_t *job = &j->job;
    const tt_hosts_t *hosts = job->args[0].hosts;
    int nhosts = hosts ? hosts->nhosts : 1;
    double work = 0, *host_out = calloc((size_t)nhosts, sizeof(double)),
           *host_in = calloc((size_t)nhosts, sizeof(double));
    for (int r = 0; r < job->nranks; r++) {
        double send = 0, recv = 0;
        for (int k = 0; k < job->s[r].nrounds; k++) {
            tt_round_cost_t rc = tt_cost_round(m, &job->args[r], &job->s[r], k, elem, nslices);
            j->round_cost[r][k] = rc.seconds;
            send += rc.send_seconds;
            recv += rc.recv_seconds;
            if (hosts && host_out && host_in) {
                host_out[hosts->host_of[r]] += (double)rc.sent_off_host;
                host_in[hosts->host_of[r]] += (double)rc.received_off_host;
            }
        }
        double busy = (send > recv ? send : recv) * nslices;
        if (busy > work)
            work = busy;
    }
    for (int h = 0; host_out && host_in && h < nhosts; h++) {
        double bytes = host_out[h] > host_in[h] ? host_out[h] : host_in[h];
        double busy = bytes * m->link[m->inter].beta / m->inter_links;
        if (busy > work)
            work = busy;
    }
    free(host_out);
    free(host_in);
    return work;
}

int tt_cost_round_ends(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                       size_t elem, int nslices, double *ends, int nrounds)
{
    job_t j = {0};
    int rc = -1;
    if (args->nranks <= TT_COST_EXACT_RANKS && job_build(&j, algo, args) == 0) {
        job_costs(&j, m, elem, nslices);
        if (one_slice_trip(&j, m, elem, nslices) >= 0 && j.job.s[args->rank].nrounds == nrounds) {
            for (int k = 0; k < nrounds; k++)
                ends[k] = j.round_start[args->rank][k + 1];
            rc = 0;
        }
    }
    job_free(&j);
    return rc;
}

int tt_cost_predict_walk(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out)
{
    job_t j = {0};
    int rc = job_build(&j, algo, args); /* the schedules once, priced per slice count */
    for (int i = 0; i < count && rc == 0; i++) {
        double work = job_costs(&j, m, elem, nslices[i]);
        double trip = one_slice_trip(&j, m, elem, nslices[i]);
        out[i] = trip < 0 ? -1 : trip + work * (1.0 - 1.0 / nslices[i]);
        rc = trip < 0 ? -1 : 0;
    }
    job_free(&j);
    return rc;
}

int tt_cost_walk_affordable(double steps, int p)
{
    int lg = 1;
    while ((1 << lg) < p)
        lg++;
    return steps <= TT_COST_WALK_STEPS_PER_RANK_LOG * (double)p * lg;
}

int tt_cost_predict_each(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                         size_t elem, const int *nslices, int count, double *out)
{
    if (args->nranks <= TT_COST_EXACT_RANKS)
        return tt_cost_predict_walk(m, algo, args, elem, nslices, count, out);
    /* A sample stands for the job where its ranks run alike: each round
     * then costs what its costliest sampled rank's does, as in the walk.
     * Where they do not (a tree, a chain), the walk decides. */
    int alike;
    double steps;
    if (tt_cost_sample_price(m, algo, args, elem, nslices, count, out, &alike, &steps))
        return -1;
    if (!alike && tt_cost_walk_affordable(steps, args->nranks))
        return tt_cost_predict_walk(m, algo, args, elem, nslices, count, out);
    return 0;
}

double tt_cost_predict(const tt_cost_model_t *m, const tt_algorithm_t *algo, const tt_coll_args_t *args,
                       size_t elem, int nslices)
{
    double t;
    return tt_cost_predict_each(m, algo, args, elem, &nslices, 1, &t) ? -1 : t;
}
