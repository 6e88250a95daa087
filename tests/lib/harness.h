/* SPDX-License-Identifier: MIT */
/* Test helpers: run a function as N forked ranks of a real communicator. */
#ifndef TT_TEST_HARNESS_H
#define TT_TEST_HARNESS_H

#include <check.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/lib/exact.h"
#include "tutti.h"

/* Body of one rank: 0 on success (the harness then destroys comm), -1 on
 * success when the body destroyed or aborted comm itself, else a failure code. */
typedef int (*tt_rank_fn)(tutti_comm_t comm, int rank, int nranks, void *arg);

/*
 * Forks nranks processes that join one communicator (with the TUTTI_*
 * environment as set by the caller) and run fn. Fails the test if a rank
 * fails, and kills every rank that outlives timeout_s. Skips the case where
 * /dev/shm has no room for the ranks' shm segments.
 */
void tt_run_ranks(int nranks, tt_rank_fn fn, void *arg, int timeout_s);

/* With n > 0, later spawns tell rank r it runs on host r / n
 * (TUTTI_PARAM_NODE_ID), simulating several hosts; 0 turns it off. */
void tt_set_ranks_per_node(int n);

/* With ms > 0, later spawns create rank r's communicator with a timeout of
 * ms + r (TUTTI_PARAM_TIMEOUT_MS), a value no variable gives; 0 turns it
 * off. */
void tt_set_rank_timeout_ms(int64_t ms);

/* Same, but returns each rank's exit status in codes[] instead of failing;
 * the pids are written to pids[] before the ranks start their body. */
void tt_spawn_ranks(int nranks, tt_rank_fn fn, void *arg, pid_t *pids);
int tt_wait_ranks(int nranks, const pid_t *pids, int *codes, int timeout_s);

/* Runs the built tool (TT_BUILDDIR/tool) with args through the shell;
 * returns its exit status, its stdout and stderr in out. */
/* comm's size and this rank's place in it; -1 where the call fails (a
 * revoked, aborted or destroyed communicator). */
int tt_size_of(tutti_comm_t comm);
int tt_rank_of(tutti_comm_t comm);

int tt_run_tool(const char *tool, const char *args, char *out, size_t len);

/* Ends the running test case as skipped, saying why it cannot run here
 * (what the machine lacks and how to get it). */
void tt_skip(const char *why);

/* Runs a Check suite with TAP output on stdout (a case ended by tt_skip
 * written as skipped); returns the exit status. */
int tt_run_suite(Suite *s);

/* A test case of its own: name, the test, and its loop range (to > from
 * for a loop test, else 0, 0). */
typedef struct {
    const char *name;
    const TTest *test;
    int from, to;
} tt_case_t;

/* Runs the cases as a suite, each in a TCase of its name with timeout_s, so
 * that CK_RUN_CASE=name runs one case alone; with "--list" as the only
 * argument, prints the names instead, one a line, and runs nothing. */
int tt_run_cases(const char *suite, const tt_case_t *cases, size_t n, int timeout_s, int argc, char **argv);

/* Whether an error message's "rank(s) A, B died" list holds rank. Over tcp
 * a rank that aborted may be listed there too, since its notice can be lost. */
int tt_named_as_dead(const char *msg, int rank);

/* Key tag of the job the last tt_spawn_ranks started. */
uint64_t tt_last_job_tag(void);
/* Number of /dev/shm segments still named for the job with this key tag. */
int tt_count_job_segments(uint64_t tag);

/*
 * Verbs tests: a fabric of the libibverbs stand-in (tests/fakes/fakeverbs) of its
 * own for this process and its children (TTFAKE_FABRIC), loaded by tutti
 * through TUTTI_IBVERBS_LIB; tt_fabric_end removes its shared segments.
 */
void tt_fabric_begin(const char *tag);
void tt_fabric_end(void);

#endif
