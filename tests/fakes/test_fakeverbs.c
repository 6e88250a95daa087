/* SPDX-License-Identifier: MIT */
/*
 * The verbs stand-in behaves as an RC NIC does, across two processes: the
 * queue-pair state machine refuses illegal transitions, RDMA writes with
 * immediate arrive in order and consume receive WQEs, keys, access flags
 * and bounds are checked (a violation is a remote access error and takes
 * the QP to ERR), queue and CQ depths are enforced, a dead peer ends in
 * retry-exceeded and flushed completions, and RoCE needs a matching GID.
 * The transport's tests rely on these; this suite is what shows them.
 */
#include <check.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakes/fakeverbs_pair.h"
#include "tests/lib/harness.h"

void ttfake_release_pages(void *addr, size_t len);

START_TEST(state_machine_refuses_illegal_transitions)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE);
    side_t self = {.qpn = e.qp->qp_num, .lid = 1};
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
    ck_assert_int_eq(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), EINVAL); /* RESET -> RTR */
    ck_assert_int_eq(post_recvs(&e, 1), EINVAL);                     /* nothing posts in RESET */
    a.qp_state = IBV_QPS_INIT;
    ck_assert_int_eq(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PORT), EINVAL); /* missing attributes */
    a.port_num = 3;
    ck_assert_int_eq(
        ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        EINVAL); /* no such port */
    ck_assert_int_eq(to_init(e.qp), 0);
    ck_assert_int_eq(to_rts(e.qp, 8, 2, 7), EINVAL);                    /* INIT -> RTS skips RTR */
    ck_assert_int_eq(post_write(&e, &self, 0, 8, 0, -1, 1, 1), EINVAL); /* no sends before RTS */
    ck_assert_int_eq(post_recvs(&e, 1), 0);                             /* receives may be posted in INIT */
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR, .sq_psn = 1};
    ck_assert_int_eq(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL); /* wrong attributes */
    ck_assert_int_eq(to_rtr(&e, &self, 0, 1), 0);
    ck_assert_int_eq(to_rts(e.qp, 8, 2, 7), 0);
    ck_assert_int_eq(qp_state(e.qp), IBV_QPS_RTS);
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_ERR};
    ck_assert_int_eq(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
    struct ibv_wc wc = poll_one(&e); /* the posted receive is flushed */
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(wc.wr_id, 1000);
    a.qp_state = IBV_QPS_RESET;
    ck_assert_int_eq(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), 0);
    ck_assert_int_eq(to_init(e.qp), 0); /* usable again after RESET */
    ck_assert_int_eq(ibv_destroy_qp(e.qp), 0);
    ck_assert_int_eq(ibv_dereg_mr(e.mr), 0);
    ck_assert_int_eq(ibv_destroy_cq(e.cq), 0);
    ck_assert_int_eq(ibv_dealloc_pd(e.pd), 0);
    ck_assert_int_eq(ibv_close_device(e.ctx), 0);
}
END_TEST

static void receiver_counts_writes(void)
{
    end_t e;
    end_open(&e, "fakeib0", 256, 8, 100, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    ck_assert_int_eq(post_recvs(&e, 100), 0);
    ck_assert_int_eq(post_recvs(&e, 1), ENOMEM); /* the receive queue holds 100 */
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 100; i++) {
        struct ibv_wc wc = poll_one(&e);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
        ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
        ck_assert_int_eq(be32toh(wc.imm_data), (uint32_t)i); /* in the order written */
        ck_assert_int_eq(wc.wr_id, 1000 + (uint64_t)i);      /* receive WQEs consumed in order */
        ck_assert_int_eq(wc.byte_len, 600);
        ck_assert_int_eq(e.buf[i * 600], (char)(i + 1));
        ck_assert_int_eq(e.buf[i * 600 + 599], (char)(i + 1));
    }
    wait_for(&shared[0].done, 1);
}

START_TEST(writes_with_immediate_arrive_in_order)
{
    end_t e;
    pid_t pid = spawn(receiver_counts_writes);
    end_open(&e, "fakeib0", 4, 8, 4, IBV_ACCESS_LOCAL_WRITE);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0);
    wait_for(&shared[1].step, 1);
    int posted = 0, polled = 0;
    while (polled < 100) {
        /* Every fourth is signalled: the send queue of 8 refills only as
         * signalled completions are polled (selective signalling). */
        if (posted < 100) {
            uint64_t off = (uint64_t)posted * 600;
            memset(e.buf + off, posted + 1, 600);
            int rc = post_write_from(&e, off, &shared[1], off, 600, shared[1].rkey, posted, (uint64_t)posted,
                                     posted % 4 == 3);
            ck_assert(rc == 0 || rc == ENOMEM);
            if (rc == 0) {
                posted++;
                continue;
            }
            ck_assert_int_ge(posted - polled, 8); /* refused only when 8 are outstanding */
        }
        struct ibv_wc wc = poll_one(&e);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_WRITE);
        polled = (int)wc.wr_id + 1;
    }
    __atomic_store_n(&shared[0].done, 1, __ATOMIC_SEQ_CST);
    join(pid);
}
END_TEST

