/* SPDX-License-Identifier: MIT */
/*
 * Direct runs over cuda_ipc, without a GPU: a backend whose "device
 * memory" is host memory (FIFOs in shared segments, copies by memcpy,
 * reductions by the CPU kernels) stands in for CUDA, and the stream model
 * of fake_gpu.h for the device queue's runtime. Everything else is the
 * real code: the board through which ranks agree call by call, the
 * transport's FIFO protocol and life cycle, the engine's memory ops, the
 * queue. Results must equal the host path's, bit for bit.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algorithms/registry.h"
#include "call_place.h"
#include "coll/coll.h"
#include "core/clock.h"
#include "transports/cuda_ipc/cuda_ipc.h"
#include "device/device_coll.h"
#include "device/direct_run.h"
#include "fake_gpu.h"
#include "harness.h"
#include "transports/local.h"
#include "reduce/reduce.h"

#define MAX_GPUS 4

/* What the fake backend did in this process. */
static struct {
    int copies, reduces, opens, closes;
    _Atomic int shares;
} used;

/* reach[g]: bit h set when GPU g can load from GPU h. */
static unsigned reach_of[MAX_GPUS] = {0xf, 0xf, 0xf, 0xf};

typedef struct {
    int gpu;
    char fifo[TT_IPC_HANDLE_BYTES]; /* its segment's name */
    void *scratch;
    size_t scratch_bytes;
} fake_dev_t;

static int fake_attach(int device, void **dev)
{
    fake_dev_t *d = calloc(1, sizeof *d);
    if (!d)
        return 1;
    d->gpu = device;
    *dev = d;
    return 0;
}

static void fake_detach(void *dev)
{
    free(((fake_dev_t *)dev)->scratch);
    free(dev);
}

static int fake_identity(void *dev, uint64_t *self, uint64_t *reach, int *nreach)
{
    int g = ((fake_dev_t *)dev)->gpu;
    *self = 100 + (uint64_t)g;
    *nreach = 0;
    for (int h = 0; h < MAX_GPUS; h++)
        if (reach_of[g] >> h & 1)
            reach[(*nreach)++] = 100 + (uint64_t)h;
    return 0;
}

/* GPU g has the bus id of GPU 0, 1, 4 and 5 of tests/fixtures/gpu8-nic4-nvlink.xml. */
static int fake_bus_id(void *dev, char *out, size_t len)
{
    static const char *const bus[MAX_GPUS] = {"0000:34:00.0", "0000:36:00.0", "0000:b7:00.0", "0000:b9:00.0"};
    snprintf(out, len, "%s", bus[((fake_dev_t *)dev)->gpu]);
    return 0;
}

/*
 * A FIFO is a shared segment; its handle is the segment's name. A header
 * before the FIFO counts the processes that have it open (the owner's
 * mapping aside), so freeing it while a peer still has it open (undefined
 * on a GPU) exits the rank with 91. The last process to close a FIFO whose
 * rank aborted slows down, to give an owner that frees too early the time
 * to do so.
 */
#define FIFO_HDR 64

typedef struct {
    _Atomic int mappers;
} fifo_hdr_t;

static int slow_close; /* ms a close takes in this process */

static int fake_fifo_alloc(void *devp, size_t bytes, void **ptr, unsigned char handle[TT_IPC_HANDLE_BYTES])
{
    fake_dev_t *d = devp;
    static _Atomic int made;
    /* A rank that exits on a violation leaves its FIFO behind; a later
     * process with the same pid must not collide with it. */
    snprintf(d->fifo, sizeof d->fifo, "/tutti-test-fifo-%d-%d-%lx", (int)getpid(), made++,
             (unsigned long)tt_now_ns());
    memcpy(handle, d->fifo, TT_IPC_HANDLE_BYTES);
    char *p = tt_local_create("test", d->fifo, bytes + FIFO_HDR);
    *ptr = p ? p + FIFO_HDR : NULL;
    return *ptr ? 0 : 2;
}

