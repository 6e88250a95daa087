/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the bootstrap's framed messages after the join (the star),
 * as rank 0's hub reads them from a rank and as a rank reads them from the
 * hub. The first byte picks the side, the number of ranks and the sender;
 * the rest is the byte stream. Frames the hub relays go nowhere (/dev/null).
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nranks = 2 + data[0] % 4, from = (data[0] >> 2) % nranks, as_member = data[0] >> 7;
    data++;
    size--;
    tt_star_t *s = calloc(1, sizeof *s);
    int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int *fds = malloc(sizeof(int) * (size_t)nranks);
    for (int r = 0; r < nranks; r++)
        fds[r] = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->send_lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->nranks = nranks;
    s->dead = calloc((size_t)nranks, 1); /* frames that say a rank died or ended mark it */
    s->timeout_ms = 10;
    s->wait_ms = 5;
    s->mfd = nul;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    s->n.died_rank = s->n.failed_rank = s->n.left_rank = -1;
    s->describe = describe;
    s->hub = tt_star_hub_new(nranks, fds[0], fds);
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
            open_ = tt_star_read(sv[1], &rd, nranks, as_member ? tt_star_member_frame : tt_star_hub_frame, s,
                                 from) == 0;
        }
        close(sv[0]);
        while (open_)
            open_ = tt_star_read(sv[1], &rd, nranks, as_member ? tt_star_member_frame : tt_star_hub_frame, s,
                                 from) == 0;
        if (!as_member)
            tt_star_hub_gone(s, from);
        if (s->hub->q_active) { /* the query's deadline passes */
            s->hub->q_deadline = 0;
            tt_star_hub_tick(s);
        }
        tt_star_reader_reset(&rd);
        close(sv[1]);
    }
    for (int r = 1; r < nranks; r++)
        close(fds[r]);
    free(fds);
    tt_star_hub_free(s->hub, 0);
    close(nul);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->send_lock);
    pthread_cond_destroy(&s->cond);
    free(s->dead);
    free(s);
    return 0;
}
