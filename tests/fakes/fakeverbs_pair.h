/* SPDX-License-Identifier: MIT */
/*
 * Two ends of an RC connection on the verbs stand-in, one per process
 * (tests/fakes/test_fakeverbs.c): each opens a device, a CQ, a QP and a region
 * of BUF bytes, publishes what the other needs in the shared pages, and
 * brings its QP up against the other's; the helpers post, poll and wait.
 */
#ifndef TT_TESTS_FAKEVERBS_PAIR_H
#define TT_TESTS_FAKEVERBS_PAIR_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <sys/types.h>

#define BUF 65536

/* What one side publishes to the other. */
typedef struct {
    uint32_t qpn, rkey;
    uint16_t lid;
    union ibv_gid gid;
    uint64_t addr;
    volatile int ready, done, step;
} side_t;

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    char *buf;
    int roce;
} end_t;

/* [0]: the parent's, [1]: the child's; mapped shared before the first test. */
extern side_t *shared;

void end_open(end_t *e, const char *dev, int cqe, int sq, int rq, int access);
void publish(const end_t *e, side_t *me);
void wait_for(volatile int *flag, int value);
int to_init(struct ibv_qp *qp);
int to_rtr(const end_t *e, const side_t *peer, int sgid, int rnr_timer);
int to_rts(struct ibv_qp *qp, int timeout, int retry, int rnr_retry);
/* Brings e's QP up against the other side's published QP. */
void connect_end(end_t *e, const side_t *peer, int sgid);
int post_write_from(end_t *e, uint64_t src, const side_t *peer, uint64_t off, uint32_t len, uint32_t rkey,
                    int imm, uint64_t id, int signaled);
int post_write(end_t *e, const side_t *peer, uint64_t off, uint32_t len, uint32_t rkey, int imm, uint64_t id,
               int signaled);
int post_recvs(end_t *e, int n);
/* Polls until one completion arrives (or 10 s pass). */
struct ibv_wc poll_one(end_t *e);
enum ibv_qp_state qp_state(struct ibv_qp *qp);
/* Runs child() in a second process sharing `shared`; returns its pid. */
pid_t spawn(void (*child)(void));
void join(pid_t pid);

#endif
