/* SPDX-License-Identifier: MIT */
/*
 * tcp data path. Each channel is a byte stream of (header, payload)
 * messages; the head of the send queue is written and the head of the
 * receive queue read as far as the socket allows, never blocking. An idle
 * engine sleeps in poll(2) on the sockets that have a message pending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "core/log.h"
#include "transports/tcp/tcp.h"

/* After a closed or broken socket: did the peer abort, or die? */
static tutti_status_t loss_reason(const tt_tcp_conn_t *c)
{
    for (int i = 0; i < c->nchannels; i++) {
        char b;
        if (recv(c->ch[i].fd, &b, 1, MSG_OOB | MSG_DONTWAIT) == 1 && b == TT_TCP_ABORT_BYTE)
            return TUTTI_ERR_ABORTED;
    }
    return TUTTI_ERR_PEER_FAILED;
}

static void conn_fail(tt_tcp_conn_t *c, tutti_status_t st)
{
    if (!c->failed)
        c->failed = st == TUTTI_ERR_PEER_FAILED ? loss_reason(c) : st;
    for (int i = 0; i < c->nchannels; i++) {
        for (tt_req_t *r = c->ch[i].sendq; r; r = r->next)
            tt_req_finish(r, st);
        for (tt_req_t *r = c->ch[i].recvq; r; r = r->next)
            if (r->state == TT_REQ_PENDING)
                tt_req_finish(r, st);
        c->ch[i].sendq = c->ch[i].recvq = NULL;
    }
}

tutti_status_t tt_tcp_isend(void *connp, int channel, tt_req_t *req)
{
    tt_tcp_conn_t *c = connp;
    return tt_req_queue_post(&c->ch[channel].sendq, req, c->failed);
}

tutti_status_t tt_tcp_irecv(void *connp, int channel, tt_req_t *req)
{
    tt_tcp_conn_t *c = connp;
    if (c->failed)
        return c->failed;
    if (req->combine && !c->ch[channel].bounce) {
        c->ch[channel].bounce = malloc(TT_TCP_BOUNCE_BYTES);
        if (!c->ch[channel].bounce)
            return TUTTI_ERR_NO_MEMORY;
    }
    return tt_req_queue_post(&c->ch[channel].recvq, req, TUTTI_SUCCESS);
}

/* Returns bytes moved, 0 if the socket would block, -1 on a dead socket. */
static ssize_t io_result(ssize_t n)
{
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return -1;
}

static int send_some(tt_tcp_chan_t *ch, int *progressed)
{
    while (ch->sendq) {
        tt_req_t *r = ch->sendq;
        struct iovec iov[2];
        int n = 0;
        if (ch->send_hdr_done < sizeof r->hdr)
            iov[n++] = (struct iovec){(char *)&r->hdr + ch->send_hdr_done, sizeof r->hdr - ch->send_hdr_done};
        if (r->done < r->len)
            iov[n++] = (struct iovec){r->buf + r->done, r->len - r->done};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t got = n ? io_result(sendmsg(ch->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT)) : 0;
        if (got < 0)
            return -1;
        size_t moved = (size_t)got;
        size_t hdr_part = sizeof r->hdr - ch->send_hdr_done;
        if (moved >= hdr_part) {
            ch->send_hdr_done = sizeof r->hdr;
            r->done += moved - hdr_part;
        } else {
            ch->send_hdr_done += moved;
        }
        if (moved)
            *progressed = 1;
        if (ch->send_hdr_done < sizeof r->hdr || r->done < r->len)
            return 0; /* the socket is full */
        ch->sendq = r->next;
        ch->send_hdr_done = 0;
        tt_req_finish(r, TUTTI_SUCCESS);
    }
    return 0;
}

/* Hands the whole elements gathered in the bounce buffer to combine. */
static void bounce_drain(tt_tcp_chan_t *ch, tt_req_t *r, int final)
{
    size_t whole = final ? ch->bounce_fill : ch->bounce_fill / r->unit * r->unit;
    if (whole) {
        r->combine(r->combine_ctx, r->done, ch->bounce, whole);
        r->done += whole;
        memmove(ch->bounce, ch->bounce + whole, ch->bounce_fill - whole);
        ch->bounce_fill -= whole;
    }
}

