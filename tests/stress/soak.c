/* SPDX-License-Identifier: MIT */
/*
 * The soak: ITERS random collectives on P forked ranks of one communicator
 * (every collective, dtype and op, counts from 0 to 150000, misaligned
 * buffers, in place or not), each result checked element by element
 * against a reference computed on every rank from every rank's inputs; no
 * file descriptor may be gained and no shared segment left behind.
 * usage: soak [-n ITERS] [-p RANKS] [-s SEED]   (TUTTI_TRANSPORTS picks shm or tcp)
 * Exit status 0 when every call succeeded with the right result.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/bootstrap.h"
#include "core/fp8.h"
#include "core/half.h"
#include "reduce/reduce.h"
#include "tutti.h"

enum {
    C_ALLREDUCE,
    C_REDUCE_SCATTER,
    C_ALLGATHER,
    C_BROADCAST,
    C_REDUCE,
    C_ALLTOALL,
    C_BARRIER,
    C_SENDRECV,
    C_N
};
static const char *const cname[C_N] = {"allreduce", "reduce_scatter", "allgather", "broadcast",
                                       "reduce",    "alltoall",       "barrier",   "sendrecv"};

typedef struct {
    int coll, root, in_place, mis;
    tutti_dtype_t dtype;
    tutti_op_t op;
    size_t n;
} call_t;

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The same call on every rank: they share the seed. */
static call_t pick(uint64_t *s, int p)
{
    call_t c = {.coll = (int)(next(s) % C_N), .dtype = (tutti_dtype_t)(next(s) % TUTTI_NUM_DTYPES)};
    c.op = (tutti_op_t)(next(s) % TUTTI_NUM_OPS);
    /* fp8 sums round at every partial sum, differently per algorithm: only min and max are exact. */
    if ((c.dtype == TUTTI_FP8_E4M3 || c.dtype == TUTTI_FP8_E5M2) && c.op != TUTTI_MIN && c.op != TUTTI_MAX)
        c.op = TUTTI_MAX;
    unsigned k = (unsigned)(next(s) % 10);
    c.n = k == 0 ? 0 : k < 6 ? 1 + next(s) % 64 : k < 9 ? 65 + next(s) % 4032 : 4097 + next(s) % 146000;
    c.root = (int)(next(s) % (uint64_t)p);
    c.in_place = (int)(next(s) % 3 == 0) && c.coll != C_ALLTOALL && c.coll != C_SENDRECV;
    c.mis = (int)(next(s) % 8);
    return c;
}

/* Element i of rank r's input: small integers, exact in every dtype and op. */
static void value(const call_t *c, char *buf, size_t i, int r, uint64_t iter)
{
    int v = c->op == TUTTI_PROD ? ((r + (int)i + (int)iter) % 3 == 0 ? 2 : 1)
                                : (int)((r * 7 + i * 13 + iter) % 9);
    float f = (float)v;
    size_t e = tutti_dtype_size(c->dtype);
    char *at = buf + i * e;
    uint16_t h;
    uint8_t b;
    switch (c->dtype) {
    case TUTTI_FP16:
        h = tt_f32_to_fp16(f);
        memcpy(at, &h, 2);
        break;
    case TUTTI_BF16:
        h = tt_f32_to_bf16(f);
        memcpy(at, &h, 2);
        break;
    case TUTTI_FP8_E4M3:
        b = tt_f32_to_e4m3(f);
        memcpy(at, &b, 1);
        break;
    case TUTTI_FP8_E5M2:
        b = tt_f32_to_e5m2(f);
        memcpy(at, &b, 1);
        break;
    case TUTTI_FP32: memcpy(at, &f, 4); break;
    case TUTTI_FP64: {
        double d = v;
        memcpy(at, &d, 8);
        break;
    }
    default: {
        uint64_t u = (uint64_t)v;
        memcpy(at, &u, e); /* little-endian: the low bytes */
    }
    }
}

static void fill(const call_t *c, char *buf, size_t n, int r, uint64_t iter, size_t base)
{
    for (size_t i = 0; i < n; i++)
        value(c, buf, i, r, iter + base + i / 4096); /* varies along the buffer too */
}

/* want = op over ranks of their inputs (n elements from element off of each). */
static void reduced(const call_t *c, int p, uint64_t iter, size_t n, size_t off, char *want, char *tmp)
{
    size_t e = tutti_dtype_size(c->dtype);
    char *all = malloc((off + n) * e + 1);
    tt_reduce_fn fn = tt_reduce_get(c->dtype, c->op);
    for (int q = 0; q < p; q++) {
        fill(c, all, off + n, q, iter, 0);
        if (q == 0)
            memcpy(want, all + off * e, n * e);
        else {
            memcpy(tmp, all + off * e, n * e);
            fn(want, want, tmp, n);
        }
    }
    if (c->op == TUTTI_AVG)
        tt_reduce_avg_finish(want, n, c->dtype, p);
    free(all);
}

