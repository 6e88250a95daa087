/* SPDX-License-Identifier: MIT */
/* The bootstrap star: admission by key, then gather-to-root and send-back. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/log.h"

typedef struct kept_listener {
    struct kept_listener *next;
    unsigned char key[TT_KEY_BYTES];
    int fd;
} kept_listener_t;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept_listener_t *kept;

void tt_bootstrap_keep_listener(const unsigned char *key, int fd)
{
    kept_listener_t *k = malloc(sizeof *k);
    if (!k) {
        close(fd);
        return;
    }
    memcpy(k->key, key, TT_KEY_BYTES);
    k->fd = fd;
    pthread_mutex_lock(&kept_lock);
    k->next = kept;
    kept = k;
    pthread_mutex_unlock(&kept_lock);
}

static int take_listener(const unsigned char *key)
{
    int fd = -1;
    pthread_mutex_lock(&kept_lock);
    for (kept_listener_t **p = &kept; *p; p = &(*p)->next)
        if (memcmp((*p)->key, key, TT_KEY_BYTES) == 0) {
            kept_listener_t *k = *p;
            fd = k->fd;
            *p = k->next;
            free(k);
            break;
        }
    pthread_mutex_unlock(&kept_lock);
    return fd;
}

static tutti_status_t root_admit(tt_bootstrap_t *bs, int listen_fd, int64_t deadline, char *err,
                                 size_t errlen)
{
    int joined = 1;
    while (joined < bs->nranks) {
        int fd;
        tutti_status_t st = tt_sock_accept(listen_fd, deadline, &fd);
        if (st != TUTTI_SUCCESS) {
            snprintf(err, errlen, "bootstrap root: %d of %d ranks joined before %s", joined, bs->nranks,
                     st == TUTTI_ERR_TIMEOUT ? "the timeout" : "accept failed");
            return st;
        }
        int64_t hello_deadline = tt_now_ms() + TT_HELLO_WAIT_MS;
        tt_hello_t h;
        if (tt_hello_recv(fd, bs->key, hello_deadline < deadline ? hello_deadline : deadline, &h)) {
            close(fd); /* refused and logged by tt_hello_recv; keep serving */
            continue;
        }
        if (h.nranks != bs->nranks || h.rank <= 0 || h.rank >= bs->nranks || bs->rank_fds[h.rank] >= 0) {
            TT_WARN(TT_SUB_INIT, "refused rank %d of %d: this communicator has %d ranks%s", h.rank, h.nranks,
                    bs->nranks,
                    h.rank > 0 && h.rank < bs->nranks && bs->rank_fds[h.rank] >= 0
                        ? " and that rank already joined"
                        : "");
            close(fd);
            continue;
        }
        bs->rank_fds[h.rank] = fd;
        joined++;
        TT_DEBUG(TT_SUB_INIT, "bootstrap: rank %d joined (%d/%d)", h.rank, joined, bs->nranks);
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_init(tt_bootstrap_t *bs, int nranks, int rank, const unsigned char *key,
                                 const tt_sockaddr_t *root, int64_t timeout_ms, char *err, size_t errlen)
{
    memset(bs, 0, sizeof *bs);
    bs->rank = rank;
    bs->nranks = nranks;
    bs->timeout_ms = timeout_ms;
    bs->up_fd = -1;
    memcpy(bs->key, key, TT_KEY_BYTES);
    int64_t deadline = tt_now_ms() + timeout_ms;
    char where[80];
    tt_sock_addr_str(root, where, sizeof where);

    if (rank != 0) {
        tutti_status_t st = tt_sock_connect(root, deadline, &bs->up_fd);
        if (!st)
            st = tt_hello_send(bs->up_fd, key, rank, nranks, 0, deadline);
        if (st) {
            snprintf(err, errlen, "rank %d could not reach the bootstrap root at %s: %s", rank, where,
                     tutti_strerror(st));
            tt_bootstrap_close(bs);
        }
        return st;
    }

    bs->rank_fds = malloc(sizeof(int) * (size_t)nranks);
    if (!bs->rank_fds)
        return TUTTI_ERR_NO_MEMORY;
    for (int i = 0; i < nranks; i++)
        bs->rank_fds[i] = -1;
    int listen_fd = take_listener(key);
    if (listen_fd < 0 && nranks > 1) {
        tt_sockaddr_t bind_addr = *root;
        tutti_status_t st = tt_sock_listen(&bind_addr, &listen_fd);
        if (st) {
            snprintf(err, errlen, "rank 0 could not listen on %s for the bootstrap", where);
            tt_bootstrap_close(bs);
            return st;
        }
    }
    tutti_status_t st = nranks > 1 ? root_admit(bs, listen_fd, deadline, err, errlen) : TUTTI_SUCCESS;
    if (listen_fd >= 0)
        close(listen_fd);
    if (st)
        tt_bootstrap_close(bs);
    return st;
}

tutti_status_t tt_bootstrap_allgather(tt_bootstrap_t *bs, const void *mine, void *all, size_t size)
{
    int64_t deadline = tt_now_ms() + bs->timeout_ms;
    char *out = all;
    tutti_status_t st;
    if (bs->rank != 0) {
        st = tt_sock_send_all(bs->up_fd, mine, size, deadline);
        if (!st)
            st = tt_sock_recv_all(bs->up_fd, all, size * (size_t)bs->nranks, deadline);
        if (st)
            TT_ERROR(TT_SUB_INIT, "bootstrap exchange with rank 0 failed: %s", tutti_strerror(st));
        return st;
    }
    memcpy(out, mine, size);
    for (int r = 1; r < bs->nranks; r++) {
        st = tt_sock_recv_all(bs->rank_fds[r], out + (size_t)r * size, size, deadline);
        if (st) {
            TT_ERROR(TT_SUB_INIT, "bootstrap exchange: rank %d did not answer: %s", r, tutti_strerror(st));
            return st;
        }
    }
    for (int r = 1; r < bs->nranks; r++) {
        st = tt_sock_send_all(bs->rank_fds[r], all, size * (size_t)bs->nranks, deadline);
        if (st) {
            TT_ERROR(TT_SUB_INIT, "bootstrap exchange: sending to rank %d failed: %s", r, tutti_strerror(st));
            return st;
        }
    }
    return TUTTI_SUCCESS;
}

tutti_status_t tt_bootstrap_barrier(void *arg)
{
    tt_bootstrap_t *bs = arg;
    char token = 1;
    char *all = malloc((size_t)bs->nranks);
    if (!all)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = tt_bootstrap_allgather(bs, &token, all, 1);
    free(all);
    return st;
}

void tt_bootstrap_close(tt_bootstrap_t *bs)
{
    if (bs->up_fd >= 0)
        close(bs->up_fd);
    bs->up_fd = -1;
    if (bs->rank_fds) {
        for (int r = 0; r < bs->nranks; r++)
            if (bs->rank_fds[r] >= 0)
                close(bs->rank_fds[r]);
        free(bs->rank_fds);
        bs->rank_fds = NULL;
    }
}
