/* SPDX-License-Identifier: MIT */
/*
 * The who-is-stuck report: each rank's progress (kept by the engine), its
 * snapshot, and the hub's report from every snapshot. Ranks at fault come
 * first: the silent ones (a stopped process says so), those that never
 * reached the call or sit in another; then what each other rank waits for.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comm/stuck.h"
#include "core/clock.h"
#include "sched/schedule.h"
#include "tutti.h"

void tt_progress_begin(tt_progress_t *p, uint64_t seq, int coll, int dtype, int op, int root, uint64_t count)
{
    atomic_store_explicit(&p->seq, seq, memory_order_relaxed);
    atomic_store_explicit(&p->sig, (uint32_t)coll | (uint32_t)dtype << 8 | (uint32_t)op << 16,
                          memory_order_relaxed);
    atomic_store_explicit(&p->root, root, memory_order_relaxed);
    atomic_store_explicit(&p->count, count, memory_order_relaxed);
    atomic_store_explicit(&p->peer, -1, memory_order_relaxed);
    atomic_store_explicit(&p->timed_out, 0, memory_order_relaxed);
    atomic_store_explicit(&p->since_ns, tt_now_coarse_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&p->started, 1, memory_order_relaxed);
    atomic_store_explicit(&p->ran, 1, memory_order_relaxed);
    atomic_store_explicit(&p->in_call, 1, memory_order_release);
}

void tt_progress_wait(tt_progress_t *p, int peer, int kind, int round, int nrounds, int slice, int nslices,
                      int64_t since_ns)
{
    atomic_store_explicit(&p->kind, kind, memory_order_relaxed);
    atomic_store_explicit(&p->round, round, memory_order_relaxed);
    atomic_store_explicit(&p->nrounds, nrounds, memory_order_relaxed);
    atomic_store_explicit(&p->slice, slice, memory_order_relaxed);
    atomic_store_explicit(&p->nslices, nslices, memory_order_relaxed);
    atomic_store_explicit(&p->since_ns, since_ns, memory_order_relaxed);
    atomic_store_explicit(&p->peer, peer, memory_order_release);
}

void tt_progress_timed_out(tt_progress_t *p)
{
    atomic_store_explicit(&p->timed_out, 1, memory_order_relaxed);
}

void tt_progress_end(tt_progress_t *p)
{
    atomic_store_explicit(&p->since_ns, tt_now_coarse_ns(), memory_order_relaxed);
    atomic_store_explicit(&p->in_call, 0, memory_order_release);
}

void tt_progress_read(const tt_progress_t *p, tt_stuck_state_t *out)
{
    memset(out, 0, sizeof *out);
    out->in_call = atomic_load_explicit(&p->in_call, memory_order_acquire);
    out->timed_out = atomic_load_explicit(&p->timed_out, memory_order_relaxed);
    out->seq = atomic_load_explicit(&p->seq, memory_order_relaxed);
    uint32_t sig = atomic_load_explicit(&p->sig, memory_order_relaxed);
    out->coll = (uint8_t)sig;
    out->dtype = (uint8_t)(sig >> 8);
    out->op = (uint8_t)(sig >> 16);
    out->root = atomic_load_explicit(&p->root, memory_order_relaxed);
    out->count = atomic_load_explicit(&p->count, memory_order_relaxed);
    out->peer = atomic_load_explicit(&p->peer, memory_order_acquire);
    out->kind =
        out->peer >= 0 ? (uint8_t)atomic_load_explicit(&p->kind, memory_order_relaxed) : TT_STUCK_NO_STEP;
    out->round = atomic_load_explicit(&p->round, memory_order_relaxed);
    out->nrounds = atomic_load_explicit(&p->nrounds, memory_order_relaxed);
    out->slice = atomic_load_explicit(&p->slice, memory_order_relaxed);
    out->nslices = atomic_load_explicit(&p->nslices, memory_order_relaxed);
    int64_t since = atomic_load_explicit(&p->since_ns, memory_order_relaxed), now = tt_now_ns();
    out->for_ms = now > since ? (now - since) / 1000000 : 0;
    out->started = atomic_load_explicit(&p->started, memory_order_relaxed);
    if (!atomic_load_explicit(&p->ran, memory_order_relaxed))
        out->seq = UINT64_MAX; /* no call yet */
}

void tt_stuck_call(const tt_stuck_state_t *st, char *out, size_t len)
{
    if (st->coll >= TT_COLL_COUNT) {
        snprintf(out, len, "call #%llu", (unsigned long long)st->seq);
        return;
    }
    snprintf(out, len, "%s #%llu (count %llu, %s, %s)", tt_coll_name((tt_coll_t)st->coll),
             (unsigned long long)st->seq, (unsigned long long)st->count,
             tutti_dtype_name((tutti_dtype_t)st->dtype), tutti_op_name((tutti_op_t)st->op));
}