static void fake_fifo_free(void *devp, void *ptr, size_t bytes)
{
    fake_dev_t *d = devp;
    fifo_hdr_t *h = (fifo_hdr_t *)((char *)ptr - FIFO_HDR);
    int still = atomic_load(&h->mappers);
    if (still) {
        fprintf(stderr, "fake backend: FIFO freed while %d peer(s) still have it open\n", still);
        _exit(91);
    }
    munmap(h, bytes + FIFO_HDR);
    shm_unlink(d->fifo);
}

static int fake_fifo_open(void *dev, const unsigned char handle[TT_IPC_HANDLE_BYTES], size_t bytes,
                          void **ptr)
{
    (void)dev;
    used.opens++;
    char *p = tt_local_map("test", (const char *)handle, bytes + FIFO_HDR, -1);
    if (!p)
        return 3;
    atomic_fetch_add(&((fifo_hdr_t *)p)->mappers, 1);
    *ptr = p + FIFO_HDR;
    return 0;
}

static void fake_fifo_close(void *dev, void *ptr, size_t bytes)
{
    (void)dev;
    used.closes++;
    if (slow_close)
        usleep((useconds_t)slow_close * 1000);
    fifo_hdr_t *h = (fifo_hdr_t *)((char *)ptr - FIFO_HDR);
    atomic_fetch_sub(&h->mappers, 1);
    munmap(h, bytes + FIFO_HDR);
}

/* Ranks that are threads of one process share the FIFO as it is. */
static int fake_fifo_share(void *dev, void *ptr, int owner_device, void **out)
{
    (void)dev;
    (void)owner_device;
    used.shares++;
    *out = ptr;
    return 0;
}

static int fake_copy(void *dev, void *dst, const void *src, size_t bytes)
{
    (void)dev;
    used.copies++;
    memcpy(dst, src, bytes);
    return 0;
}

static int fake_reduce(void *dev, void *dst, const void *a, const void *b, size_t count, tutti_dtype_t dtype,
                       tutti_op_t op)
{
    (void)dev;
    used.reduces++;
    tt_reduce_get(dtype, op)(dst, a, b, count);
    return 0;
}

static int fake_avg_finish(void *dev, void *buf, size_t count, tutti_dtype_t dtype, int nranks)
{
    (void)dev;
    tt_reduce_avg_finish(buf, count, dtype, nranks);
    return 0;
}

static int fake_scratch(void *devp, size_t bytes, void **out)
{
    fake_dev_t *d = devp;
    if (bytes > d->scratch_bytes) {
        void *p = realloc(d->scratch, bytes);
        if (!p)
            return 4;
        d->scratch = p;
        d->scratch_bytes = bytes;
    }
    *out = d->scratch;
    return 0;
}

static const char *fake_error(int code)
{
    static const char *const names[] = {"ok", "no memory", "FIFO not created", "FIFO not found",
                                        "no scratch"};
    return code >= 0 && code < 5 ? names[code] : "?";
}

static const tt_ipc_backend_t fake_backend = {
    .name = "host memory (test)",
    .attach = fake_attach,
    .detach = fake_detach,
    .identity = fake_identity,
    .bus_id = fake_bus_id,
    .fifo_alloc = fake_fifo_alloc,
    .fifo_free = fake_fifo_free,
    .fifo_open = fake_fifo_open,
    .fifo_close = fake_fifo_close,
    .fifo_share = fake_fifo_share,
    .copy = fake_copy,
    .reduce = fake_reduce,
    .avg_finish = fake_avg_finish,
    .scratch = fake_scratch,
    .error = fake_error,
};

/* Binds, and opens the FIFOs peers publish, until every one is open (the
 * peers bind at their own pace): what a rank does before its device calls. */
static int prepared(tutti_comm_t comm, int gpu)
{
    for (int tries = 0; tries < 20000; tries++) {
        if (tt_direct_prepare(comm, gpu))
            return 1;
        usleep(500);
    }
    return 0;
}

