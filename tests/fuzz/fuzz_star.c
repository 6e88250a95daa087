/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the bootstrap's framed messages after the join (the tree),
 * as rank 0's hub reads them from a child and as a rank reads them from its
 * parent. The first byte picks the side, the number of ranks and the
 * sender; the rest is the byte stream. Frames passed down to the one child
 * are queued and dropped.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/star_impl.h"

static void describe(void *arg, tt_stuck_state_t *out)
{
    (void)arg;
    memset(out, 0, sizeof *out);
    out->peer = -1;
    out->kind = TT_STUCK_NO_STEP;
}

/* As the tree hands the hub a child's frame: from the rank it speaks of. */
static void hub_in(tt_star_t *s, int from, const tt_star_hdr_t *h, const char *payload)
{
    (void)from;
    tt_star_hub_frame(s, h->rank, h, payload);
}

static void free_frames(tt_star_frame_t *f)
{
    while (f) {
        tt_star_frame_t *next = f->next;
        free(f);
        f = next;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nranks = 2 + data[0] % 4, from = (data[0] >> 2) % nranks, as_member = data[0] >> 7;
    data++;
    size--;
    tt_star_t *s = calloc(1, sizeof *s);
    s->roles = tt_star_roles;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->nranks = nranks;
    s->rank = as_member ? 1 : 0;
    s->dead = calloc((size_t)nranks, 1); /* frames that say a rank died or ended mark it */
    s->timeout_ms = 10;
    s->wait_ms = 5;
    s->kick_fd = s->listen_fd = -1;
    s->up = (tt_star_link_t){.fd = -1};
    s->queued_tail = &s->queued;
    s->bcast_tail = &s->bcasts;
    s->mail_tail = &s->mailbox;
    s->n.died_rank = s->n.failed_rank = s->n.left_rank = s->n.revoked_rank = -1;
    s->describe = describe;
    if (!as_member)
        s->hub = tt_star_hub_new(nranks);
    /* A child, so that what goes down the tree is queued somewhere (and dropped). */
    s->kids = calloc(1, sizeof *s->kids);
    s->kids[0] = calloc(1, sizeof **s->kids);
    s->kids[0]->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    s->kids[0]->rank = nranks - 1;
    s->nkids = s->kids_cap = 1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
        fcntl(sv[1], F_SETFL, O_NONBLOCK);
        tt_star_reader_t rd = {0};
        size_t off = 0;
        int open_ = 1;
        while (open_ && off < size) {
            ssize_t n = write(sv[0], data + off, size - off < 4096 ? size - off : 4096);
            if (n <= 0)
                break;
            off += (size_t)n;
            open_ = tt_star_read(sv[1], &rd, nranks, as_member ? tt_star_member_frame : hub_in, s, from) == 0;
        }
        close(sv[0]);
        while (open_)
            open_ = tt_star_read(sv[1], &rd, nranks, as_member ? tt_star_member_frame : hub_in, s, from) == 0;
        if (!as_member)
            tt_star_hub_gone(s, from, 0);
        if (s->hub && s->hub->q_active) { /* the query's deadline passes */
            s->hub->q_deadline = 0;
            tt_star_hub_tick(s);
        }
        tt_star_reader_reset(&rd);
        close(sv[1]);
    }
    tt_star_links_free(s);
    tt_star_hub_free(s->hub);
    free_frames(s->bcasts);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s->dead);
    free(s);
    return 0;
}
