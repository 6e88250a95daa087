/* SPDX-License-Identifier: MIT */
/* tutti-explain's schedule for machines and documents: JSON for the page and
 * the report's animation, and a Mermaid sequence diagram. */
#include <stdio.h>
#include <string.h>

#include "algorithms/registry.h"
#include "sched/hosts.h"
#include "tools/explain_formula.h"
#include "tools/explain_json.h"
#include "tools/explain_shape.h"

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20 || *s == '<') /* '<' too: the page embeds it in a script */
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    fputc('"', f);
}

/* "chunk 2 [a2+b2]" of "sends chunk 2 [a2+b2] to rank 1": what a message carries. */
static void carried(const char *label, char *out, size_t len)
{
    snprintf(out, len, "%s", strncmp(label, "sends ", 6) == 0 ? label + 6 : label);
    char *to = strstr(out, " to rank ");
    if (to)
        *to = '\0';
}

static void json_ints(FILE *f, const char *name, const int *v, int n)
{
    fprintf(f, ",\"%s\":[", name);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

static void json_shape(FILE *f, const tt_shape_t *sh, const tt_view_t *v)
{
    int p = v->t->nranks;
    fprintf(f, ",\"shape\":{\"kind\":\"%s\"", tt_shape_name(sh->kind));
    json_ints(f, "host", v->o->args->hosts->host_of, p);
    fprintf(f, ",\"trees\":[");
    for (int g = 0; g < sh->ntrees; g++) {
        const tt_shape_tree_t *tr = &sh->tree[g];
        fprintf(f, "%s{\"root\":%d,\"chunks\":\"", g ? "," : "", tr->root);
        /* the runs of chunks it carries: "0-3", "0-1, 4-5" */
        for (int c = 0, runs = 0; c < (int)v->t->nout; c++) {
            if (sh->tree_of_chunk[c] != g || (c > 0 && sh->tree_of_chunk[c - 1] == g))
                continue;
            int e = c;
            while (e + 1 < (int)v->t->nout && sh->tree_of_chunk[e + 1] == g)
                e++;
            fprintf(f, "%s%d", runs++ ? ", " : "", c);
            if (e > c)
                fprintf(f, "-%d", e);
        }
        fputc('"', f);
        json_ints(f, "parent", tr->parent, p);
        json_ints(f, "depth", tr->depth, p);
        fprintf(f, ",\"x\":[");
        for (int r = 0; r < p; r++)
            fprintf(f, "%s%.4g", r ? "," : "", tr->x[r]);
        fprintf(f, "]}");
    }
    fprintf(f, "]}");
}

static void json_grid(FILE *f, const tt_view_t *v, int s)
{
    const tt_trace_t *t = v->t;
    fprintf(f, ",\"grid\":[");
    for (int r = 0; r < t->nranks; r++) {
        const tt_cell_t *cells = tt_view_state_after(v, r, s);
        fprintf(f, "%s[", r ? "," : "");
        for (size_t c = 0; c < t->nout && c < 64; c++) {
            char cell[72];
            tt_view_grid_cell(cells ? cells[c].ranks : 0, t->nranks, cell, sizeof cell);
            fprintf(f, "%s", c ? "," : "");
            json_string(f, cell);
        }
        fputc(']', f);
    }
    fputc(']', f);
}

/* The messages of the slots [first, end) of one step; a message on a tree's
 * edges names the tree. */
static void json_messages(FILE *f, const tt_view_t *v, const tt_shape_t *sh, int first, int end)
{
    const tt_trace_t *t = v->t;
    int nm = 0;
    fprintf(f, ",\"messages\":[");
    for (int j = first; j < end; j++) {
        const tt_step_slot_t *sl = &v->steps.slots[j];
        int n, k0 = t->s[sl->rank].round_first[sl->round];
        const tt_step_t *st = tt_sched_round_steps(&t->s[sl->rank], sl->round, &n);
        for (int k = 0; k < n; k++) {
            if (st[k].kind != TT_STEP_SEND)
                continue;
            char what[400];
            int lo = t->sent[sl->rank][k0 + k].lo;
            carried(t->labels[sl->rank][k0 + k], what, sizeof what);
            fprintf(f, "%s{\"from\":%d,\"to\":%d,\"carries\":", nm++ ? "," : "", sl->rank, st[k].peer);
            json_string(f, what);
            if (sh->kind == TT_SHAPE_TREE && lo >= 0 && sh->tree_of_chunk[lo] >= 0)
                fprintf(f, ",\"tree\":%d", sh->tree_of_chunk[lo]);
            fputc('}', f);
        }
    }
    fputc(']', f);
}

static void json_steps(FILE *f, const tt_view_t *v, const tt_shape_t *sh)
{
    const tt_trace_t *t = v->t;
    fprintf(f, ",\"steps\":[");
    for (int s = 0, i = 0; s < v->steps.nsteps; s++) {
        fprintf(f, "%s{\"t_us\":%.6g,\"ranks\":[", s ? "," : "", v->steps.step_time[s] * 1e6);
        int first_slot = i;
        for (; i < v->steps.nslots && v->steps.slots[i].step == s; i++) {
            const tt_step_slot_t *sl = &v->steps.slots[i];
            int n, first = t->s[sl->rank].round_first[sl->round];
            tt_sched_round_steps(&t->s[sl->rank], sl->round, &n);
            fprintf(f, "%s{\"rank\":%d,\"round\":%d,\"done_us\":%.6g,\"labels\":[", i > first_slot ? "," : "",
                    sl->rank, sl->round + 1, sl->end * 1e6);
            for (int k = 0; k < n; k++) {
                fprintf(f, "%s", k ? "," : "");
                json_string(f, t->labels[sl->rank][first + k]);
            }
            fprintf(f, "]}");
        }
        fputc(']', f);
        json_messages(f, v, sh, first_slot, i);
        json_grid(f, v, s);
        fputc('}', f);
    }
    fputc(']', f);
}

int tt_explain_json(FILE *f, const tt_view_t *v)
{
    const tt_view_opts_t *o = v->o;
    const tt_trace_t *t = v->t;
    tt_shape_t sh;
    if (tt_shape_find(&sh, o->algo, o->args, t))
        return fprintf(stderr, "tutti-explain: out of memory\n"), -1;
    char title[160], fold[1024], text[300];
    snprintf(title, sizeof title, "%s with %s on %d ranks", tt_coll_name(o->args->coll), o->algo->name,
             o->args->nranks);
    tt_explain_fold(o->algo, o->args->nranks, fold, sizeof fold);
    fprintf(f, "{\"tool\":\"tutti-explain\",\"schema\":2,\"title\":");
    json_string(f, title);
    fprintf(f, ",\"collective\":\"%s\",\"algorithm\":\"%s\",\"summary\":", tt_coll_name(o->args->coll),
            o->algo->name);
    json_string(f, o->algo->summary);
    fprintf(f, ",\"nranks\":%d,\"nodes\":%d,\"bytes\":%zu,\"nchunks\":%zu,\"slices\":%d,\"fold\":",
            o->args->nranks, o->nodes, o->bytes, t->nout, v->nslices);
    json_string(f, fold);
    double book = -1, total = tt_cost_predict(v->m, o->algo, o->args, o->elem, v->nslices);
    tt_link_t l = o->nodes > 1 ? v->m->inter : v->m->intra;
    tt_explain_formula(o->algo, o->args->coll, o->args->nranks, (double)o->bytes, &v->m->link[l], text,
                       sizeof text, &book);
    fprintf(f, ",\"predicted_us\":%.6g,\"textbook\":", total * 1e6);
    json_string(f, text);
    fprintf(f, ",\"textbook_us\":%.6g", book * 1e6);
    json_shape(f, &sh, v);
    json_steps(f, v, &sh);
    fprintf(f, "}");
    tt_shape_free(&sh);
    return 0;
}

void tt_explain_mermaid(FILE *f, const tt_view_t *v)
{
    const tt_trace_t *t = v->t;
    fprintf(f, "sequenceDiagram\n");
    for (int r = 0; r < t->nranks; r++)
        fprintf(f, "    participant r%d as rank %d\n", r, r);
    /* a step whose ranks only add or copy (their work joins the next) gets no note */
    for (int s = 0, i = 0, shown = 0; s < v->steps.nsteps; s++) {
        int first = i, sends = 0;
        while (i < v->steps.nslots && v->steps.slots[i].step == s)
            i++;
        for (int j = first; j < i; j++) {
            const tt_step_slot_t *sl = &v->steps.slots[j];
            int n, k0 = t->s[sl->rank].round_first[sl->round];
            const tt_step_t *st = tt_sched_round_steps(&t->s[sl->rank], sl->round, &n);
            for (int k = 0; k < n; k++) {
                if (st[k].kind != TT_STEP_SEND)
                    continue;
                char what[400];
                carried(t->labels[sl->rank][k0 + k], what, sizeof what);
                if (!sends++)
                    fprintf(f, "    Note over r0,r%d: step %d\n", t->nranks - 1, ++shown);
                fprintf(f, "    r%d->>r%d: %s\n", sl->rank, st[k].peer, what);
            }
        }
    }
}
