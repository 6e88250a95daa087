/* SPDX-License-Identifier: MIT */
/*
 * tutti-perf's parts: its options (nccl-tests' flags), the exact inputs and
 * expected results its checks use, and its output (nccl-tests' table, CSV,
 * JSON, the header and the footer).
 */
#ifndef TT_PERF_H
#define TT_PERF_H

#include <stdint.h>
#include <stdio.h>

#include "perf/common/json_out.h"
#include "sched/schedule.h"
#include "tutti.h"

/* The collectives tutti-perf times, by nccl-tests' names; NULL for those
 * it does not. TT_COLL_SEND stands for nccl-tests' sendrecv: every rank
 * sends to the next and receives from the one before. */
extern const char *const perf_coll_names[TT_COLL_COUNT];

typedef struct {
    uint64_t minb, maxb, step;
    double factor;
    int iters, warmup, agg;      /* -n, -w, -m */
    int check;                   /* -c: checked iterations per size (0: none) */
    int cycles;                  /* -N: sweeps (0: until stopped) */
    int average;                 /* -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks */
    int blocking;                /* -z 0..3 */
    int cputime;                 /* -C: report the host's time to issue the calls */
    int proc_cpu;                /* --cpu: a column of the processor time each rank spends per call */
    int timestamps;              /* -S */
    int memreport;               /* -M */
    int unalign;                 /* -u: elements the buffers start past their allocation */
    int per_iter, per_iter_skip; /* -I, -K */
    int stream_null;             /* -y: device calls on the default stream */
    int timeout_s;               /* -T: 0 none */
    int ndtypes, nops;
    tutti_dtype_t dtypes[TUTTI_NUM_DTYPES]; /* -d, "all" gives every one */
    tutti_op_t ops[TUTTI_NUM_OPS];          /* -o */
    int root;                               /* -r; -1: every rank in turn */
    int coll;                               /* --collective; -1: all */
    int csv, json;                          /* --csv, --json: instead of the table */
    char json_file[512];                    /* -J: the JSON document, beside the table */
    int device;                             /* --memory device */
    int compress;                           /* --compress */
    tutti_compress_t how;
    double min_bw;    /* --min-bw or NCCL_TESTS_MIN_BW; 0: no gate */
    char program[64]; /* the name it was called by */
} perf_opts_t;

/* Parses argv into o; 0, 1 for -h (usage printed), 2 for a bad command line
 * (the reason printed). */
int perf_parse_args(int argc, char **argv, perf_opts_t *o);
/* -t and -g give the ranks of one process in nccl-tests; tutti runs one rank
 * per process, so without a launcher a product above 1 starts that many
 * ranks through tutti-run. Returns only when it did not exec. */
void perf_relaunch(int argc, char **argv, int ranks);

/* Exact inputs and results for the checks. */
typedef struct {
    int rank, nranks;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int root;
    size_t elem;
} perf_data_t;

void perf_fill_input(const perf_data_t *d, void *buf, size_t count, size_t first_index);
long long perf_count_wrong(const perf_data_t *d, const void *got, size_t count, int source_rank,
                           size_t first_index, int reduced);

/* What one size measured. */
typedef struct {
    double us, cpu_us, algbw, busbw;
    double proc_us;  /* processor time per call (user + system, every thread), the mean over ranks */
    long long wrong; /* -1: not checked */
    int skipped;
    double ratio;  /* --compress: dense bytes / bytes sent, on this rank */
    int have_iter; /* -I */
    double i_min, i_max, i_p50, i_p95, i_p99, i_cv, i_avg;
    int i_skipped;
} perf_result_t;

/* One line of output: a collective at a size, out of place and in place. */
typedef struct {
    tt_coll_t coll;
    size_t size, count;
    tutti_dtype_t dtype;
    tutti_op_t op;
    int root;
    const char *algorithm; /* the tuner's pick, or the forced algorithm */
    double predicted_us;   /* the cost model's time for it; < 0 when it cannot say */
} perf_row_t;

typedef struct {
    const perf_opts_t *o;
    tutti_comm_t comm;
    int rank, nranks;
    int text;       /* rank 0 prints nccl-tests' table */
    tt_json_t json; /* rank 0 with -J or --json */
    double busbw_sum[TT_COLL_COUNT];
    int busbw_n[TT_COLL_COUNT];
    long long wrong_total;
    char last_algorithms[512];
} perf_out_t;

/* Rank 0: the header; rank_lines: one "#  Rank ..." line per rank. */
typedef struct {
    perf_out_t out;
    const perf_opts_t *o;
    tutti_comm_t comm;
    int rank, nranks;
    perf_data_t d;             /* the dtype, op and root of the current sweep */
    char *send, *recv;         /* what the collectives get: host, or GPU with --memory device */
    char *img_send, *img_recv; /* host images the checks fill and read (send/recv for host) */
    void *dev_send, *dev_recv; /* the GPU allocations (send/recv sit unalign elements in) */
    size_t buf_bytes;
    void *stream;        /* --memory device; NULL for host memory or -y 1 */
    double *iter_us;     /* -I: one time per iteration */
    tutti_ef_state_t ef; /* --compress: error feedback for the current size */
    size_t ef_count;
} perf_ctx_t;

/* Times coll on n elements (size_bytes in all), out of place or in place,
 * and checks it as the options say. */
tutti_status_t perf_measure(perf_ctx_t *c, tt_coll_t coll, size_t n, size_t size_bytes, int in_place,
                            perf_result_t *res);

void perf_print_header(perf_out_t *out, const char *const *rank_lines);
/* Before a sweep's rows: algorithms says which algorithm serves which
 * sizes (printed when it changed); columns: print the column heads too. */
void perf_print_table_head(perf_out_t *out, tt_coll_t coll, const char *algorithms, int columns);
void perf_print_row(perf_out_t *out, const perf_row_t *row, const perf_result_t res[2]);
/* The footer; returns 1 when the bandwidth gate failed. */
int perf_print_footer(perf_out_t *out, double peak_rss_mib);
/* Writes the -J document (rank 0); 0 or -1. */
int perf_write_json(perf_out_t *out);

#endif
