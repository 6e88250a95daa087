/* SPDX-License-Identifier: MIT */
/*
 * tutti-bw's parts: the job (every rank runs the same sequence of steps;
 * rank 0 prints), one transport's connections, and the sections that
 * measure over them (matrices, sweeps, the verdict, the fit, the GPU rows).
 */
#ifndef TT_BW_H
#define TT_BW_H

#include <stdio.h>

#include "bw_machine.h"
#include "bw_pair.h"
#include "comm/comm.h"
#include "perf/common/json_out.h"
#include "tutti.h"

typedef struct {
    int matrix, sweep, fit; /* sections to run */
    int json, csv;
    char transports[256]; /* -t: comma-separated names, or "all" */
    uint64_t size;        /* bandwidth matrices' message size */
    uint64_t lat_size;    /* latency matrices' message size */
    uint64_t minb, maxb;  /* sweeps */
    double factor;
    tt_repeat_rule_t rule;
    char fit_file[512]; /* --fit writes the tuning file here */
    uint64_t fit_max;   /* largest collective size --fit measures */
    int fit_reps;       /* repeats of each algorithm and size under --fit */
} tt_bw_opts_t;

typedef struct tt_bw_job {
    const tt_bw_opts_t *o;
    tutti_comm_t ctl; /* the job's communicator (default transports): coordination */
    tt_comm_t *in;    /* the communicator behind the handle ctl: the fields read here */
    int rank, nranks;
    int text;       /* this rank prints the tables (rank 0 without --json/--csv) */
    tt_json_t json; /* rank 0 with --json: the document */
    double memcpy_gbps;
    tt_bw_machine_t machine;
    double others_cpus; /* CPUs other processes kept busy during this transport; < 0: unknown */
    int status;         /* the exit status so far */
} tt_bw_job_t;

/* One transport's connections between every pair it reaches. */
typedef struct {
    const char *name;
    tutti_comm_t comm;
    tt_comm_t *in; /* the communicator behind the handle comm: its connections */
    int n;
    int *uses;      /* [a * n + b]: a and b are connected by this transport */
    char (*cls)[8]; /* [a * n + b]: X, NODE, SYS (other NUMA node) or NET (other host) */
    char *sendbuf, *recvbuf;
    size_t buf_bytes;
    int force_yield; /* wait by giving the CPU away even when ranks have CPUs of their own */
} tt_bw_tp_t;

/* Connects every rank over the transport called name (rank pairs it
 * cannot reach go over tcp and are not measured). TUTTI_ERR_UNSUPPORTED
 * with why filled when it is absent, serves no host memory or failed on
 * some rank; every rank returns the same status. */
tutti_status_t tt_bw_tp_open(tt_bw_job_t *job, const char *name, tt_bw_tp_t *tp, char *why, size_t len);
void tt_bw_tp_close(tt_bw_tp_t *tp);
/* Connects every pair of in's ranks (all of them call it). */
tutti_status_t tt_bw_connect_all(tt_comm_t *in);
/* A communicator over the job's ranks made while the environment variable
 * var is value (var NULL: the job's environment as it is); made on every
 * rank or on none (then TUTTI_ERR_UNSUPPORTED with why filled). */
tutti_status_t tt_bw_comm_with(tt_bw_job_t *job, const char *var, const char *value, int64_t timeout_ms,
                               tutti_comm_t *out, char *why, size_t len);

/* Every rank measures a over b with kind and bytes (or waits while a pair it
 * is not in does); rank 0's *res gets the timer's result and *valid says
 * whether the pair was measured. */
tutti_status_t tt_bw_cell(tt_bw_job_t *job, tt_bw_tp_t *tp, int a, int b, tt_bw_kind_t kind, size_t bytes,
                          tt_bw_result_t *res, int *valid);
/* The first pair a < b of each link class the transport serves; count returned. */
int tt_bw_class_pairs(const tt_bw_tp_t *tp, int *as, int *bs, int max);
/* Bytes as "4 MiB", "512 B". */
void tt_bw_format_bytes(size_t b, char *out, size_t len);

/* The sections; each is called by every rank and returns a status. */
/* The bandwidth one link class reached: a figure a table shows (which one
 * in from), its repeats' cv, at which size. */
typedef struct {
    int a, b;
    double gbps, cv;
    size_t bytes;
    char from[96];
} tt_bw_reached_t;
#define TT_BW_MAX_CLASSES 8

/* Each fills reached[] (rank 0) with one entry per link class and its count. */
tutti_status_t tt_bw_matrices(tt_bw_job_t *job, tt_bw_tp_t *tp, tt_bw_reached_t *reached, int *nreached);
tutti_status_t tt_bw_sweeps(tt_bw_job_t *job, tt_bw_tp_t *tp, tt_bw_reached_t *reached, int *nreached);
/* "Is this normal?" for the figure r of tp's link (rank 0 only): a
 * baseline measured the same way, the fraction of it and a one-line
 * verdict, or why there is none; JSON: an object in the current array. */
void tt_bw_verdict(tt_bw_job_t *job, const tt_bw_tp_t *tp, const tt_bw_reached_t *r);
tutti_status_t tt_bw_fit(tt_bw_job_t *job);
/* The GPU rows (host<->device, device<->device, peer copies) of rank 0's
 * GPUs, or one line saying why there are none. */
void tt_bw_gpu(tt_bw_job_t *job);

/* Memory copy bandwidth of one CPU thread on buffers of bytes, GB/s (best of 5). */
double tt_bw_memcpy_gbps(size_t bytes);

#endif