static void victim_of_bad_writes(void)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    ck_assert_int_eq(post_recvs(&e, 2), 0);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    /* The responder's QP goes down with the refused write: receives flush. */
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(poll_one(&e).status, IBV_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(qp_state(e.qp), IBV_QPS_ERR);
    ck_assert_int_eq(e.buf[BUF - 1], 0); /* nothing was written */
}

static void bad_write(uint32_t rkey_xor, uint64_t off, uint32_t len)
{
    end_t e;
    pid_t pid = spawn(victim_of_bad_writes);
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE);
    memset(e.buf, 9, BUF);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0);
    wait_for(&shared[1].step, 1);
    ck_assert_int_eq(post_write(&e, &shared[1], off, len, shared[1].rkey ^ rkey_xor, 1, 1, 0), 0);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 8, shared[1].rkey, 2, 2, 0), 0);
    struct ibv_wc wc = poll_one(&e); /* unsignalled, yet an error always completes */
    ck_assert_int_eq(wc.wr_id, 1);
    ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
    wc = poll_one(&e);
    ck_assert_int_eq(wc.wr_id, 2);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(qp_state(e.qp), IBV_QPS_ERR);
    join(pid);
}

START_TEST(wrong_rkey_is_a_remote_access_error)
{
    bad_write(0x00ffff00u, BUF - 4096, 4096);
}
END_TEST

START_TEST(write_past_the_region_is_a_remote_access_error)
{
    bad_write(0, BUF - 4096, 4097);
}
END_TEST

static void region_without_remote_write(void)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE); /* no remote write */
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    wait_for(&shared[0].done, 1);
    ck_assert_int_eq(e.buf[0], 0);
}

START_TEST(region_without_remote_write_refuses_writes)
{
    end_t e;
    pid_t pid = spawn(region_without_remote_write);
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE);
    memset(e.buf, 9, BUF);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0);
    wait_for(&shared[1].step, 1);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, -1, 5, 1), 0);
    ck_assert_int_eq(poll_one(&e).status, IBV_WC_REM_ACCESS_ERR);
    __atomic_store_n(&shared[0].done, 1, __ATOMIC_SEQ_CST);
    join(pid);
}
END_TEST

START_TEST(registration_checks_flags_and_memory)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE);
    ck_assert_ptr_null(ibv_reg_mr(e.pd, e.buf, 64, IBV_ACCESS_REMOTE_WRITE)); /* needs local write */
    ck_assert_int_eq(errno, EINVAL);
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_null(ibv_reg_mr(e.pd, ro, 4096, IBV_ACCESS_LOCAL_WRITE)); /* read-only pages */
    ck_assert_int_eq(errno, EFAULT);
    struct ibv_mr *mr = ibv_reg_mr(e.pd, ro, 4096, 0); /* reading them is fine */
    ck_assert_ptr_nonnull(mr);
    ibv_dereg_mr(mr);
    munmap(ro, 4096);
    ck_assert_ptr_null(ibv_reg_mr(e.pd, ro, 4096, 0)); /* unmapped */
    ck_assert_int_eq(ibv_dealloc_pd(e.pd), EBUSY);     /* regions still use it */
}
END_TEST

static void peer_that_dies(void)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    ck_assert_int_eq(post_recvs(&e, 1), 0);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    pause(); /* until killed */
}

START_TEST(dead_peer_ends_in_retry_exceeded_and_flushes)
{
    end_t e;
    pid_t pid = spawn(peer_that_dies);
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0); /* timeout 8 (1 ms), 2 retries */
    ck_assert_int_eq(post_recvs(&e, 1), 0);
    wait_for(&shared[1].step, 1);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, 1, 1, 1), 0);
    ck_assert_int_eq(poll_one(&e).status, IBV_WC_SUCCESS); /* alive: acknowledged */
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, -1, 2, 0), 0);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, -1, 3, 0), 0);
    struct ibv_wc wc[3];
    for (int i = 0; i < 3; i++)
        wc[i] = poll_one(&e);
    ck_assert_int_eq(wc[0].wr_id, 2);
    ck_assert_int_eq(wc[0].status, IBV_WC_RETRY_EXC_ERR);
    ck_assert_int_eq(wc[1].wr_id, 3);
    ck_assert_int_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(wc[2].wr_id, 1000); /* and the posted receive */
    ck_assert_int_eq(wc[2].status, IBV_WC_WR_FLUSH_ERR);
}
END_TEST