/* Which ranks offer to go direct: all, or all but one. */
typedef struct {
    int host_rank; /* this rank calls on host buffers; -1: none */
    int gpu_of_rank[MAX_GPUS];
    int expect_direct;
} plan_t;

static const tt_coll_t colls[] = {TT_COLL_ALLREDUCE, TT_COLL_REDUCE_SCATTER, TT_COLL_ALLGATHER,
                                  TT_COLL_BROADCAST, TT_COLL_REDUCE,         TT_COLL_ALLTOALL};
static const struct {
    tutti_dtype_t t;
    tutti_op_t op;
} kinds[] = {
    {TUTTI_FP32, TUTTI_SUM}, {TUTTI_INT32, TUTTI_MAX}, {TUTTI_FP16, TUTTI_AVG}, {TUTTI_BF16, TUTTI_SUM}};
static const size_t counts[] = {1, 3001};

/* One call: the host path's result on ref, then the same call on dev,
 * directly where the plan says so; the two must be equal. */
static int one_call(tutti_comm_t comm, const plan_t *plan, tt_call_t c, char *ref, char *dev,
                    size_t span_bytes, int ip, int r, int p)
{
    size_t n = c.count, e = tutti_dtype_size(c.dtype);
    for (size_t i = 0; i < span_bytes / e; i++)
        tt_test_value(c.dtype, c.op, ref, i, r, i);
    memcpy(dev, ref, span_bytes);
    tt_call_t want = c, d = c;
    tt_test_place(&want, c.coll, ref, n, e, r, p, ip);
    tt_test_place(&d, c.coll, dev, n, e, r, p, ip);
    TT_FAIL_IF(tt_test_run_host(comm, &want), "%s: %s", tt_coll_name(c.coll), tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_coll_validate(comm, &d, "test"), "prepare: %s", tutti_comm_last_error(comm));
    uint64_t runs = tt_direct_runs(comm), seq;
    int direct;
    TT_FAIL_IF(tt_coll_begin(comm, &d, plan->host_rank != r, &seq, &direct), "begin: %s",
               tutti_comm_last_error(comm));
    TT_FAIL_IF(direct != (plan->expect_direct && plan->host_rank != r), "%s: direct is %d",
               tt_coll_name(c.coll), direct);
    tutti_status_t st = direct ? tt_direct_run(comm, &d, seq) : tt_coll_run_at(comm, &d, seq, NULL);
    TT_FAIL_IF(st, "%s: %s", tt_coll_name(c.coll), tutti_comm_last_error(comm));
    TT_FAIL_IF(tt_direct_runs(comm) != runs + (uint64_t)direct, "the direct run was not counted");
    TT_FAIL_IF(memcmp(dev, ref, span_bytes), "%s %s %s n=%zu in_place=%d: results differ from the host path",
               tt_coll_name(c.coll), tutti_dtype_name(c.dtype), tutti_op_name(c.op), n, ip);
    return 0;
}

static int direct_collectives(tutti_comm_t handle, int r, int p, void *arg)
{
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    const plan_t *plan = arg;
    /* The host rank has a FIFO too (as after earlier device calls): only
     * its announcements keep the others from going direct. */
    TT_FAIL_IF(!prepared(comm, plan->gpu_of_rank[r]), "prepare failed");
    int opens = used.opens;
    size_t span_bytes = 2 * 3001 * (size_t)p * 4 + 64;
    char *ref = malloc(span_bytes), *dev = malloc(span_bytes);
    TT_FAIL_IF(!ref || !dev, "no memory");
    for (size_t ci = 0; ci < sizeof colls / sizeof *colls; ci++)
        for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++)
            for (size_t ni = 0; ni < 2; ni++)
                for (int ip = 0; ip < 2; ip++) {
                    if (ip && colls[ci] == TT_COLL_ALLTOALL)
                        continue; /* no in-place form */
                    tt_call_t c = {.coll = colls[ci],
                                   .count = counts[ni],
                                   .dtype = kinds[ki].t,
                                   .op = kinds[ki].op,
                                   .root = (int)(ni % (size_t)p)};
                    if (one_call(comm, plan, c, ref, dev, span_bytes, ip, r, p))
                        return 1;
                }
    free(ref);
    free(dev);
    if (plan->expect_direct && plan->host_rank != r) {
        /* Messages went through the FIFOs, and each peer's was opened once. */
        TT_FAIL_IF(used.copies == 0 || used.reduces == 0, "the backend was not used (%d copies, %d reduces)",
                   used.copies, used.reduces);
        TT_FAIL_IF(used.opens != p - 1, "%d FIFO opens for %d peers", used.opens, p - 1);
        TT_FAIL_IF(used.opens != opens, "%d FIFOs opened during the calls, not before", used.opens - opens);
    }
    return 0;
}