typedef struct {
    char *in, *out, *want, *tmp, *raw_in, *raw_out;
} bufs_t;

static tutti_status_t run(tutti_comm_t comm, const call_t *c, int r, int p, bufs_t *b)
{
    size_t n = c->n;
    void *in = c->in_place ? b->out : b->in;
    switch (c->coll) {
    case C_ALLREDUCE: return tutti_allreduce(in, b->out, n, c->dtype, c->op, comm, NULL);
    case C_REDUCE_SCATTER:
        return tutti_reduce_scatter(c->in_place ? b->out : b->in,
                                    c->in_place ? b->out + (size_t)r * n * tutti_dtype_size(c->dtype)
                                                : b->out,
                                    n, c->dtype, c->op, comm, NULL);
    case C_ALLGATHER:
        return tutti_allgather(c->in_place ? b->out + (size_t)r * n * tutti_dtype_size(c->dtype) : b->in,
                               b->out, n, c->dtype, comm, NULL);
    case C_BROADCAST: return tutti_broadcast(in, b->out, n, c->dtype, c->root, comm, NULL);
    case C_REDUCE: return tutti_reduce(in, b->out, n, c->dtype, c->op, c->root, comm, NULL);
    case C_ALLTOALL: return tutti_alltoall(b->in, b->out, n, c->dtype, comm, NULL);
    case C_BARRIER: return tutti_barrier(comm, NULL);
    default: {
        int to = (r + 1) % p, from = (r + p - 1) % p;
        tutti_status_t st;
        if (r % 2 == 0) {
            st = tutti_send(b->in, n, c->dtype, to, comm, NULL);
            return st ? st : tutti_recv(b->out, n, c->dtype, from, comm, NULL);
        }
        st = tutti_recv(b->out, n, c->dtype, from, comm, NULL);
        return st ? st : tutti_send(b->in, n, c->dtype, to, comm, NULL);
    }
    }
}

/* Fills this rank's inputs for c and writes the expected output into
 * want; returns the bytes of output to compare and where they start. */
static size_t prepare(const call_t *c, int r, int p, uint64_t iter, bufs_t *b, size_t *cmp_off)
{
    size_t n = c->n, e = tutti_dtype_size(c->dtype), blk = n * e;
    char *in = c->in_place ? b->out : b->in;
    *cmp_off = 0;
    memset(b->out, 0xA5, (size_t)p * blk + 8);
    switch (c->coll) {
    case C_ALLREDUCE:
        fill(c, in, n, r, iter, 0);
        reduced(c, p, iter, n, 0, b->want, b->tmp);
        return blk;
    case C_REDUCE_SCATTER:
        fill(c, in, (size_t)p * n, r, iter, 0);
        reduced(c, p, iter, n, (size_t)r * n, b->want, b->tmp);
        *cmp_off = c->in_place ? (size_t)r * blk : 0;
        return blk;
    case C_ALLGATHER:
        fill(c, c->in_place ? b->out + (size_t)r * blk : b->in, n, r, iter, 0);
        for (int q = 0; q < p; q++)
            fill(c, b->want + (size_t)q * blk, n, q, iter, 0);
        return (size_t)p * blk;
    case C_BROADCAST:
        if (r == c->root)
            fill(c, in, n, r, iter, 0);
        fill(c, b->want, n, c->root, iter, 0);
        return blk;
    case C_REDUCE:
        fill(c, in, n, r, iter, 0);
        reduced(c, p, iter, n, 0, b->want, b->tmp);
        return r == c->root ? blk : 0;
    case C_ALLTOALL:
        for (int j = 0; j < p; j++) {
            fill(c, b->in + (size_t)j * blk, n, r * p + j, iter, 0);
            fill(c, b->want + (size_t)j * blk, n, j * p + r, iter, 0);
        }
        return (size_t)p * blk;
    case C_SENDRECV:
        fill(c, b->in, n, r, iter, 0);
        fill(c, b->want, n, (r + p - 1) % p, iter, 0);
        return blk;
    default: return 0;
    }
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1; /* the directory's own */
}

