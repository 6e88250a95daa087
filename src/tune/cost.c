/* SPDX-License-Identifier: MIT */
/* The cost model: link classes' alpha, beta and gamma, a tuning file's figures, and one round's
 * price (see cost.h); cost_walk.c prices whole schedules with it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune/cost.h"

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
