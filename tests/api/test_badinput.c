/* SPDX-License-Identifier: MIT */
/*
 * Bad arguments: each returns its documented status, the last error names
 * the argument, and the communicator still works for valid calls afterwards.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/harness.h"

static int expect(tutti_comm_t comm, tutti_status_t got, tutti_status_t want, const char *word,
                  const char *what)
{
    const char *msg = tutti_comm_last_error(comm);
    if (got != want || !strstr(msg, word)) {
        fprintf(stderr, "%s: got %s \"%s\", want %s naming \"%s\"\n", what, tutti_status_name(got), msg,
                tutti_status_name(want), word);
        return 1;
    }
    return 0;
}

static int bad_calls(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    float buf[64] = {0}, other[64] = {0};
    int bad = 0;
    tutti_status_t E = TUTTI_ERR_INVALID_ARG;
    bad |= expect(comm, tutti_allreduce(NULL, other, 10, TUTTI_FP32, TUTTI_SUM, comm, NULL), E, "sendbuf",
                  "NULL sendbuf");
    bad |= expect(comm, tutti_allreduce(buf, NULL, 10, TUTTI_FP32, TUTTI_SUM, comm, NULL), E, "recvbuf",
                  "NULL recvbuf");
    bad |= expect(comm, tutti_allreduce(buf, other, 10, (tutti_dtype_t)99, TUTTI_SUM, comm, NULL), E, "dtype",
                  "dtype 99");
    bad |= expect(comm, tutti_allreduce(buf, other, 10, (tutti_dtype_t)-1, TUTTI_SUM, comm, NULL), E, "dtype",
                  "dtype -1");
    bad |= expect(comm, tutti_allreduce(buf, other, 10, TUTTI_FP32, (tutti_op_t)17, comm, NULL), E, "op",
                  "op 17");
    bad |= expect(comm, tutti_allreduce(buf, other, SIZE_MAX / 2, TUTTI_FP32, TUTTI_SUM, comm, NULL), E,
                  "count", "count overflow");
    bad |= expect(comm, tutti_alltoall(buf, other, SIZE_MAX / 8 / (size_t)p + 1, TUTTI_FP64, comm, NULL), E,
                  "count", "alltoall count * nranks overflow");
    bad |=
        expect(comm, tutti_broadcast(buf, other, 4, TUTTI_FP32, p, comm, NULL), E, "root", "root = nranks");
    bad |= expect(comm, tutti_reduce(buf, other, 4, TUTTI_FP32, TUTTI_SUM, -1, comm, NULL), E, "root",
                  "root -1");
    bad |= expect(comm, tutti_send(buf, 4, TUTTI_FP32, p, comm, NULL), E, "peer", "send peer = nranks");
    bad |= expect(comm, tutti_send(buf, 4, TUTTI_FP32, r, comm, NULL), E, "peer", "send to self");
    bad |= expect(comm, tutti_recv(buf, 4, TUTTI_FP32, -2, comm, NULL), E, "peer", "recv peer -2");
    /* -1 is no "any source": that is tutti_recv_any. Every negative peer is refused alike. */
    bad |= expect(comm, tutti_recv(buf, 4, TUTTI_FP32, -1, comm, NULL), E, "peer", "recv peer -1");
    bad |= expect(comm, tutti_recv(buf, 4, TUTTI_FP32, INT32_MIN, comm, NULL), E, "peer", "recv peer INT_MIN");
    bad |= expect(comm, tutti_send(buf, 4, TUTTI_FP32, -1, comm, NULL), E, "peer", "send peer -1");
    bad |= expect(comm, tutti_allreduce(buf, buf + 1, 10, TUTTI_FP32, TUTTI_SUM, comm, NULL), E, "overlap",
                  "allreduce overlapping by one element");
    bad |=
        expect(comm, tutti_reduce_scatter(buf, buf + (size_t)r * 4 + 1, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL),
               E, "overlap", "reduce_scatter recvbuf not at sendbuf + rank * recvcount");
    bad |= expect(comm, tutti_allgather(buf + (size_t)r * 2 + 1, buf, 2, TUTTI_FP32, comm, NULL), E,
                  "overlap", "allgather sendbuf not at recvbuf + rank * sendcount");
    bad |= expect(comm, tutti_alltoall(buf, buf + 2, 2, TUTTI_FP32, comm, NULL), E, "overlap",
                  "alltoall overlap");
    bad |= expect(comm, tutti_allreduce(buf, other, 4, TUTTI_FP32, TUTTI_SUM, comm, (tutti_stream_t)buf),
                  TUTTI_ERR_UNSUPPORTED, "stream", "a stream without the device path");
    bad |= expect(comm, tutti_comm_rank(comm, NULL), E, "rank", "NULL rank output");
    bad |= expect(comm, tutti_comm_size(comm, NULL), E, "size", "NULL size output");
    bad |= expect(comm, tutti_comm_id(comm, NULL), E, "id: NULL", "NULL id output");
    bad |= expect(NULL, tutti_allreduce(buf, other, 4, TUTTI_FP32, TUTTI_SUM, NULL, NULL), E, "comm",
                  "NULL comm");
    /* count 0 needs no buffers */
    bad |= expect(comm, tutti_allreduce(NULL, NULL, 0, TUTTI_FP32, TUTTI_SUM, comm, NULL), TUTTI_SUCCESS, "",
                  "count 0 with NULL buffers");

    /* The communicator still works: a real all-reduce, checked. */
    for (int i = 0; i < 64; i++)
        buf[i] = (float)(r + i);
    tutti_status_t st = tutti_allreduce(buf, other, 64, TUTTI_FP32, TUTTI_SUM, comm, NULL);
    if (st) {
        fprintf(stderr, "valid allreduce after bad calls failed: %s\n", tutti_comm_last_error(comm));
        return 1;
    }
    for (int i = 0; i < 64; i++)
        if (other[i] != (float)(p * i + p * (p - 1) / 2)) {
            fprintf(stderr, "valid allreduce after bad calls gave a wrong value at %d\n", i);
            return 1;
        }
    if (bad)
        return 1;

    /* A destroyed handle is rejected, not used. */
    if (tutti_comm_destroy(comm))
        return 1;
    if (expect(NULL, tutti_allreduce(buf, other, 4, TUTTI_FP32, TUTTI_SUM, comm, NULL), E, "destroyed",
               "destroyed communicator") ||
        expect(NULL, tutti_comm_destroy(comm), E, "destroyed", "double destroy"))
        return 1;
    return -1;
}

