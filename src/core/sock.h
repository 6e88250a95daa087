/* SPDX-License-Identifier: MIT */
/*
 * Socket helpers for the bootstrap and the tcp transport: address choice,
 * listen/connect with deadlines, whole-buffer I/O, and the keyed handshake
 * every connection starts with.
 */
#ifndef TT_SOCK_H
#define TT_SOCK_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/key.h"
#include "tutti.h"

/* A connection must present its hello within this long (or the set-up
 * deadline, if sooner), so a silent or rogue peer cannot stall set-up. */
#define TT_HELLO_WAIT_MS 5000

/* A socket address small enough to embed in ids and address blobs. */
typedef struct {
    uint32_t len;
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
    } u;
} tt_sockaddr_t;

#define TT_HELLO_MAGIC 0x74746831u /* "tth1": the first bytes of every tutti connection */

/* A root that refuses a joiner may say why in the rank of a hello with no
 * key (a listener that opts in, tt_admit_t.answer_refusals): */
#define TT_HELLO_REFUSED_KEY (-1)  /* its key is not the job's */
#define TT_HELLO_REFUSED_RANK (-2) /* its rank is taken, or the sizes differ */

/* What a connecting side presents: the job key, who it is, which channel. */
typedef struct {
    uint32_t magic;
    int32_t rank;
    int32_t nranks;
    int32_t channel;
    unsigned char key[TT_KEY_BYTES];
} tt_hello_t;

/* Address of interface ifname ("" = first up non-loopback, else loopback), port 0. */
tutti_status_t tt_sock_pick_addr(const char *ifname, tt_sockaddr_t *addr);
/* "host:port" (IPv4 or a name) to an address. */
tutti_status_t tt_sock_parse_addr(const char *text, tt_sockaddr_t *addr);
void tt_sock_addr_str(const tt_sockaddr_t *addr, char *out, size_t outlen);

/* Listening socket on addr (port 0 picks one); addr gets the real port. */
tutti_status_t tt_sock_listen(tt_sockaddr_t *addr, int *fd);
/* The same without logging: the caller says what failed, from *err (errno). */
tutti_status_t tt_sock_listen_quiet(tt_sockaddr_t *addr, int *fd, int *err);
/* Connects, retrying refused connections until deadline_ms (tt_now_ms clock). */
tutti_status_t tt_sock_connect(const tt_sockaddr_t *addr, int64_t deadline_ms, int *fd);
/* The same, asking watch (when not NULL) between tries, and every 100 ms
 * of a dial unanswered for a second (its SYN lost: a listener whose queue
 * is full): its non-zero status (it said why) ends the wait. */
tutti_status_t tt_sock_connect_watched(const tt_sockaddr_t *addr, int64_t deadline_ms,
                                       tutti_status_t (*watch)(void *arg), void *arg, int *fd);
/* Connects once, without retrying: TUTTI_ERR_PEER_FAILED when refused
 * (nobody listens there any more), TUTTI_ERR_TIMEOUT at deadline_ms;
 * logs nothing. */
tutti_status_t tt_sock_connect_once(const tt_sockaddr_t *addr, int64_t deadline_ms, int *fd);
/* Accepts one connection, waiting until deadline_ms. */
tutti_status_t tt_sock_accept(int listen_fd, int64_t deadline_ms, int *fd);
tutti_status_t tt_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline_ms);
tutti_status_t tt_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ms);
void tt_sock_set_nonblocking(int fd);
void tt_sock_tune(int fd, int bufbytes);

tutti_status_t tt_hello_send(int fd, const unsigned char *key, int rank, int nranks, int channel,
                             int64_t deadline_ms);
/* Whether h is a tutti hello carrying key (compared in constant time). */
int tt_hello_matches(const tt_hello_t *h, const unsigned char *key);
/*
 * Reads a hello and checks its key in constant time. A wrong or missing key
 * gives TUTTI_ERR_AUTH (logged with the remote address); the caller closes.
 */
tutti_status_t tt_hello_recv(int fd, const unsigned char *key, int64_t deadline_ms, tt_hello_t *out);

#endif