static void receiver_without_wqes(void)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    wait_for(&shared[0].step, 1); /* the writer's retries ran out, or it waits for ever */
    if (shared[0].done == 2) {
        usleep(50000);
        ck_assert_int_eq(post_recvs(&e, 1), 0);
        struct ibv_wc wc = poll_one(&e); /* the write, retried meanwhile, lands */
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_int_eq(be32toh(wc.imm_data), 1);
    }
    wait_for(&shared[0].done, 3);
}

static void write_to_a_receiver_without_wqes(int rnr_retry)
{
    end_t e;
    pid_t pid = spawn(receiver_without_wqes);
    end_open(&e, "fakeib0", 16, 4, 4, IBV_ACCESS_LOCAL_WRITE);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    ck_assert_int_eq(to_init(e.qp), 0);
    ck_assert_int_eq(to_rtr(&e, &shared[1], 0, 1), 0);
    ck_assert_int_eq(to_rts(e.qp, 8, 2, rnr_retry), 0);
    wait_for(&shared[1].step, 1);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, 1, 1, 1), 0);
    if (rnr_retry == 7) {
        shared[0].done = 2;
        __atomic_store_n(&shared[0].step, 1, __ATOMIC_SEQ_CST);
        ck_assert_int_eq(poll_one(&e).status, IBV_WC_SUCCESS);
    } else {
        ck_assert_int_eq(poll_one(&e).status, IBV_WC_RNR_RETRY_EXC_ERR);
        __atomic_store_n(&shared[0].step, 1, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&shared[0].done, 3, __ATOMIC_SEQ_CST);
    join(pid);
}

START_TEST(write_with_immediate_needs_a_receive)
{
    write_to_a_receiver_without_wqes(2);
}
END_TEST

START_TEST(rnr_retry_7_waits_for_a_receive)
{
    write_to_a_receiver_without_wqes(7);
}
END_TEST

static void quiet_peer(void)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 8, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    wait_for(&shared[0].done, 1);
}

START_TEST(completion_queue_overrun_is_an_error)
{
    end_t e;
    pid_t pid = spawn(quiet_peer);
    end_open(&e, "fakeib0", 2, 8, 4, IBV_ACCESS_LOCAL_WRITE); /* a CQ of 2 entries */
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0);
    wait_for(&shared[1].step, 1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, -1, (uint64_t)i, 1), 0);
    struct ibv_wc wc[4];
    int rc = 0;
    for (int i = 0; i < 2000 && rc >= 0; i++) {
        usleep(1000);
        if (i > 100) /* the three completions had time to overrun the CQ */
            rc = ibv_poll_cq(e.cq, 4, wc);
    }
    ck_assert_int_lt(rc, 0);
    ck_assert_int_eq(qp_state(e.qp), IBV_QPS_ERR);
    __atomic_store_n(&shared[0].done, 1, __ATOMIC_SEQ_CST);
    join(pid);
}
END_TEST

START_TEST(local_key_errors_complete_locally)
{
    end_t e;
    pid_t pid = spawn(quiet_peer);
    end_open(&e, "fakeib0", 16, 8, 4, IBV_ACCESS_LOCAL_WRITE);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0);
    wait_for(&shared[1].step, 1);
    struct ibv_sge sge = {.addr = (uintptr_t)e.buf, .length = 64, .lkey = e.mr->lkey + 256};
    struct ibv_send_wr wr = {.wr_id = 9,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .wr = {.rdma = {.remote_addr = shared[1].addr, .rkey = shared[1].rkey}}},
                       *bad;
    ck_assert_int_eq(ibv_post_send(e.qp, &wr, &bad), 0);
    struct ibv_wc wc = poll_one(&e);
    ck_assert_int_eq(wc.wr_id, 9);
    ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
    __atomic_store_n(&shared[0].done, 1, __ATOMIC_SEQ_CST);
    join(pid);
}
END_TEST

static void roce_peer(void)
{
    end_t e;
    end_open(&e, "fakeroce0", 16, 8, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 3); /* the IPv4-mapped RoCE v2 GID */
    ck_assert_int_eq(post_recvs(&e, 1), 0);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    wait_for(&shared[0].done, 1);
}

/* sgid picks the writer's source GID: 3 (v2) reaches the peer's v2 GID;
 * 2 (v1) does not, and the write ends in retry-exceeded. */