static int job_segments(uint64_t tag)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "tutti-%016llx-", (unsigned long long)tag);
    DIR *d = opendir("/dev/shm");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/*
 * Descriptors: connections are made at first use, so the count grows while
 * calls meet new peers; it must stop growing once they have (no more at the
 * end than halfway through a long run), and destroy must close every one
 * the communicator opened (no more after it than before init; rank 0 has
 * one fewer: init took over the root listener tutti_get_unique_id opened).
 */
static int rank_main(const tutti_unique_id_t *id, int r, int p, long iters, uint64_t seed)
{
    tutti_comm_t comm;
    int fds_before_init = open_fds();
    if (tutti_comm_init(&comm, p, r, id, NULL)) {
        fprintf(stderr, "soak rank %d: init: %s\n", r, tutti_comm_last_error(NULL));
        return 1;
    }
    size_t cap = (size_t)p * 150100 * 8 + 64;
    bufs_t b = {.raw_in = malloc(cap), .raw_out = malloc(cap), .want = malloc(cap), .tmp = malloc(cap)};
    if (!b.raw_in || !b.raw_out || !b.want || !b.tmp)
        return 1;
    int fds_half = -1, rc = 0;
    for (long it = 0; it < iters && !rc; it++) {
        if (it == iters / 2)
            fds_half = open_fds();
        call_t c = pick(&seed, p);
        b.in = b.raw_in + c.mis;
        b.out = b.raw_out + (c.mis * 3) % 8;
        size_t off, cmp = prepare(&c, r, p, (uint64_t)it, &b, &off);
        tutti_status_t st = run(comm, &c, r, p, &b);
        if (st) {
            fprintf(stderr, "soak rank %d: call %ld, %s of %zu %s %s: %s: %s\n", r, it, cname[c.coll], c.n,
                    tutti_dtype_name(c.dtype), tutti_op_name(c.op), tutti_status_name(st),
                    tutti_comm_last_error(comm));
            rc = 2;
        } else if (memcmp(b.out + off, b.want, cmp) != 0) {
            size_t e = tutti_dtype_size(c.dtype), i = 0;
            while (i < cmp && b.out[off + i] == b.want[i])
                i++;
            fprintf(stderr,
                    "soak rank %d: call %ld, %s of %zu %s %s root %d in_place %d mis %d: element %zu wrong\n",
                    r, it, cname[c.coll], c.n, tutti_dtype_name(c.dtype), tutti_op_name(c.op), c.root,
                    c.in_place, c.mis, i / e);
            rc = 3;
        }
    }
    int fds_end = open_fds();
    if (!rc && iters >= 1000 && fds_end > fds_half) {
        fprintf(stderr, "soak rank %d: %d descriptors open after %ld calls, %d after %ld\n", r, fds_end,
                iters, fds_half, iters / 2);
        rc = 4;
    }
    if (rc)
        tutti_comm_abort(comm);
    else if (tutti_comm_destroy(comm)) {
        fprintf(stderr, "soak rank %d: destroy: %s\n", r, tutti_comm_last_error(NULL));
        rc = 5;
    } else if (open_fds() > fds_before_init) {
        fprintf(stderr, "soak rank %d: %d descriptors open after destroy, %d before init\n", r, open_fds(),
                fds_before_init);
        rc = 4;
    }
    free(b.raw_in);
    free(b.raw_out);
    free(b.want);
    free(b.tmp);
    return rc;
}

int main(int argc, char **argv)
{
    long iters = 10000;
    int p = 4, opt;
    uint64_t seed = 0x5eed;
    while ((opt = getopt(argc, argv, "n:p:s:")) != -1) {
        if (opt == 'n')
            iters = atol(optarg);
        else if (opt == 'p')
            p = atoi(optarg);
        else if (opt == 's')
            seed = strtoull(optarg, NULL, 0) | 1;
        else
            return 2;
    }
    tutti_unique_id_t id;
    if (p < 1 || p > 64 || tutti_get_unique_id(&id))
        return 2;
    tt_id_t tid;
    tt_id_decode(id.internal, &tid);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pids[64];
    fflush(stdout);
    for (int r = 0; r < p; r++)
        if ((pids[r] = fork()) == 0)
            exit(rank_main(&id, r, p, iters, seed));
    int bad = 0;
    for (int r = 0; r < p; r++) {
        int status;
        waitpid(pids[r], &status, 0);
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int left = job_segments(tt_key_tag(tid.key));
    const char *tp = getenv("TUTTI_TRANSPORTS");
    printf("soak: %d ranks over %s: %ld random collectives each in %.1f s, results %s, %d shared segments "
           "left\n",
           p, tp ? tp : "the default transports", iters,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
           bad ? "WRONG or failed" : "all right", left);
    return bad || left;
}
