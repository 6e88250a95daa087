/* SPDX-License-Identifier: MIT */
/*
 * What chaos's driver (chaos.c) and the processes it forks (chaos_rank.c)
 * share: the schedule's state in memory both map, the records of the
 * communicators each process held, and what a process's end is called.
 */
#ifndef TT_TEST_CHAOS_H
#define TT_TEST_CHAOS_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "tutti.h"

#define MAXW 16 /* processes of one schedule: the first ranks and newcomers */
#define MAXREC 512
#define STEPS 8
#define SLOW_MS 1500 /* TUTTI_TIMEOUT is 1 s */

enum { RUNNING, DONE, EXCLUDED, GAVE_UP, WRONG, NOT_JOINED, CRASHED, KILLED };

typedef struct {
    uint64_t id, parent; /* the communicator's name, and the one it came from (0: init) */
    int world, rank, size, step;
    int synced;          /* its members all-gathered who they are: order holds them all */
    int16_t order[MAXW]; /* the process at each rank (-1: not known) */
} rec_t;

typedef struct {
    uint64_t seed;
    int nodes;          /* ranks per simulated host; 0: one host */
    int nworld;         /* processes started */
    int step_now[MAXW]; /* each process's step */
    int slow_ms[MAXW];  /* driver -> process: be busy that long before the next step */
    int state[MAXW];
    char why[MAXW][200];
    int grow_seq, grow_served, grow_size; /* a grow asks the driver for a newcomer */
    tutti_unique_id_t grow_id;
    int nrec;
    rec_t rec[MAXREC];
} chaos_t;

/* The schedule's state, shared (MAP_SHARED) by the driver and every process. */
extern chaos_t *C;

static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Forks process w of the schedule: rank `rank` of nranks joining uid, or a
 * newcomer to a grow, from step on; the driver gets its pid. */
pid_t chaos_start(int w, int nranks, int rank, const tutti_unique_id_t *uid, int step);

#endif