/* A report that stops cleanly (with "...") when the buffer is full. */
typedef struct {
    char *out;
    size_t len, used;
    int full;
} text_t;

static void say(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(text_t *t, const char *fmt, ...)
{
    if (t->full)
        return;
    char piece[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (t->used + (size_t)n + 5 >= t->len) {
        snprintf(t->out + t->used, t->len - t->used, " ...");
        t->full = 1;
        return;
    }
    memcpy(t->out + t->used, piece, (size_t)n + 1);
    t->used += (size_t)n;
}

static const char *step_word(int kind)
{
    static const char *const words[] = {"sending", "receiving", "receiving to reduce"};
    return kind >= 0 && kind < 3 ? words[kind] : "waiting";
}

/* Says what rank r, at fault for the call `at`, is doing; 0 when it is not at fault. */
static int at_fault(text_t *t, int r, const tt_stuck_state_t *st, int answered, const tt_stuck_state_t *at,
                    int wait_ms, tt_stuck_proc_fn proc, void *arg, int first)
{
    char call[160];
    const char *sep = first ? "" : "; ";
    if (!answered) {
        int ps = proc ? proc(arg, r) : 0;
        say(t, "%srank %d did not answer within %d ms (%s)", sep, r, wait_ms,
            ps == 'T' || ps == 't' ? "its process is stopped"
            : ps == 'Z'            ? "its process has ended"
            : ps                   ? "its process runs but its tutti thread does not answer: hung?"
                                   : "stopped, hung or cut off");
        return 1;
    }
    if (st->in_call || st->started > at->seq)
        return 0; /* in the call, or past it */
    tt_stuck_call(st, call, sizeof call);
    if (st->seq == UINT64_MAX)
        say(t, "%srank %d has not reached it: it has made no collective call yet", sep, r);
    else
        say(t, "%srank %d has not reached it: its last call, %s, ended %.1f s ago and it is outside tutti",
            sep, r, call, (double)st->for_ms / 1000);
    return 1;
}

/* The call the report is about: the oldest any rank is still in (later
 * calls wait on it), else the asker's. */
static const tt_stuck_state_t *oldest_call(int nranks, const tt_stuck_state_t *states,
                                           const unsigned char *answered, int asker)
{
    const tt_stuck_state_t *at = &states[asker];
    for (int r = 0; r < nranks; r++)
        if (answered[r] && states[r].in_call && (!at->in_call || states[r].seq < at->seq))
            at = &states[r];
    return at;
}

void tt_stuck_compile(int nranks, const tt_stuck_state_t *states, const unsigned char *answered, int asker,
                      int wait_ms, tt_stuck_proc_fn proc, void *arg, char *out, size_t len)
{
    text_t t = {.out = out, .len = len};
    out[0] = '\0';
    const tt_stuck_state_t *at = oldest_call(nranks, states, answered, asker);
    char call[160];
    tt_stuck_call(at, call, sizeof call);
    say(&t, "who is stuck in %s: ", call);
    int faults = 0;
    for (int r = 0; r < nranks; r++)
        faults += at_fault(&t, r, &states[r], answered[r], at, wait_ms, proc, arg, faults == 0);
    if (!faults)
        say(&t, "every rank is in it or past it and none stopped");
    say(&t, ". ");
    int waits = 0;
    for (int r = 0; r < nranks; r++) {
        const tt_stuck_state_t *st = &states[r];
        if (!answered[r] || !st->in_call)
            continue;
        const char *sep = waits++ ? "; " : "";
        char later[200] = "";
        if (st->seq != at->seq) {
            tt_stuck_call(st, call, sizeof call);
            snprintf(later, sizeof later, " in %s", call);
        }
        if (st->peer < 0)
            say(&t, "%srank %d waits for no peer%s (busy in the call for %.1f s)", sep, r, later,
                (double)st->for_ms / 1000);
        else
            say(&t, "%srank %d waits for rank %d%s (%s, round %d of %d, slice %d of %d) for %.1f s%s", sep, r,
                st->peer, later, step_word(st->kind), st->round, st->nrounds, st->slice, st->nslices,
                (double)st->for_ms / 1000, st->timed_out ? ", timed out" : "");
    }
    if (!t.full && t.used >= 2 && out[t.used - 2] == '.')
        out[t.used - 1] = '\0'; /* nobody waits: no trailing blank */
    else
        say(&t, ".");
}

int tt_stuck_proc_state(int pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 'Z';
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *end = strrchr(line, ')');
    return end && end[1] == ' ' && end[2] ? end[2] : 0;
}