/* _i picks the algorithm: every one that serves a collective on one host. */
START_TEST(direct_runs_match_the_host_path)
{
    const tt_algorithm_t *a = tt_algorithms[_i];
    int serves = 0;
    for (int c = TT_COLL_ALLREDUCE; c <= TT_COLL_ALLTOALL; c++)
        serves |= a->build[c] != NULL;
    if (!serves || strcmp(a->name, "hierarchical") == 0)
        return;
    int p = 2 + _i % 3;
    setenv("TUTTI_ALGO", a->name, 1);
    setenv("TUTTI_SLICE_BYTES", "1K", 1);
    plan_t plan = {.host_rank = -1, .expect_direct = 1};
    tt_run_ranks(p, direct_collectives, &plan, 120);
    unsetenv("TUTTI_ALGO");
    unsetenv("TUTTI_SLICE_BYTES");
}
END_TEST

/* Messages larger than a FIFO slot take several, in order. */
START_TEST(messages_span_many_slots)
{
    setenv("TUTTI_IPC_SLOT_BYTES", "256", 1);
    setenv("TUTTI_IPC_SLOTS", "1", 1);
    plan_t plan = {.host_rank = -1, .expect_direct = 1};
    tt_run_ranks(3, direct_collectives, &plan, 120);
    unsetenv("TUTTI_IPC_SLOT_BYTES");
    unsetenv("TUTTI_IPC_SLOTS");
}
END_TEST

/* One rank on host buffers: nobody goes direct, and all results hold. */
START_TEST(a_host_rank_keeps_everyone_staged)
{
    plan_t plan = {.host_rank = _i, .expect_direct = 0};
    tt_run_ranks(3, direct_collectives, &plan, 120);
}
END_TEST

/* GPU 1 cannot load from GPU 0: the ranks stage though all offer. */
START_TEST(gpus_that_cannot_reach_each_other_stage)
{
    reach_of[1] = 1u << 1;
    plan_t plan = {.host_rank = -1, .gpu_of_rank = {0, 1}, .expect_direct = 0};
    tt_run_ranks(2, direct_collectives, &plan, 120);
    reach_of[1] = 0xf;
}
END_TEST

/* Ranks on different GPUs that reach each other, and ranks sharing one. */
START_TEST(mixed_gpus_that_reach_each_other_go_direct)
{
    plan_t plan = {.host_rank = -1, .gpu_of_rank = {0, 1, 1, 2}, .expect_direct = 1};
    tt_run_ranks(4, direct_collectives, &plan, 120);
}
END_TEST

/*
 * Rank 1 runs far ahead on host calls (tcp buffers its reduces to rank 0)
 * while rank 0, late, asks to go direct on the first call: the board must
 * still hold rank 1's answer for that call, so rank 1 may not announce
 * TT_IPC_BOARD calls past it before rank 0 has read it.
 */
#define AHEAD (TT_IPC_BOARD + 500)

