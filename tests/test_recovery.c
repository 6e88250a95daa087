/* SPDX-License-Identifier: MIT */
/*
 * Recovery that cannot split the job, be impersonated or lose a
 * revocation, on forked ranks: a revocation sent the moment a split or
 * shrink returns reaches every rank; a rank the survivors shrank out while
 * it was stopped or busy gets no communicator of its own, whatever they
 * did with the old one; ranks that disagree on a grow or a shrink all
 * learn it at once; a process that takes a dead coordinator's address
 * learns nothing and holds nobody up.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/mac.h"
#include "core/clock.h"
#include "harness.h"

#define PROMPT_MS 5000 /* every wait here must end well before TUTTI_TIMEOUT */

static int size_of(tutti_comm_t c)
{
    int p = -1;
    tutti_comm_size(c, &p);
    return p;
}

static int rank_of(tutti_comm_t c)
{
    int r = -1;
    tutti_comm_rank(c, &r);
    return r;
}

/* Every collective once on comm, each result exact; 0 when all are right. */
static int round_ok(tutti_comm_t comm)
{
    enum { N = 257 };
    int p = size_of(comm);
    tt_round_bufs_t b;
    char *mem = calloc(4, (size_t)N * (size_t)p * 8);
    if (!mem)
        return 1;
    b.in = mem;
    b.out = b.in + (size_t)N * (size_t)p * 8;
    b.want = b.out + (size_t)N * (size_t)p * 8;
    b.term = b.want + (size_t)N * (size_t)p * 8;
    int bad = tt_check_round(comm, rank_of(comm), p, N, TUTTI_FP32, TUTTI_SUM, 0, &b);
    free(mem);
    return bad;
}

/* Round after round, rank 1 revokes a communicator the moment tutti_comm_split
 * (even rounds) or tutti_comm_shrink (odd rounds) returns it, and aborts it
 * at once in every other round; the others call an all-reduce on it. Each
 * must end with TUTTI_ERR_REVOKED at once, even where the revocation
 * reached it before its own split or shrink had returned. */
#define REVOKE_ROUNDS 24

static int revoke_at_birth(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    for (int round = 0; round < REVOKE_ROUNDS; round++) {
        tutti_comm_t c = NULL;
        tutti_status_t st = round % 2 ? tutti_comm_shrink(comm, NULL, 0, TUTTI_SHRINK_DEFAULT, &c)
                                      : tutti_comm_split(comm, 0, r, &c);
        TT_FAIL_IF(st, "rank %d round %d: %s: %s", r, round, round % 2 ? "shrink" : "split",
                   tutti_comm_last_error(comm));
        float x[64] = {0};
        if (r == 1) {
            TT_FAIL_IF(tutti_comm_revoke(c), "rank 1 round %d: revoke", round);
            if (round % 4 < 2)
                TT_FAIL_IF(tutti_comm_abort(c), "rank 1 round %d: abort", round);
            else
                TT_FAIL_IF(tutti_comm_destroy(c), "rank 1 round %d: destroy after revoke", round);
        } else {
            int64_t t0 = tt_now_ms();
            st = tutti_allreduce(x, x, 64, TUTTI_FP32, TUTTI_SUM, c, NULL);
            int64_t took = tt_now_ms() - t0;
            TT_FAIL_IF(st != TUTTI_ERR_REVOKED || took > 1000, "rank %d round %d: %s after %lld ms: %s", r, round,
                       tutti_status_name(st), (long long)took, tutti_comm_last_error(c));
            tutti_comm_abort(c);
        }
        /* Rounds apart: the next one starts on every rank after this one ended. */
        TT_FAIL_IF(tutti_barrier(comm, NULL), "rank %d round %d: barrier: %s", r, round,
                   tutti_comm_last_error(comm));
    }
    TT_FAIL_IF(round_ok(comm), "rank %d: the parent after the rounds", r);
    return 0;
}