START_TEST(bad_arguments_are_named_and_harmless)
{
    tt_run_ranks(2, bad_calls, NULL, 60);
    tt_run_ranks(3, bad_calls, NULL, 60);
}
END_TEST

START_TEST(bad_init_arguments)
{
    tutti_unique_id_t id;
    tutti_comm_t comm = (tutti_comm_t)&id;
    memset(&id, 0, sizeof id);
    ck_assert_int_eq(tutti_comm_init(&comm, 2, 0, &id, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_ptr_null(comm);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "id"));
    ck_assert_int_eq(tutti_get_unique_id(&id), TUTTI_SUCCESS);
    ck_assert_int_eq(tutti_comm_init(&comm, 0, 0, &id, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "nranks"));
    ck_assert_int_eq(tutti_comm_init(&comm, 2, 2, &id, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "rank"));
    ck_assert_int_eq(tutti_comm_init(NULL, 2, 0, &id, NULL), TUTTI_ERR_INVALID_ARG);
    ck_assert_int_eq(tutti_get_unique_id(NULL), TUTTI_ERR_INVALID_ARG);
    /* A one-rank communicator needs nobody else. */
    ck_assert_int_eq(tutti_comm_init(&comm, 1, 0, &id, NULL), TUTTI_SUCCESS);
    ck_assert_int_eq(tutti_comm_destroy(comm), TUTTI_SUCCESS);
}
END_TEST

START_TEST(malformed_variables_stop_init_with_a_clear_error)
{
    tutti_unique_id_t id;
    tutti_comm_t comm;
    ck_assert_int_eq(tutti_get_unique_id(&id), TUTTI_SUCCESS);
    setenv("TUTTI_SLICE_BYTES", "lots", 1);
    /* Logged once, under config, however the communicator is made. */
    char path[] = "/tmp/tutti-badinput-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    fflush(stderr);
    dup2(fd, 2);
    tutti_status_t st = tutti_comm_init(&comm, 1, 0, &id, NULL);
    tutti_status_t st_env = tutti_comm_init_env(&comm, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char log[4096];
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    ck_assert_int_eq(st, TUTTI_ERR_CONFIG);
    ck_assert_int_eq(st_env, TUTTI_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "TUTTI_SLICE_BYTES=lots is not allowed"));
    const char *first = strstr(log, "error config: TUTTI_SLICE_BYTES=lots is not allowed");
    const char *rest = first ? strchr(first, '\n') : NULL;
    ck_assert_msg(rest && !strstr(rest, "TUTTI_SLICE_BYTES") && !strstr(log, " coll: "), "%s", log);
    unsetenv("TUTTI_SLICE_BYTES");
    setenv("TUTTI_TRANSPORTS", "carrier-pigeon", 1);
    ck_assert_int_eq(tutti_comm_init(&comm, 1, 0, &id, NULL), TUTTI_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "carrier-pigeon"));
    unsetenv("TUTTI_TRANSPORTS");
    /* Half a launcher's variables is an error naming both. */
    setenv("WORLD_SIZE", "2", 1);
    ck_assert_int_eq(tutti_comm_init_env(&comm, NULL), TUTTI_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "RANK=(unset) and WORLD_SIZE=2"));
    unsetenv("WORLD_SIZE");
    /* mpirun without PMIx must not start several unrelated single ranks. */
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    ck_assert_int_eq(tutti_comm_init_env(&comm, NULL), TUTTI_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(tutti_comm_last_error(NULL), "one of 4 ranks"));
    unsetenv("OMPI_COMM_WORLD_SIZE");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("badinput");
    TCase *tc = tcase_create("badinput");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_arguments_are_named_and_harmless);
    tcase_add_test(tc, bad_init_arguments);
    tcase_add_test(tc, malformed_variables_stop_init_with_a_clear_error);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