static int run_ahead(tutti_comm_t handle, int r, int p, void *arg)
{
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)p;
    (void)arg;
    float x = 1, y = 0;
    if (r == 0) {
        tt_direct_prepare(comm, 0); /* binds; rank 1 never does, so it cannot go direct */
        usleep(300000);
    }
    for (int i = 0; i < AHEAD; i++) {
        tt_call_t c = {
            .coll = TT_COLL_REDUCE, .send = &x, .recv = &y, .count = 1, .dtype = TUTTI_FP32, .op = TUTTI_SUM};
        TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "prepare: %s", tutti_comm_last_error(handle));
        uint64_t seq;
        int direct;
        TT_FAIL_IF(tt_coll_begin(comm, &c, r == 0 && i == 0, &seq, &direct), "call %d: %s", i,
                   tutti_comm_last_error(handle));
        TT_FAIL_IF(direct, "went direct with a host rank");
        TT_FAIL_IF(tt_coll_run_at(comm, &c, seq, NULL), "call %d: %s", i, tutti_comm_last_error(handle));
        TT_FAIL_IF(r == 0 && y != 2, "call %d: reduced %g", i, (double)y);
    }
    return 0;
}

START_TEST(the_board_holds_answers_until_read)
{
    setenv("TUTTI_TRANSPORTS", "cuda_ipc,tcp", 1); /* host calls over tcp, device ones over cuda_ipc */
    setenv("TUTTI_TIMEOUT", "20", 1);
    tt_run_ranks(2, run_ahead, NULL, 60);
    unsetenv("TUTTI_TRANSPORTS");
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* A rank that dies before a call: the one waiting to agree on it is told. */
static int dies_before_the_call(tutti_comm_t handle, int r, int p, void *arg)
{
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)p;
    (void)arg;
    if (r == 1)
        _exit(0);
    tt_direct_prepare(comm, 0);
    float x = 1, y = 0;
    tt_call_t c = {
        .coll = TT_COLL_ALLREDUCE, .send = &x, .recv = &y, .count = 1, .dtype = TUTTI_FP32, .op = TUTTI_SUM};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "prepare: %s", tutti_comm_last_error(handle));
    uint64_t seq;
    int direct;
    tutti_status_t st = tt_coll_begin(comm, &c, 1, &seq, &direct);
    TT_FAIL_IF(st != TUTTI_ERR_PEER_FAILED || !strstr(tutti_comm_last_error(handle), "rank 1 died"),
               "got %s: %s", tutti_strerror(st), tutti_comm_last_error(handle));
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(a_rank_that_died_is_named_while_agreeing)
{
    tt_run_ranks(2, dies_before_the_call, NULL, 60);
}
END_TEST

/* TUTTI_CUDA_IPC=0: no layer, so every call stages. */
static int no_layer(tutti_comm_t handle, int r, int p, void *arg)
{
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)r;
    (void)p;
    (void)arg;
    TT_FAIL_IF(tt_direct_prepare(comm, 0), "the layer was set up under TUTTI_CUDA_IPC=0");
    return 0;
}

START_TEST(cuda_ipc_0_turns_the_layer_off)
{
    setenv("TUTTI_CUDA_IPC", "0", 1);
    tt_run_ranks(2, no_layer, NULL, 60);
    unsetenv("TUTTI_CUDA_IPC");
}
END_TEST

/* Direct runs price each GPU pair by the topology's link between them:
 * the fixture joins its GPUs 0-1, 0-4, 1-5 and 4-5 by NVLink, not 0-5. */
static int links_from_topology(tutti_comm_t handle, int r, int p, void *arg)
{
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    (void)arg;
    TT_FAIL_IF(!prepared(comm, r), "prepare failed");
    float x[64] = {0}, y[64];
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = y, .count = 64, .dtype = TUTTI_FP32};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate: %s", tutti_comm_last_error(handle));
    TT_FAIL_IF(tt_direct_link(comm, 0, 1) != -1, "GPU links priced before any direct run");
    uint64_t seq;
    int direct;
    TT_FAIL_IF(tt_coll_begin(comm, &c, 1, &seq, &direct) || !direct, "did not agree to go direct");
    TT_FAIL_IF(tt_direct_run(comm, &c, seq), "%s", tutti_comm_last_error(handle));
    static const int want[4][4] = {{-1, TT_LINK_NVLINK, TT_LINK_NVLINK, TT_LINK_PCIE},
                                   {TT_LINK_NVLINK, -1, TT_LINK_PCIE, TT_LINK_NVLINK},
                                   {TT_LINK_NVLINK, TT_LINK_PCIE, -1, TT_LINK_NVLINK},
                                   {TT_LINK_PCIE, TT_LINK_NVLINK, TT_LINK_NVLINK, -1}};
    for (int a = 0; a < p; a++)
        for (int b = 0; b < p; b++)
            TT_FAIL_IF(a != b && tt_direct_link(comm, a, b) != want[a][b], "ranks %d and %d: %s, not %s", a,
                       b, tt_link_name((tt_link_t)tt_direct_link(comm, a, b)),
                       tt_link_name((tt_link_t)want[a][b]));
    return 0;
}

