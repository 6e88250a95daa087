/* SPDX-License-Identifier: MIT */
/* Two ends of an RC connection on the verbs stand-in (fakeverbs_pair.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakes/fakeverbs_pair.h"

side_t *shared;

static struct ibv_context *open_dev(const char *name)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    ck_assert_ptr_nonnull(list);
    struct ibv_context *ctx = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(ibv_get_device_name(list[i]), name) == 0)
            ctx = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    ck_assert_ptr_nonnull(ctx);
    return ctx;
}

void end_open(end_t *e, const char *dev, int cqe, int sq, int rq, int access)
{
    e->roce = strstr(dev, "roce") != NULL;
    e->ctx = open_dev(dev);
    e->pd = ibv_alloc_pd(e->ctx);
    e->cq = ibv_create_cq(e->ctx, cqe, NULL, NULL, 0);
    e->buf = aligned_alloc(4096, BUF);
    memset(e->buf, 0, BUF);
    e->mr = ibv_reg_mr(e->pd, e->buf, BUF, access);
    struct ibv_qp_init_attr ia = {.send_cq = e->cq,
                                  .recv_cq = e->cq,
                                  .cap = {.max_send_wr = (uint32_t)sq,
                                          .max_recv_wr = (uint32_t)rq,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1,
                                          .max_inline_data = 64},
                                  .qp_type = IBV_QPT_RC};
    e->qp = ibv_create_qp(e->pd, &ia);
    ck_assert(e->pd && e->cq && e->mr && e->qp);
}

void publish(const end_t *e, side_t *me)
{
    struct ibv_port_attr pa;
    ck_assert_int_eq(ibv_query_port(e->ctx, 1, &pa), 0);
    me->qpn = e->qp->qp_num;
    me->rkey = e->mr->rkey;
    me->lid = pa.lid;
    me->addr = (uintptr_t)e->buf;
    ck_assert_int_eq(ibv_query_gid(e->ctx, 1, e->roce ? 3 : 0, &me->gid), 0);
    __atomic_store_n(&me->ready, 1, __ATOMIC_SEQ_CST);
}

void wait_for(volatile int *flag, int value)
{
    for (int i = 0; i < 20000 && __atomic_load_n(flag, __ATOMIC_SEQ_CST) < value; i++)
        usleep(500);
    ck_assert_int_ge(*flag, value);
}

int to_init(struct ibv_qp *qp)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int to_rtr(const end_t *e, const side_t *peer, int sgid, int rnr_timer)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                            .path_mtu = e->roce ? IBV_MTU_1024 : IBV_MTU_4096,
                            .dest_qp_num = peer->qpn,
                            .rq_psn = 7,
                            .max_dest_rd_atomic = 1,
                            .min_rnr_timer = (uint8_t)rnr_timer,
                            .ah_attr = {.dlid = peer->lid, .port_num = 1}};
    if (e->roce) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = peer->gid;
        a.ah_attr.grh.sgid_index = (uint8_t)sgid;
        a.ah_attr.grh.hop_limit = 1;
    }
    return ibv_modify_qp(e->qp, &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int to_rts(struct ibv_qp *qp, int timeout, int retry, int rnr_retry)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS,
                            .sq_psn = 7,
                            .timeout = (uint8_t)timeout,
                            .retry_cnt = (uint8_t)retry,
                            .rnr_retry = (uint8_t)rnr_retry,
                            .max_rd_atomic = 1};
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

void connect_end(end_t *e, const side_t *peer, int sgid)
{
    ck_assert_int_eq(to_init(e->qp), 0);
    ck_assert_int_eq(to_rtr(e, peer, sgid, 1), 0);
    ck_assert_int_eq(to_rts(e->qp, 8, 2, 7), 0);
}

int post_write_from(end_t *e, uint64_t src, const side_t *peer, uint64_t off, uint32_t len, uint32_t rkey,
                    int imm, uint64_t id, int signaled)
{
    struct ibv_sge sge = {.addr = (uintptr_t)e->buf + src, .length = len, .lkey = e->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = imm >= 0 ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
                             .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
                             .imm_data = htobe32((uint32_t)(imm < 0 ? 0 : imm)),
                             .wr = {.rdma = {.remote_addr = peer->addr + off, .rkey = rkey}}},
                       *bad;
    return ibv_post_send(e->qp, &wr, &bad);
}

int post_write(end_t *e, const side_t *peer, uint64_t off, uint32_t len, uint32_t rkey, int imm, uint64_t id,
               int signaled)
{
    return post_write_from(e, 0, peer, off, len, rkey, imm, id, signaled);
}

int post_recvs(end_t *e, int n)
{
    for (int i = 0; i < n; i++) {
        struct ibv_recv_wr wr = {.wr_id = (uint64_t)(1000 + i)}, *bad;
        int rc = ibv_post_recv(e->qp, &wr, &bad);
        if (rc)
            return rc;
    }
    return 0;
}

struct ibv_wc poll_one(end_t *e)
{
    struct ibv_wc wc = {.status = (enum ibv_wc_status) - 1};
    for (int i = 0; i < 200000; i++) {
        int n = ibv_poll_cq(e->cq, 1, &wc);
        ck_assert_int_ge(n, 0);
        if (n == 1)
            return wc;
        usleep(50);
    }
    ck_abort_msg("no completion");
    return wc;
}

enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
    return a.qp_state;
}

pid_t spawn(void (*child)(void))
{
    memset(shared, 0, 2 * sizeof *shared);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child();
        _exit(0);
    }
    return pid;
}

void join(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "peer process failed (%d)", status);
}