static void roce_write(int sgid, enum ibv_wc_status want)
{
    end_t e;
    pid_t pid = spawn(roce_peer);
    end_open(&e, "fakeroce0", 16, 8, 4, IBV_ACCESS_LOCAL_WRITE);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    ck_assert_int_eq(to_init(e.qp), 0);
    end_t nogrh = e;
    nogrh.roce = 0;
    ck_assert_int_eq(to_rtr(&nogrh, &shared[1], sgid, 1), EINVAL); /* RoCE needs a GRH */
    ck_assert_int_eq(to_rtr(&e, &shared[1], sgid, 1), 0);
    ck_assert_int_eq(to_rts(e.qp, 8, 2, 7), 0);
    wait_for(&shared[1].step, 1);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 3000, shared[1].rkey, 5, 1, 1), 0);
    ck_assert_int_eq(poll_one(&e).status, want);
    __atomic_store_n(&shared[0].done, 1, __ATOMIC_SEQ_CST);
    join(pid);
}

START_TEST(roce_routes_by_gid_and_type)
{
    end_t e;
    end_open(&e, "fakeroce0", 16, 8, 4, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_port_attr pa;
    ck_assert_int_eq(ibv_query_port(e.ctx, 1, &pa), 0);
    ck_assert_int_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
    ck_assert_int_eq(pa.lid, 0);
    struct ibv_gid_entry ge;
    ck_assert_int_eq(ibv_query_gid_ex(e.ctx, 1, 3, &ge, 0), 0);
    ck_assert_int_eq(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
    ck_assert_int_eq(ge.gid.raw[10], 0xff); /* ::ffff:a.b.c.d */
    ibv_close_device(e.ctx);
    roce_write(3, IBV_WC_SUCCESS);
}
END_TEST

START_TEST(roce_v1_does_not_reach_v2)
{
    roce_write(2, IBV_WC_RETRY_EXC_ERR);
}
END_TEST

static void pinned_pages_holder(void)
{
    end_t e;
    end_open(&e, "fakeib0", 16, 8, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    publish(&e, &shared[1]);
    wait_for(&shared[0].ready, 1);
    connect_end(&e, &shared[0], 0);
    ck_assert_int_eq(post_recvs(&e, 2), 0);
    /* The application frees the region's pages; the NIC keeps the old ones. */
    ttfake_release_pages(e.buf, BUF);
    __atomic_store_n(&shared[1].step, 1, __ATOMIC_SEQ_CST);
    ck_assert_int_eq(poll_one(&e).status, IBV_WC_SUCCESS);
    ck_assert_int_eq(e.buf[10], 0); /* the write went to the pages the NIC holds */
}

START_TEST(released_pages_stay_with_the_region)
{
    end_t e;
    pid_t pid = spawn(pinned_pages_holder);
    end_open(&e, "fakeib0", 16, 8, 4, IBV_ACCESS_LOCAL_WRITE);
    memset(e.buf, 7, BUF);
    publish(&e, &shared[0]);
    wait_for(&shared[1].ready, 1);
    connect_end(&e, &shared[1], 0);
    wait_for(&shared[1].step, 1);
    ck_assert_int_eq(post_write(&e, &shared[1], 0, 64, shared[1].rkey, 1, 1, 1), 0);
    ck_assert_int_eq(poll_one(&e).status, IBV_WC_SUCCESS);
    join(pid);
}
END_TEST

START_TEST(no_devices_when_the_fabric_has_none)
{
    setenv("TTFAKE_DEVICES", "", 1);
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(n, 0);
    ck_assert_ptr_null(list[0]);
    ibv_free_device_list(list);
}
END_TEST

int main(void)
{
    tt_fabric_begin("fv");
    shared = mmap(NULL, 2 * sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    Suite *s = suite_create("fakeverbs");
    TCase *tc = tcase_create("fakeverbs");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, state_machine_refuses_illegal_transitions);
    tcase_add_test(tc, writes_with_immediate_arrive_in_order);
    tcase_add_test(tc, wrong_rkey_is_a_remote_access_error);
    tcase_add_test(tc, write_past_the_region_is_a_remote_access_error);
    tcase_add_test(tc, region_without_remote_write_refuses_writes);
    tcase_add_test(tc, registration_checks_flags_and_memory);
    tcase_add_test(tc, dead_peer_ends_in_retry_exceeded_and_flushes);
    tcase_add_test(tc, write_with_immediate_needs_a_receive);
    tcase_add_test(tc, rnr_retry_7_waits_for_a_receive);
    tcase_add_test(tc, completion_queue_overrun_is_an_error);
    tcase_add_test(tc, local_key_errors_complete_locally);
    tcase_add_test(tc, roce_routes_by_gid_and_type);
    tcase_add_test(tc, roce_v1_does_not_reach_v2);
    tcase_add_test(tc, released_pages_stay_with_the_region);
    tcase_add_test(tc, no_devices_when_the_fabric_has_none);
    suite_add_tcase(s, tc);
    int rc = tt_run_suite(s);
    tt_fabric_end();
    return rc;
}
