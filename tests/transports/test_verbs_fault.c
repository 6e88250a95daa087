/* SPDX-License-Identifier: MIT */
/*
 * The verbs transport when things go wrong, against the libibverbs stand-in:
 * a rank killed mid-collective, a write with a wrong R_Key, a queue pair
 * that falls into the error state, ranks calling different collectives;
 * every survivor must fail with an error naming a rank, within the deadline,
 * never hang. Also the registration cache (hits, and a freed buffer never
 * reused through its old registration) and the host with no RDMA device,
 * where verbs steps aside for tcp and says why in one line.
 */
#include <check.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/handle.h"
#include "core/clock.h"
#include "tests/lib/harness.h"
#include "transports/verbs/verbs.h"

#define DEADLINE_S 20

/* An entry point of the stand-in that tutti loaded. */
static void *fake_sym(const char *name)
{
    void *h = dlopen(getenv("TUTTI_IBVERBS_LIB"), RTLD_NOW | RTLD_NOLOAD);
    return h ? dlsym(h, name) : NULL;
}

static void verbs_env(void)
{
    tt_fabric_begin("vfault");
    setenv("TUTTI_TRANSPORTS", "verbs,tcp", 1);
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_IB_HCA", "fakeib0", 1);
    setenv("TUTTI_IB_SLOT_BYTES", "8K", 1);
    setenv("TUTTI_IB_ZCOPY_BYTES", "16K", 1);
    /* 4.096 us x 2^12 = 17 ms per retry, 4 tries: a lost peer in ~70 ms. */
    setenv("TUTTI_IB_TIMEOUT", "12", 1);
    setenv("TUTTI_IB_RETRY_CNT", "3", 1);
    tt_set_ranks_per_node(1);
}

static void verbs_env_end(void)
{
    tt_set_ranks_per_node(0);
    tt_fabric_end();
    unsetenv("TUTTI_TIMEOUT");
}

/* Sends rank 0's n floats (value v) to rank 1, which checks them. */
static int pass_buffer(tutti_comm_t comm, int r, float *buf, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = r == 0 ? v + (float)(i % 7) : -1.0f;
    tutti_status_t st = r == 0 ? tutti_send(buf, n, TUTTI_FP32, 1, comm, NULL)
                               : tutti_recv(buf, n, TUTTI_FP32, 0, comm, NULL);
    TT_FAIL_IF(st, "rank %d: send/recv: %s", r, tutti_comm_last_error(comm));
    for (size_t i = 0; r == 1 && i < n; i++)
        TT_FAIL_IF(buf[i] != v + (float)(i % 7), "rank 1: element %zu is %g, not %g", i, buf[i],
                   v + (float)(i % 7));
    return 0;
}