START_TEST(gpu_links_come_from_the_topology)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/gpu8-nic4-nvlink.xml", getenv("TT_SRCDIR"));
    setenv("TUTTI_TOPO_FILE", path, 1);
    tt_run_ranks(4, links_from_topology, NULL, 60);
    unsetenv("TUTTI_TOPO_FILE");
}
END_TEST

/* Ranks of one process (ncclCommInitAll's threads) pair over cuda_ipc
 * like any ranks of one host: they share FIFOs by address, not by IPC
 * handle (CUDA cannot open one in the process that made it; see below). */
START_TEST(ranks_of_one_process_pair)
{
    tt_endpoint_t ep[3] = {
        {.host_id = 7, .pid = 100}, {.host_id = 7, .pid = 100}, {.host_id = 7, .pid = 101}};
    tt_tp_env_t env = {.rank = 0, .nranks = 3, .endpoints = ep};
    ck_assert_int_eq(tt_cuda_ipc_ops.reachable(&env, 1), 1);
    ck_assert_int_eq(tt_cuda_ipc_ops.reachable(&env, 2), 1);
    ep[2].host_id = 8; /* another host */
    ck_assert_int_eq(tt_cuda_ipc_ops.reachable(&env, 2), 0);
}
END_TEST

/* One direct all-reduce, checked: what a rank does before tearing down. */
static int one_direct_allreduce(tutti_comm_t comm, int r, int p)
{
    float x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i + r);
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = y, .count = 1000, .dtype = TUTTI_FP32};
    TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate: %s", tutti_comm_last_error(NULL));
    uint64_t seq;
    int direct;
    TT_FAIL_IF(tt_coll_begin(comm, &c, 1, &seq, &direct) || !direct, "did not agree to go direct");
    TT_FAIL_IF(tt_direct_run(comm, &c, seq), "%s", tutti_comm_last_error(NULL));
    for (int i = 0; i < 1000; i++)
        TT_FAIL_IF(y[i] != (float)(p * i + p * (p - 1) / 2), "element %d: %g", i, (double)y[i]);
    return 0;
}

/* Rank 1 is slow to close rank 0's FIFO at teardown: rank 0 may free its
 * FIFO only after (the fake backend exits 91 otherwise). */
static int slow_peer_teardown(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    TT_FAIL_IF(!prepared(comm, 0), "prepare failed");
    if (one_direct_allreduce(comm, r, p))
        return 1;
    slow_close = r == 1 ? 300 : 0;
    return 0; /* the harness destroys */
}

START_TEST(fifos_are_freed_after_every_peer_closed_them)
{
    tt_run_ranks(2, slow_peer_teardown, NULL, 60);
}
END_TEST

/* Rank 0 aborts while rank 1 still has its FIFO open: the FIFO must stay. */
static int abort_with_fifo_open(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    TT_FAIL_IF(!prepared(comm, 0), "prepare failed");
    if (one_direct_allreduce(comm, r, p))
        return 1;
    if (r == 0) {
        tutti_comm_abort(handle);
        return -1;
    }
    usleep(300000); /* rank 0 is gone by now; its FIFO must not be */
    tutti_comm_abort(handle);
    return -1;
}

START_TEST(an_aborting_rank_leaves_its_fifo_to_the_peers)
{
    tt_run_ranks(2, abort_with_fifo_open, NULL, 60);
}
END_TEST

