/* SPDX-License-Identifier: MIT */
/*
 * Completion queues of the stand-in, and the context's ops table through
 * which rdma-core's inline ibv_poll_cq, ibv_post_send and ibv_post_recv
 * reach a provider. A CQ holds exactly the entries it was created with; one
 * more is an overrun, after which the CQ is unusable and the queue pairs
 * that complete into it move to the error state, as on a NIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fv.h"

int fv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int fv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int fv_query_port_ex(struct ibv_context *context, uint8_t port, struct ibv_port_attr *a, size_t len);

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector)
{
    if (cqe < 1 || cqe > 4194303 || comp_vector != 0) {
        errno = EINVAL;
        return NULL;
    }
    fv_cq_t *q = calloc(1, sizeof *q);
    fv_cqe_t *e = calloc((size_t)cqe, sizeof *e);
    if (!q || !e) {
        free(q);
        free(e);
        errno = ENOMEM;
        return NULL;
    }
    q->cq.context = context;
    q->cq.channel = channel;
    q->cq.cq_context = cq_context;
    q->cq.cqe = cqe;
    q->cap = cqe;
    q->e = e;
    pthread_mutex_init(&q->lock, NULL);
    return &q->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    fv_ctx_t *c = fv_ctx_of(cq->context);
    int busy = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < FV_MAX_QPS; i++)
        busy |= c->qps[i] && (c->qps[i]->qp.send_cq == cq || c->qps[i]->qp.recv_cq == cq);
    pthread_mutex_unlock(&c->lock);
    if (busy)
        return EBUSY;
    fv_cq_t *q = (fv_cq_t *)cq;
    pthread_mutex_destroy(&q->lock);
    free(q->e);
    free(q);
    return 0;
}

/* Called by the NIC: 0, or -1 when the CQ overran (the entry is lost). */
int fv_cq_push(fv_cq_t *q, const fv_cqe_t *e)
{
    pthread_mutex_lock(&q->lock);
    int rc = 0;
    if (q->overrun || q->head - q->tail == (uint64_t)q->cap) {
        q->overrun = 1;
        rc = -1;
    } else {
        q->e[q->head % (uint64_t)q->cap] = *e;
        q->head++;
        if (q->notify && q->cq.channel) { /* one event per request, as a provider raises it */
            struct ibv_cq *cq = &q->cq;
            q->notify = 0;
            if (write(((fv_chan_t *)q->cq.channel)->wfd, &cq, sizeof cq) != (ssize_t)sizeof cq)
                q->notify = 1; /* not raised (a full pipe): the next entry tries again */
        }
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* Forgets a destroyed queue pair's entries still waiting in q. */
void fv_cq_forget(fv_cq_t *q, fv_qp_t *qp)
{
    pthread_mutex_lock(&q->lock);
    for (uint64_t i = q->tail; i < q->head; i++)
        if (q->e[i % (uint64_t)q->cap].qp == qp)
            q->e[i % (uint64_t)q->cap].qp = NULL;
    pthread_mutex_unlock(&q->lock);
}

static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    fv_cq_t *q = (fv_cq_t *)cq;
    fv_ctx_t *c = fv_ctx_of(cq->context);
    /* The caller's polling drives the NIC when its thread is not at it. */
    if (pthread_mutex_trylock(&c->lock) == 0) {
        fv_nic_progress(c);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_lock(&q->lock);
    if (q->overrun) {
        pthread_mutex_unlock(&q->lock);
        errno = EOVERFLOW;
        return -1;
    }
    int got = 0;
    for (; got < n && q->tail < q->head; got++, q->tail++) {
        const fv_cqe_t *e = &q->e[q->tail % (uint64_t)q->cap];
        wc[got] = e->wc;
        /* Polling a completion frees its WQE and every earlier one of that
         * queue: that is when a send queue slot becomes free again. */
        if (e->qp && e->send)
            atomic_store(&e->qp->sq_retired, e->index + 1);
        else if (e->qp)
            atomic_store(&e->qp->rq_retired, e->index + 1);
    }
    pthread_mutex_unlock(&q->lock);
    /* Not a NIC's behaviour, a host's: tests run many simulated hosts on a
     * few cores, and a poller that finds nothing lets the others run. */
    if (got == 0)
        sched_yield();
    return got;
}

static int req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    fv_cq_t *q = (fv_cq_t *)cq;
    if (solicited_only || !cq->channel)
        return EINVAL; /* solicited events are not modelled */
    pthread_mutex_lock(&q->lock);
    q->notify = 1;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    fv_chan_t *c = calloc(1, sizeof *c);
    int p[2];
    if (!c || pipe2(p, O_CLOEXEC)) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    c->ch.context = context;
    c->ch.fd = p[0];
    c->wfd = p[1];
    return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    fv_chan_t *c = (fv_chan_t *)channel;
    close(c->ch.fd);
    close(c->wfd);
    free(c);
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    struct ibv_cq *got;
    if (read(channel->fd, &got, sizeof got) != (ssize_t)sizeof got)
        return -1; /* errno EAGAIN on a non-blocking channel with no event */
    *cq = got;
    *cq_context = got->cq_context;
    return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    (void)cq;
    (void)nevents;
}

void fv_set_ops(struct ibv_context *c)
{
    fv_ctx_t *x = fv_ctx_of(c);
    c->ops.poll_cq = poll_cq;
    c->ops.req_notify_cq = req_notify_cq;
    c->ops.post_send = fv_post_send;
    c->ops.post_recv = fv_post_recv;
    /* An extended context, as every rdma-core provider gives today. */
    x->vctx.sz = sizeof x->vctx;
    x->vctx.query_port = fv_query_port_ex;
    c->abi_compat = __VERBS_ABI_IS_EXTENDED;
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const names[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
    };
    return (unsigned)status < sizeof names / sizeof names[0] && names[status] ? names[status] : "unknown";
}
