/* SPDX-License-Identifier: MIT */
/*
 * The compressed all-reduce's GPU path (src/compress/allreduce_gpu.c) with
 * its kernels on the kernel stand-in, against the CPU path on host buffers,
 * bit for bit: results, worker and server errors, over several calls, on
 * real ranks, for ordinary gradients and for ones with NaNs, infinities
 * and extremes. Each rank runs the call as the device queue would: the plan
 * and its spans (tt_compress_layout), the kernels before, the spans to
 * the host, the proxy's exchange (tt_compress_exchange), the spans back,
 * the kernels after. User buffers sit at every offset, misaligned to their
 * element too. Part of test-kernels-cpu.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/handle.h"
#include "compress/allreduce_gpu.h"
#include "core/half.h"
#include "tests/cuda/kernels_cpu.h"

typedef struct {
    tutti_compress_t how;
    tt_cpath_t path; /* the one the plan must pick (dense too where top-k would cost more) */
    const char *name;
} scheme_t;

static const scheme_t schemes[] = {
    {{.kind = TUTTI_COMPRESS_INT8}, GPU_QUANT, "int8"},
    {{.kind = TUTTI_COMPRESS_INT4, .block = 256, .rounding = TUTTI_ROUND_STOCHASTIC, .seed = 5},
     GPU_QUANT,
     "int4 stochastic"},
    {{.kind = TUTTI_COMPRESS_SIGN, .block = 64}, GPU_QUANT, "sign"},
    {{.kind = TUTTI_COMPRESS_TOPK, .density = 0.01}, GPU_TOPK, "top-k"},
    {{.kind = TUTTI_COMPRESS_TOPK, .density = 0.5}, GPU_DENSE, "top-k run dense"},
};
static const tutti_dtype_t dtypes[] = {TUTTI_FP32, TUTTI_FP16, TUTTI_BF16};
static const size_t sizes[] = {1, 1000, 4099};

/* The gradient of rank r at a step, in dtype: ordinary values, or with
 * every special one mixed in (NaNs, infinities, extremes). */
static void gradient(char *g, size_t n, tutti_dtype_t dt, int r, int step, int special)
{
    float *f = malloc(n * sizeof *f);
    if (special)
        kc_fill(f, n, TUTTI_FP32, (uint64_t)r * 1000 + (uint64_t)step);
    else
        kc_fill_f32(f, n, -8, 8, (uint64_t)r * 1000 + (uint64_t)step);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = dt == TUTTI_FP16 ? tt_f32_to_fp16(f[i]) : tt_f32_to_bf16(f[i]);
        if (dt == TUTTI_FP32)
            memcpy(g + 4 * i, f + i, 4);
        else
            memcpy(g + 2 * i, &h, 2);
    }
    free(f);
}

/* The GPU path of one call, on device buffers send and recv, as the device
 * queue runs it; 0 or a message in why. */
static int gpu_call(tt_comm_t *comm, const tt_call_t *c, const tutti_compress_t *how, tt_cpath_t path,
                    tutti_ef_state_t ef, uint64_t key, int order, char *why, size_t len)
{
    tt_device_span_t spans[2 * 8 + 2];
    tt_cqueued_t q = {
        .call = *c, .how = *how, .ef = ef, .p = comm->nranks, .rank = comm->rank, .rng = key, .spans = spans};
    q.path = tt_compress_gpu_plan(c, &q.how, q.p, &q.pl);
    size_t gpu_bytes, host_bytes;
    tt_compress_layout(&q, &gpu_bytes, &host_bytes);
    if (q.path != path)
        return snprintf(why, len, "the plan took path %d, not %d", (int)q.path, (int)path), 1;
    tt_device_ctx_t ctx = {.comm = comm, .gpu = kc_dev(gpu_bytes + 1), .host = malloc(host_bytes + 1)};
    kc_order(order, key);
    int bad = tt_compress_gpu_before(&ctx, NULL, &q) != TUTTI_SUCCESS;
    for (int i = 0; !bad && i < q.nin; i++)
        memcpy(ctx.host + spans[i].host_off, spans[i].dev ? spans[i].dev : ctx.gpu + spans[i].gpu_off,
               spans[i].bytes);
    bad = bad || tt_compress_exchange(comm, &q, ctx.host) != TUTTI_SUCCESS;
    for (int i = q.nin; !bad && i < q.nin + q.nout; i++)
        memcpy(spans[i].dev ? (char *)spans[i].dev : ctx.gpu + spans[i].gpu_off, ctx.host + spans[i].host_off,
               spans[i].bytes);
    bad = bad || tt_compress_gpu_after(&ctx, NULL, &q) != TUTTI_SUCCESS;
    free(ctx.host);
    if (bad)
        snprintf(why, len, "the GPU path failed: %s", tutti_comm_last_error(comm->handle));
    return bad;
}

/* Every scheme, dtype and size; error feedback, op and offsets vary with
 * the case. */