/* Two ranks that are threads of one process, on GPUs 0 and 1: no IPC
 * handle opened (that fails in the process that made it), both FIFOs
 * shared by address, and direct runs give the host path's results. */
typedef struct {
    tutti_unique_id_t id;
    int rank, failed;
} thread_rank_t;

static void *thread_rank(void *arg)
{
    thread_rank_t *t = arg;
    tutti_comm_t handle;
    if (tutti_comm_init(&handle, 2, t->rank, &t->id, NULL)) {
        fprintf(stderr, "thread rank %d: init: %s\n", t->rank, tutti_comm_last_error(NULL));
        t->failed = 1;
        return NULL;
    }
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    t->failed = !prepared(comm, t->rank) || one_direct_allreduce(comm, t->rank, 2);
    if (tutti_comm_destroy(handle))
        t->failed = 1;
    return NULL;
}

START_TEST(ranks_in_one_process_share_fifos_without_ipc)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        thread_rank_t t[2] = {{.rank = 0}, {.rank = 1}};
        if (tutti_get_unique_id(&t[0].id))
            _exit(2);
        t[1].id = t[0].id;
        pthread_t th[2];
        for (int r = 0; r < 2; r++)
            pthread_create(&th[r], NULL, thread_rank, &t[r]);
        for (int r = 0; r < 2; r++)
            pthread_join(th[r], NULL);
        if (t[0].failed || t[1].failed)
            _exit(3);
        if (used.opens || atomic_load(&used.shares) != 2) {
            fprintf(stderr, "%d IPC opens, %d shared FIFOs\n", used.opens, atomic_load(&used.shares));
            _exit(4);
        }
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the two-thread process ended with %d",
                  status);
}
END_TEST

/*
 * Through the device queue (on the stream model of fake_gpu.h): once every
 * rank made a device call and opened its peers' FIFOs, queued calls run
 * directly; with CUDA_DEVICE_MAX_CONNECTIONS=1 none may (the proxy's GPU
 * work would wait behind the gate in the one hardware queue), and they
 * stage through the caller's stream with no GPU work of the proxy's own.
 */
static int queued_calls(tutti_comm_t handle, int r, int p, void *arg)
{
    tutti_comm_t comm = tt_comm_lookup(handle, NULL); /* white box: the communicator itself */
    int one_queue = arg != NULL;
    tt_fake_mode_t mode = {.connections = one_queue};
    tt_fake_gpu_mode(&mode);
    enum { N = 3001, CALLS = 8 };
    float *x = tt_fake_gpu_malloc(N * sizeof(float), 0), *y = tt_fake_gpu_malloc(N * sizeof(float), 0);
    void *stream = tt_fake_gpu_stream();
    for (int k = 0; k <= CALLS; k++) {
        if (k == 1) /* every rank has made its first device call, so all FIFOs are published */
            TT_FAIL_IF(tutti_barrier(handle, NULL), "barrier: %s", tutti_comm_last_error(handle));
        uint64_t runs = tt_direct_runs(comm);
        for (int i = 0; i < N; i++)
            x[i] = (float)(k + i + r);
        tt_call_t c = {.coll = TT_COLL_ALLREDUCE, .send = x, .recv = y, .count = N, .dtype = TUTTI_FP32};
        TT_FAIL_IF(tt_coll_validate(comm, &c, "test"), "validate");
        c.send_on_device = c.recv_on_device = 1;
        TT_FAIL_IF(tt_device_coll_enqueue(comm, &c, stream), "call %d: %s", k, tutti_comm_last_error(handle));
        TT_FAIL_IF(tt_fake_gpu.stream_sync(stream), "sync");
        for (int i = 0; i < N; i++)
            TT_FAIL_IF(y[i] != (float)(p * (k + i) + p * (p - 1) / 2), "call %d element %d: %g", k, i,
                       (double)y[i]);
        if (k > 0)
            TT_FAIL_IF(tt_direct_runs(comm) != runs + !one_queue, "call %d: direct %d times, not %d", k,
                       (int)(tt_direct_runs(comm) - runs), !one_queue);
    }
    TT_FAIL_IF(one_queue && tt_fake_gpu_library_ops(), "the proxy put GPU work on streams of its own");
    return 0;
}

