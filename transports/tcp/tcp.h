/* SPDX-License-Identifier: MIT */
/* tcp transport internals: one non-blocking socket per peer and channel. */
#ifndef TT_TCP_H
#define TT_TCP_H

#include "core/sock.h"
#include "transports/transport.h"

#define TT_TCP_BOUNCE_BYTES (256 * 1024)

/* tcp's variables (see config_table.h for the two lists' form). */
#define TT_TCP_CONFIG(X) X(TCP_BUF_BYTES, SIZE, "4M", "socket send/receive buffer size for tcp")
#define TT_TCP_CONFIG_RULES(R) R(TCP_BUF_BYTES, .min = 0, .max = 1 << 30)
enum { TT_TCP_CONFIG(TT_CONFIG_ID) };
extern const tt_config_table_t tt_tcp_config;
/* Urgent byte an aborting rank sends before closing, so peers can tell
 * "gave up" from "died" (a killed process sends none). Best effort: with a
 * full send buffer the byte is dropped and the peer reports "died". */
#define TT_TCP_ABORT_BYTE 'A'

typedef struct {
    int fd;
    tt_req_t *sendq, *recvq; /* heads are the messages on the wire */
    size_t send_hdr_done;    /* header bytes of sendq's head already sent */
    tt_msg_hdr_t rhdr;       /* header of the message being received */
    size_t recv_hdr_done;
    char *bounce; /* reducing receives land here before combine */
    size_t bounce_fill;
} tt_tcp_chan_t;

typedef struct {
    int peer;
    int nchannels;
    tutti_status_t failed; /* why the connection is unusable, or 0 */
    tt_tcp_chan_t ch[TT_MAX_CHANNELS];
} tt_tcp_conn_t;

/* A socket admitted before its pair's join asked for it. */
typedef struct {
    int rank, channel, fd;
} tt_tcp_stash_t;

typedef struct {
    const tt_tp_env_t *env;
    int listen_fd;
    tt_sockaddr_t addr;
    int bufbytes;
    struct tt_admit *admit; /* on listen_fd, kept across joins */
    tt_tcp_stash_t *stash;
    int nstash, stash_cap;
} tt_tcp_ctx_t;

tutti_status_t tt_tcp_isend(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_tcp_irecv(void *conn, int channel, tt_req_t *req);
int tt_tcp_peek(void *conn, int channel, tt_msg_hdr_t *hdr);
tutti_status_t tt_tcp_progress(void *conn, int *progressed);
tutti_status_t tt_tcp_alive(void *conn);
int tt_tcp_arm(void *conn, tt_wait_set_t *ws);

#endif