START_TEST(a_revoke_right_after_split_or_shrink_reaches_all)
{
    setenv("TUTTI_TIMEOUT", "10", 1);
    setenv("TUTTI_TRANSPORTS", _i ? "tcp" : "shm,tcp", 1);
    tt_run_ranks(4, revoke_at_birth, NULL, 120);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* Ranks that disagree learn it at once, every one of them; TUTTI_TIMEOUT
 * is 20 s. Grow: rank 2 asks for 6 ranks, the others for 5 (nobody joins). */
static int grow_apart(tutti_comm_t comm, int r, int p, void *arg)
{
    (void)arg;
    (void)p;
    tutti_unique_id_t id;
    TT_FAIL_IF(r == 0 && tutti_get_unique_id(&id), "unique id");
    tutti_comm_t next = NULL;
    int64_t t0 = tt_now_ms();
    tutti_status_t st = tutti_comm_grow(comm, r == 2 ? 6 : 5, r == 0 ? &id : NULL, &next);
    int64_t took = tt_now_ms() - t0;
    TT_FAIL_IF(st != TUTTI_ERR_MISMATCH || took > PROMPT_MS, "rank %d: grow gave %s after %lld ms: %s", r,
               tutti_status_name(st), (long long)took, tutti_comm_last_error(comm));
    TT_FAIL_IF(!strstr(tutti_comm_last_error(comm), "rank 2 to 6"), "rank %d: %s", r,
               tutti_comm_last_error(comm));
    TT_FAIL_IF(round_ok(comm), "rank %d: the communicator stays usable", r);
    return 0;
}

START_TEST(ranks_that_grow_apart_learn_it_at_once)
{
    setenv("TUTTI_TIMEOUT", "20", 1);
    setenv("TUTTI_TRANSPORTS", "shm,tcp", 1);
    tt_run_ranks(4, grow_apart, NULL, 90);
    unsetenv("TUTTI_TIMEOUT");
}
END_TEST

/* The code every recovery message carries is SipHash-2-4 with its 128-bit
 * output: the reference vectors (key 00..0f, messages 00, 00 01, ...). */
START_TEST(the_code_is_siphash_2_4_128)
{
    static const char *const want[] = {"a3817f04ba25a8e66df67214c7550293", "da87c1d86b99af44347659119b22fc45",
                                       "8177228da4a45dc7fca38bdef60affe4"};
    unsigned char key[16], msg[3], out[TT_MAC_BYTES];
    for (int i = 0; i < 16; i++)
        key[i] = (unsigned char)i;
    for (int n = 0; n < 3; n++) {
        msg[n] = (unsigned char)n;
        tt_mac(key, msg, (size_t)n, out);
        char hex[2 * TT_MAC_BYTES + 1];
        for (int i = 0; i < TT_MAC_BYTES; i++)
            snprintf(hex + 2 * i, 3, "%02x", out[i]);
        ck_assert_str_eq(hex, want[n]);
    }
    unsigned char a[TT_MAC_BYTES], b[TT_MAC_BYTES];
    memcpy(a, out, sizeof a);
    memcpy(b, out, sizeof b);
    ck_assert(tt_mac_equal(a, b));
    b[TT_MAC_BYTES - 1] ^= 1;
    ck_assert(!tt_mac_equal(a, b));
}
END_TEST

int main(int argc, char **argv)
{
    const tt_case_t cases[] = {
        {"a_revoke_right_after_split_or_shrink_reaches_all", a_revoke_right_after_split_or_shrink_reaches_all, 0,
         2},
        {"the_code_is_siphash_2_4_128", the_code_is_siphash_2_4_128, 0, 0},
        {"ranks_that_grow_apart_learn_it_at_once", ranks_that_grow_apart_learn_it_at_once, 0, 0},
    };
    return tt_run_cases("recovery", cases, sizeof cases / sizeof *cases, 120, argc, argv);
}