START_TEST(queued_calls_go_direct_unless_every_stream_shares_one_queue)
{
    static int one = 1;
    if (_i)
        setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
    tt_run_ranks(2 + _i, queued_calls, _i ? &one : NULL, 120);
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}
END_TEST

/* A machine without a GPU: nothing is set up, and the log says so. */
static int no_gpu(char *why, size_t len)
{
    snprintf(why, len, "this test's machine has none");
    return 0;
}

START_TEST(no_gpu_no_layer_and_the_log_says_why)
{
    tt_ipc_backend_t gpuless = fake_backend;
    gpuless.usable = no_gpu;
    tt_ipc_set_backend(&gpuless);
    setenv("TUTTI_LOG", "debug", 1);
    setenv("TUTTI_LOG_SUBSYS", "init,net", 1);
    char path[] = "/tmp/tutti-ipc-log-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    dup2(fd, 2);
    tt_run_ranks(2, no_layer, NULL, 60);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    static char log[1 << 16];
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    unsetenv("TUTTI_LOG");
    unsetenv("TUTTI_LOG_SUBSYS");
    tt_ipc_set_backend(&fake_backend);
    ck_assert_msg(strstr(log, "cuda_ipc not offered: this test's machine has none"), "%s", log);
    ck_assert_msg(!strstr(log, "cuda_ipc connects"), "%s", log);
}
END_TEST

static Suite *ipc_suite(void)
{
    Suite *s = suite_create("ipc");
    TCase *tc = tcase_create("ipc");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, direct_runs_match_the_host_path, 0, tt_num_algorithms);
    tcase_add_test(tc, messages_span_many_slots);
    tcase_add_loop_test(tc, a_host_rank_keeps_everyone_staged, 0, 3);
    tcase_add_test(tc, gpus_that_cannot_reach_each_other_stage);
    tcase_add_test(tc, mixed_gpus_that_reach_each_other_go_direct);
    tcase_add_test(tc, the_board_holds_answers_until_read);
    tcase_add_test(tc, a_rank_that_died_is_named_while_agreeing);
    tcase_add_test(tc, cuda_ipc_0_turns_the_layer_off);
    tcase_add_test(tc, gpu_links_come_from_the_topology);
    tcase_add_test(tc, ranks_of_one_process_pair);
    tcase_add_test(tc, fifos_are_freed_after_every_peer_closed_them);
    tcase_add_test(tc, an_aborting_rank_leaves_its_fifo_to_the_peers);
    tcase_add_test(tc, ranks_in_one_process_share_fifos_without_ipc);
    tcase_add_loop_test(tc, queued_calls_go_direct_unless_every_stream_shares_one_queue, 0, 2);
    tcase_add_test(tc, no_gpu_no_layer_and_the_log_says_why);
    suite_add_tcase(s, tc);
    return s;
}

/* FIFOs of ranks that aborted stay (on a GPU their process's end frees
 * them): the suite removes those whose process is gone. */
static void sweep_fifos(void)
{
    DIR *dir = opendir("/dev/shm");
    for (struct dirent *e; dir && (e = readdir(dir));) {
        int pid;
        char name[300], proc[64];
        if (sscanf(e->d_name, "tutti-test-fifo-%d-", &pid) != 1)
            continue;
        snprintf(proc, sizeof proc, "/proc/%d", pid);
        snprintf(name, sizeof name, "/%s", e->d_name);
        if (access(proc, F_OK) != 0)
            shm_unlink(name);
    }
    if (dir)
        closedir(dir);
}

int main(void)
{
    tt_ipc_set_backend(&fake_backend);
    tt_device_set_rt(&tt_fake_gpu);
    int rc = tt_run_suite(ipc_suite());
    sweep_fifos();
    return rc;
}