static int gpu_path_is_the_cpu_path(tutti_comm_t handle, int r, int p, void *arg)
{
    (void)arg;
    tt_comm_t *comm; /* the communicator behind the handle, for the library's insides */
    if (tt_comm_enter(handle, "test", &comm) != TUTTI_SUCCESS)
        return 1;
    kc_begin();
    int bad = 0, n_case = 0;
    for (size_t s = 0; s < sizeof schemes / sizeof *schemes; s++)
        for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
            for (size_t z = 0; z < sizeof sizes / sizeof *sizes && !bad; z++, n_case++) {
                tutti_dtype_t dt = dtypes[d];
                size_t n = sizes[z], e = tutti_dtype_size(dt), bytes = n * e;
                int with_ef = n_case % 2, in_place = n_case % 5 == 3, special = n_case % 4 == 2;
                unsigned off_s = n_case % 3 ? 0 : 1, off_r = n_case % 4 == 1 ? 3 : (unsigned)e * (n_case % 2);
                tutti_op_t op = n_case % 3 == 1 ? TUTTI_AVG : TUTTI_SUM;
                char *hg = malloc(bytes), *hout = malloc(bytes), *send = (char *)kc_dev(bytes + 8) + off_s;
                char *recv = in_place ? send : (char *)kc_dev(bytes + 8) + off_r;
                tutti_ef_state_t ef_cpu = NULL, ef_gpu = NULL;
                if (with_ef) {
                    bad |= tutti_ef_create(&ef_cpu, n, p) != 0 || tutti_ef_create(&ef_gpu, n, p) != 0;
                    ef_gpu->worker_dev = kc_dev(n * sizeof(float));
                    memset(ef_gpu->worker_dev, 0, n * sizeof(float));
                    ef_gpu->worker_on_device = 1;
                }
                char where[160], why[400] = "";
                for (int step = 0; step < 1 + with_ef && !bad; step++) {
                    snprintf(where, sizeof where,
                             "rank %d: %s %s %s n=%zu%s%s, send +%u, recv %s+%u, step %d", r, schemes[s].name,
                             tutti_dtype_name(dt), tutti_op_name(op), n,
                             with_ef ? " with error feedback" : "", special ? ", special values" : "", off_s,
                             in_place ? "in place " : "", off_r, step);
                    gradient(hg, n, dt, r, step, special);
                    memcpy(send, hg, bytes);
                    uint64_t key = tt_compress_rng_key(comm);
                    tutti_compress_t how = schemes[s].how;
                    how.no_error_feedback = !with_ef;
                    tt_cpath_t path = schemes[s].path;
                    if (how.kind == TUTTI_COMPRESS_TOPK &&
                        tt_compress_topk_costly(tt_compress_topk_k(&how, n), n, p))
                        path = GPU_DENSE;
                    if (tutti_allreduce_compressed(hg, hout, n, dt, op, &how, ef_cpu, handle, NULL) != 0) {
                        snprintf(why, sizeof why, "the CPU path failed: %s", tutti_comm_last_error(handle));
                        bad = 1;
                        break;
                    }
                    tt_call_t c = {.coll = TT_COLL_ALLREDUCE,
                                   .send = send,
                                   .recv = recv,
                                   .count = n,
                                   .dtype = dt,
                                   .op = op,
                                   .in_bytes = bytes,
                                   .out_bytes = bytes,
                                   .in_place = in_place,
                                   .send_on_device = 1,
                                   .recv_on_device = 1};
                    bad = gpu_call(comm, &c, &how, path, ef_gpu, key, n_case % KC_ORDERS, why, sizeof why) ||
                          kc_differ(recv, hout, bytes, e, "the result", why, sizeof why) ||
                          (with_ef && (kc_differ(ef_gpu->worker_dev, ef_cpu->worker, n * 4, 4,
                                                 "the worker error", why, sizeof why) ||
                                       ef_gpu->server_count != ef_cpu->server_count ||
                                       kc_differ(ef_gpu->server, ef_cpu->server, ef_cpu->server_count * 4, 4,
                                                 "the server error", why, sizeof why)));
                }
                if (bad)
                    fprintf(stderr, "%s: %s\n", where, why);
                if (with_ef) {
                    ef_gpu->worker_dev = NULL; /* the stand-in's memory: no GPU to free it on */
                    ef_gpu->worker_on_device = 0;
                    tutti_ef_destroy(ef_cpu);
                    tutti_ef_destroy(ef_gpu);
                }
                free(hg);
                free(hout);
                kc_free_all();
            }
    tt_comm_leave(comm);
    return bad || tt_kcpu_unloaded_launches() != 0;
}

START_TEST(compressed_allreduce_gpu_path_matches_the_cpu_path)
{
    tt_run_ranks(3, gpu_path_is_the_cpu_path, NULL, 240);
}
END_TEST

/* Sampled top-k has no GPU path (tutti_compression(3)): its count would
 * make the caller's thread wait for the GPU. */
START_TEST(sampled_topk_runs_the_cpu_path)
{
    float *buf = kc_dev(4096 * sizeof(float));
    tt_call_t c = {.coll = TT_COLL_ALLREDUCE,
                   .send = buf,
                   .recv = buf,
                   .count = 4096,
                   .dtype = TUTTI_FP32,
                   .op = TUTTI_SUM,
                   .send_on_device = 1,
                   .recv_on_device = 1};
    tutti_compress_t how = {.kind = TUTTI_COMPRESS_TOPK, .density = 0.01, .sampled = 1};
    tt_cplan_t pl = {0};
    ck_assert_int_eq(tt_compress_gpu_plan(&c, &how, 4, &pl), CPU_STAGED);
    how.sampled = 0;
    ck_assert_int_eq(tt_compress_gpu_plan(&c, &how, 4, &pl), GPU_TOPK);
    kc_free_all();
}
END_TEST

size_t kc_allreduce_cases(tt_case_t *cases)
{
    cases[0] = (tt_case_t){"compressed_allreduce", compressed_allreduce_gpu_path_matches_the_cpu_path, 0, 0};
    cases[1] = (tt_case_t){"sampled_topk_path", sampled_topk_runs_the_cpu_path, 0, 0};
    return 2;
}