static int cache_body(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    void (*release)(void *, size_t) = (void (*)(void *, size_t))fake_sym("ttfake_release_pages");
    TT_FAIL_IF(!release, "rank %d: not on the stand-in", r);
    size_t n = 1 << 20, bytes = n * sizeof(float);
    float *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tt_verbs_cache_stats_t s0, s1, s2;
    TT_FAIL_IF(pass_buffer(comm, r, buf, n, 1), "first pass");
    TT_FAIL_IF(tt_comm_lookup(comm, NULL)->peers[1 - r].ops != &tt_verbs_ops, "rank %d: the pair is not on verbs",
               r);
    tt_verbs_cache_stats(&s0);
    TT_FAIL_IF(pass_buffer(comm, r, buf, n, 2), "second pass");
    tt_verbs_cache_stats(&s1);
    if (s0.watching)
        TT_FAIL_IF(s1.hits <= s0.hits || s1.misses != s0.misses,
                   "rank %d: the same buffer again was not a cache hit (%llu/%llu hits, %llu/%llu misses)", r,
                   (unsigned long long)s0.hits, (unsigned long long)s1.hits, (unsigned long long)s0.misses,
                   (unsigned long long)s1.misses);
    else
        fprintf(stderr, "rank %d: userfaultfd is not allowed here: no cache, registration per message\n", r);
    /* New memory takes the buffer's place at the same address (MAP_FIXED
     * unmaps the old pages in the same step); a registration would still
     * hold the old pages. */
    float *again = mmap(buf, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    TT_FAIL_IF(again != buf, "could not map the same address again");
    release(buf, bytes);
    tt_verbs_cache_stats(&s2);
    TT_FAIL_IF(s0.watching && s2.invalidated == s1.invalidated,
               "rank %d: the unmapped buffer was not noticed", r);
    TT_FAIL_IF(pass_buffer(comm, r, buf, n, 3), "pass after unmap and map");
    /* The same through malloc and free (glibc maps large blocks). */
    float *heap = malloc(bytes);
    TT_FAIL_IF(pass_buffer(comm, r, heap, n, 4), "pass through a malloc'd buffer");
    release(heap, bytes); /* as above; told first, since heap is not ours after free */
    free(heap);
    heap = malloc(bytes);
    TT_FAIL_IF(pass_buffer(comm, r, heap, n, 5), "pass through a buffer malloc'd after free");
    free(heap);
    munmap(buf, bytes);
    return 0;
}

START_TEST(registration_cache_hits_and_forgets_freed_memory)
{
    verbs_env();
    tt_run_ranks(2, cache_body, NULL, 60);
    verbs_env_end();
}
END_TEST

#define VICTIM 2

static int allreduce_until_failure(tutti_comm_t comm, int r, int p, void *argp)
{
    int *ready = argp;
    (void)p;
    size_t n = 4 << 20;
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    for (int iter = 0; iter < 100000; iter++) {
        int64_t t0 = tt_now_ms();
        tutti_status_t st = tutti_allreduce(a, b, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
        if (iter == 0)
            __atomic_add_fetch(ready, 1, __ATOMIC_SEQ_CST);
        if (st == TUTTI_SUCCESS)
            continue;
        int64_t waited = tt_now_ms() - t0;
        const char *msg = tutti_comm_last_error(comm);
        int ok = st == TUTTI_ERR_PEER_FAILED && tt_named_as_dead(msg, VICTIM) && waited < DEADLINE_S * 1000;
        if (!ok)
            fprintf(stderr, "rank %d: %s after %lld ms: %s\n", r, tutti_status_name(st), (long long)waited,
                    msg);
        if (tutti_allreduce(a, b, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL) != TUTTI_ERR_ABORTED)
            ok = 0;
        tutti_comm_abort(comm);
        return ok ? -1 : 3;
    }
    return 4;
}

START_TEST(rank_killed_mid_allreduce_is_named_by_every_survivor)
{
    verbs_env();
    int *ready = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pids[4];
    int codes[4];
    tt_spawn_ranks(4, allreduce_until_failure, ready, pids);
    while (__atomic_load_n(ready, __ATOMIC_SEQ_CST) < 4)
        usleep(1000);
    usleep(20000);
    int64_t killed_at = tt_now_ms();
    kill(pids[VICTIM], SIGKILL);
    ck_assert(!tt_wait_ranks(4, pids, codes, 2 * DEADLINE_S));
    int64_t took = tt_now_ms() - killed_at;
    for (int r = 0; r < 4; r++)
        if (r != VICTIM)
            ck_assert_msg(codes[r] == 0, "survivor %d exited %d", r, codes[r]);
    ck_assert_int_eq(codes[VICTIM], 128 + SIGKILL);
    ck_assert_msg(took < DEADLINE_S * 1000, "survivors took %lld ms", (long long)took);
    munmap(ready, 4096);
    verbs_env_end();
}
END_TEST

/* Runs fn's fault in rank 1 during a large all-reduce; every rank must
 * fail, quickly, and rank 1's log must name the NIC's cause (want). */
typedef struct {
    const char *what;
    int *done; /* shared: ranks through the first all-reduce */
} fault_arg_t;

static int fault_body(tutti_comm_t comm, int r, int p, void *argp)
{
    const fault_arg_t *arg = argp;
    const char *what = arg->what;
    size_t n = 1 << 20;
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    tutti_status_t st = tutti_allreduce(a, b, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    TT_FAIL_IF(st, "rank %d: the first all-reduce failed: %s", r, tutti_comm_last_error(comm));
    /* Rank 1's last writes of that call may still be on the way: the fault
     * waits until every rank has it whole. */
    __atomic_add_fetch(arg->done, 1, __ATOMIC_SEQ_CST);
    while (r == 1 && __atomic_load_n(arg->done, __ATOMIC_SEQ_CST) < p)
        usleep(500);
    char path[] = "/tmp/tutti-verbs-log-XXXXXX";
    int saved = -1;
    if (r == 1) {
        int (*inject)(const char *) = (int (*)(const char *))fake_sym("ttfake_inject");
        TT_FAIL_IF(!inject || inject(what), "rank 1: cannot inject %s", what);
        int fd = mkstemp(path);
        fflush(stderr);
        saved = dup(2);
        dup2(fd, 2);
        close(fd);
    }
    int64_t t0 = tt_now_ms();
    for (int i = 0; i < 20 && !st; i++)
        st = tutti_allreduce(a, b, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    int64_t waited = tt_now_ms() - t0;
    char log[4096] = "";
    if (r == 1) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(log, 1, sizeof log - 1, f) : 0;
        log[got] = '\0';
        if (f)
            fclose(f);
        unlink(path);
    }
    const char *want = strcmp(what, "bad_rkey") == 0 ? "remote access error" : "Flushed";
    int ok = (st == TUTTI_ERR_PEER_FAILED || st == TUTTI_ERR_ABORTED) && waited < DEADLINE_S * 1000 &&
             strstr(tutti_comm_last_error(comm), "rank ") && (r != 1 || strstr(log, want));
    if (!ok)
        fprintf(stderr, "rank %d: %s after %lld ms: %s\n%s", r, tutti_status_name(st), (long long)waited,
                tutti_comm_last_error(comm), log);
    tutti_comm_abort(comm);
    free(a);
    free(b);
    return ok ? -1 : 3;
}

static void run_fault(const char *what)
{
    fault_arg_t arg = {what, mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)};
    verbs_env();
    tt_run_ranks(3, fault_body, &arg, 2 * DEADLINE_S);
    verbs_env_end();
    munmap(arg.done, 4096);
}

START_TEST(write_with_a_wrong_rkey_fails_the_call_everywhere)
{
    run_fault("bad_rkey");
}
END_TEST

START_TEST(queue_pair_in_error_fails_the_call_everywhere)
{
    run_fault("qp_error");
}
END_TEST

static int mismatching_calls(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    /* Small against large: one sends in slots, the other expects an RTR. */
    size_t n = r == 0 ? 100000 : 1000;
    float *x = calloc(n, sizeof(float)), *y = calloc(n, sizeof(float));
    tutti_status_t st = tutti_allreduce(x, y, n, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    const char *msg = tutti_comm_last_error(comm);
    int ok = (st == TUTTI_ERR_MISMATCH && strstr(msg, r == 0 ? "count 1000," : "count 100000,")) ||
             st == TUTTI_ERR_PEER_FAILED || st == TUTTI_ERR_ABORTED;
    if (!ok)
        fprintf(stderr, "rank %d: %s: %s\n", r, tutti_status_name(st), msg);
    tutti_comm_abort(comm);
    free(x);
    free(y);
    return ok ? -1 : 3;
}

START_TEST(mismatched_calls_are_reported_not_hung)
{
    verbs_env();
    tt_run_ranks(2, mismatching_calls, NULL, 2 * DEADLINE_S);
    verbs_env_end();
}
END_TEST

static int rank1_never_calls(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)p;
    (void)arg;
    float x = 1, y;
    if (r == 1) {
        sleep(4); /* alive, its NIC answering, but silent */
        tutti_comm_abort(comm);
        return -1;
    }
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_allreduce(&x, &y, 1, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    int64_t waited = tt_now_ms() - t0;
    const char *msg = tutti_comm_last_error(comm);
    int ok = st == TUTTI_ERR_TIMEOUT && waited >= 1500 && waited < 3900 && strstr(msg, "rank 1");
    if (!ok)
        fprintf(stderr, "rank %d: %s after %lld ms: %s\n", r, tutti_status_name(st), (long long)waited, msg);
    tutti_comm_abort(comm);
    return ok ? -1 : 3;
}

/* Keepalive writes are answered by a live peer's NIC: they are no progress,
 * so a silent peer still runs into TUTTI_TIMEOUT. */
START_TEST(silent_peer_times_out_naming_it)
{
    verbs_env();
    setenv("TUTTI_TIMEOUT", "2", 1);
    tt_run_ranks(2, rank1_never_calls, NULL, 30);
    verbs_env_end();
}
END_TEST

static int count_lines(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* No device: verbs steps aside, tcp carries the job, one line says why. */
START_TEST(no_device_means_tcp_and_one_line_why)
{
    char out[16384], args[1024], dir[] = "/tmp/tutti-verbs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *builddir = getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".";
    snprintf(args, sizeof args, "-n 2 --nodes 2 '%s/tests/lib/rank-helper' check '%s'", builddir, dir);
    tt_fabric_begin("nodev");
    setenv("TTFAKE_DEVICES", "", 1);
    setenv("TUTTI_LOG", "info", 1);
    setenv("TUTTI_LOG_SUBSYS", "net", 1);
    unsetenv("TUTTI_TRANSPORTS"); /* the default list, verbs in it */
    ck_assert_int_eq(tt_run_tool("tutti-run", args, out, sizeof out), 0);
    ck_assert_int_eq(count_lines(out, " of 2 ok"), 2);
    ck_assert_int_eq(count_lines(out, "verbs: not used: no RDMA device (libibverbs lists none)"), 2);
    ck_assert_int_eq(count_lines(out, "verbs: not used"), 2); /* once per rank */
    ck_assert_int_eq(tt_run_tool("tutti-info", "-l", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "not offered here: no RDMA device"));
    /* The real rdma-core, on a machine with no RDMA driver loaded. */
    struct stat st;
    if (stat("/sys/class/infiniband", &st) == 0) {
        fprintf(stderr, "this machine has RDMA devices: skipping the check without the stand-in\n");
    } else {
        unsetenv("TUTTI_IBVERBS_LIB");
        ck_assert_int_eq(tt_run_tool("tutti-run", args, out, sizeof out), 0);
        ck_assert_int_eq(count_lines(out, " of 2 ok"), 2);
        ck_assert_int_eq(count_lines(out, "verbs: not used: no RDMA device"), 2);
    }
    unsetenv("TUTTI_LOG");
    unsetenv("TUTTI_LOG_SUBSYS");
    unsetenv("TTFAKE_DEVICES");
    tt_fabric_end();
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The #iterations of a perftest-style table's row for BYTES, or -1. */
static long row_iterations(const char *out, unsigned long bytes)
{
    char head[32];
    snprintf(head, sizeof head, "\n %lu ", bytes);
    const char *row = strstr(out, head);
    unsigned long b;
    long iters;
    return row && sscanf(row, " %lu %ld", &b, &iters) == 2 ? iters : -1;
}

/* tutti-bw-verbs over the stand-in: perftest's columns, one row a size. */
START_TEST(bandwidth_tool_prints_perftest_columns)
{
    char out[16384], args[1024];
    const char *builddir = getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".";
    tt_fabric_begin("bwtool");
    unsetenv("TUTTI_TRANSPORTS");
    snprintf(args, sizeof args, "-n 2 --nodes 2 '%s/tutti-bw-verbs' -b 4K -e 64K -f 16 -n 50 -w 5 -B 2",
             builddir);
    ck_assert_int_eq(tt_run_tool("tutti-run", args, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "over tutti's verbs transport"));
    ck_assert_ptr_nonnull(strstr(out, "#bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]"));
    ck_assert_ptr_nonnull(strstr(out, "\n 4096       100 "));
    ck_assert_ptr_nonnull(strstr(out, "\n 65536      100 "));
    snprintf(args, sizeof args, "-n 2 --nodes 2 '%s/tutti-bw-verbs' -b 8 -e 8 -n 20 -w 2 --lat", builddir);
    ck_assert_int_eq(tt_run_tool("tutti-run", args, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "t_typical[usec]"));
    ck_assert_ptr_nonnull(strstr(out, "\n 8       20 "));
    /* --duration: batches sized to the link, as perftest's -D, both ways. */
    for (int lat = 0; lat < 2; lat++) {
        snprintf(args, sizeof args, "-n 2 --nodes 2 '%s/tutti-bw-verbs' -b 4K -e 64K -f 16 --duration 0.2%s",
                 builddir, lat ? " --lat" : "");
        ck_assert_int_eq(tt_run_tool("tutti-run", args, out, sizeof out), 0);
        ck_assert_msg(strstr(out, "about 0.2 s per size (--duration)"), "%s", out);
        ck_assert_msg(strstr(out, lat ? "t_typical[usec]" : "BW average[MB/sec]"), "%s", out);
        ck_assert_msg(row_iterations(out, 4096) > 0 && row_iterations(out, 65536) > 0, "%s", out);
    }
    /* A transport that cannot work here is refused with its reason. */
    setenv("TTFAKE_DEVICES", "", 1);
    ck_assert_int_eq(tt_run_tool("tutti-bw-verbs", "-b 8 -e 8", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "verbs is not offered here: no RDMA device"));
    unsetenv("TTFAKE_DEVICES");
    tt_fabric_end();
}
END_TEST

/* libtutti.so must load where rdma-core is absent: no libibverbs among its
 * dependencies and no ibv_ symbol left for the loader to find. */
START_TEST(library_does_not_link_libibverbs)
{
    char cmd[1024], line[512];
    const char *builddir = getenv("TT_BUILDDIR") ? getenv("TT_BUILDDIR") : ".";
    snprintf(cmd, sizeof cmd,
             "readelf -dW '%s/.libs/libtutti.so' && nm -D --undefined-only '%s/.libs/libtutti.so'", builddir,
             builddir);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    int needed = 0, ibv = 0;
    while (fgets(line, sizeof line, f)) {
        needed += strstr(line, "(NEEDED)") != NULL;
        ck_assert_msg(!strstr(line, "ibverbs"), "libtutti.so depends on libibverbs: %s", line);
        ibv += strstr(line, " ibv_") != NULL;
    }
    ck_assert_int_eq(pclose(f), 0);
    ck_assert_int_gt(needed, 0); /* the listing was read */
    ck_assert_int_eq(ibv, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("verbs-fault");
    TCase *tc = tcase_create("verbs-fault");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, registration_cache_hits_and_forgets_freed_memory);
    tcase_add_test(tc, rank_killed_mid_allreduce_is_named_by_every_survivor);
    tcase_add_test(tc, write_with_a_wrong_rkey_fails_the_call_everywhere);
    tcase_add_test(tc, queue_pair_in_error_fails_the_call_everywhere);
    tcase_add_test(tc, mismatched_calls_are_reported_not_hung);
    tcase_add_test(tc, silent_peer_times_out_naming_it);
    tcase_add_test(tc, no_device_means_tcp_and_one_line_why);
    tcase_add_test(tc, bandwidth_tool_prints_perftest_columns);
    tcase_add_test(tc, library_does_not_link_libibverbs);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