static int recv_some(tt_tcp_chan_t *ch, int *progressed)
{
    while (ch->recvq) {
        tt_req_t *r = ch->recvq;
        if (ch->recv_hdr_done < sizeof ch->rhdr) {
            ssize_t got = io_result(recv(ch->fd, (char *)&ch->rhdr + ch->recv_hdr_done,
                                         sizeof ch->rhdr - ch->recv_hdr_done, MSG_DONTWAIT));
            if (got < 0)
                return -1;
            if (got == 0)
                return 0;
            *progressed = 1;
            ch->recv_hdr_done += (size_t)got;
            if (ch->recv_hdr_done < sizeof ch->rhdr)
                return 0;
            r->got = ch->rhdr;
            if (!tt_msg_hdr_match(&r->hdr, &ch->rhdr)) {
                /* The stream can no longer be parsed: fail the connection. */
                tt_req_finish(r, TUTTI_ERR_MISMATCH);
                ch->recvq = r->next;
                return -2;
            }
        }
        size_t want = r->len - r->done - (r->combine ? ch->bounce_fill : 0);
        if (want > 0) {
            char *dst = r->buf + r->done;
            if (r->combine) {
                dst = ch->bounce + ch->bounce_fill;
                if (want > TT_TCP_BOUNCE_BYTES - ch->bounce_fill)
                    want = TT_TCP_BOUNCE_BYTES - ch->bounce_fill;
            }
            ssize_t got = io_result(recv(ch->fd, dst, want, MSG_DONTWAIT));
            if (got < 0)
                return -1;
            if (got == 0)
                return 0;
            *progressed = 1;
            if (r->combine) {
                ch->bounce_fill += (size_t)got;
                bounce_drain(ch, r, r->done + ch->bounce_fill == r->len);
            } else {
                r->done += (size_t)got;
            }
            if (r->done < r->len)
                continue;
        }
        ch->recvq = r->next;
        ch->recv_hdr_done = 0;
        tt_req_finish(r, TUTTI_SUCCESS);
    }
    return 0;
}

int tt_tcp_peek(void *connp, int channel, tt_msg_hdr_t *hdr)
{
    tt_tcp_conn_t *c = connp;
    const tt_tcp_chan_t *ch = &c->ch[channel];
    if (c->failed || ch->recvq || ch->recv_hdr_done)
        return 0; /* a receive owns the stream's head */
    return recv(ch->fd, hdr, sizeof *hdr, MSG_PEEK | MSG_DONTWAIT) == (ssize_t)sizeof *hdr;
}

tutti_status_t tt_tcp_progress(void *connp, int *progressed)
{
    tt_tcp_conn_t *c = connp;
    if (c->failed)
        return c->failed;
    for (int i = 0; i < c->nchannels; i++) {
        tt_tcp_chan_t *ch = &c->ch[i];
        int rc = ch->recvq ? recv_some(ch, progressed) : 0;
        if (rc == -2) { /* the stream can no longer be parsed */
            conn_fail(c, TUTTI_ERR_MISMATCH);
            return TUTTI_ERR_MISMATCH;
        }
        if (rc == 0 && ch->sendq)
            rc = send_some(ch, progressed);
        if (rc < 0) {
            TT_DEBUG(TT_SUB_NET, "tcp: connection to rank %d lost: %s", c->peer,
                     errno ? strerror(errno) : "closed by peer");
            conn_fail(c, TUTTI_ERR_PEER_FAILED);
            return c->failed;
        }
    }
    return TUTTI_SUCCESS;
}

int tt_tcp_arm(void *connp, tt_wait_set_t *ws)
{
    tt_tcp_conn_t *c = connp;
    if (c->failed)
        return 1; /* progress reports it */
    /* Level-triggered: what arrived or drained before the sleep wakes it at once. */
    for (int i = 0; i < c->nchannels; i++) {
        short events = (short)((c->ch[i].recvq ? POLLIN : 0) | (c->ch[i].sendq ? POLLOUT : 0));
        if (events && tt_wait_add(ws, c->ch[i].fd, events))
            return -1;
    }
    return 0;
}

tutti_status_t tt_tcp_alive(void *connp)
{
    tt_tcp_conn_t *c = connp;
    if (c->failed == TUTTI_ERR_ABORTED || c->failed == TUTTI_ERR_PEER_FAILED)
        return c->failed;
    for (int i = 0; i < c->nchannels; i++) {
        char b;
        /* The connection state tells a closed peer even when its last data
         * is still unread ahead of the FIN; the peek catches errors. */
        struct tcp_info info;
        socklen_t len = sizeof info;
        int closed = getsockopt(c->ch[i].fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
                     (info.tcpi_state == TCP_CLOSE_WAIT || info.tcpi_state == TCP_CLOSE);
        ssize_t n = recv(c->ch[i].fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        TT_TRACE(TT_SUB_NET, "tcp: rank %d channel %d state %d peek %zd", c->peer, i, (int)info.tcpi_state,
                 n);
        if (closed || n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            conn_fail(c, TUTTI_ERR_PEER_FAILED);
            return c->failed;
        }
    }
    return TUTTI_SUCCESS;
}
