/* SPDX-License-Identifier: MIT */
/* One GPU operation repeated in batches until its median rate is stable. */
#include "bw_gpu.h"
#include "core/clock.h"
#include "cuda/kernels.h"

static int issue(const tt_gpu_op_t *o)
{
    size_t n = o->bytes / tutti_dtype_size(o->dtype);
    switch (o->op) {
    case OP_COPY: return cudaMemcpyAsync(o->dst, o->src, o->bytes, o->dir, o->stream) != cudaSuccess;
    case OP_COPY_SYNC: return cudaMemcpy(o->dst, o->src, o->bytes, o->dir) != cudaSuccess;
    case OP_PEER:
        return cudaMemcpyPeerAsync(o->dst, o->to, o->src, o->from, o->bytes, o->stream) != cudaSuccess;
    case OP_PEER_BI:
        return cudaMemcpyPeerAsync(o->dst, o->to, o->src, o->from, o->bytes, o->stream) != cudaSuccess ||
               cudaMemcpyPeerAsync(o->dst2, o->from, o->src2, o->to, o->bytes, o->stream2) != cudaSuccess;
    case OP_REDUCE: return tt_cuda_reduce(o->dst, o->dst, o->src, n, o->dtype, TUTTI_SUM, o->stream) != 0;
    }
    return 1;
}

int tt_bw_gpu_measure(const tt_bw_job_t *job, const tt_gpu_op_t *o, int iters, double bytes_per_op,
                      tt_stats_t *out)
{
    double samples[256];
    int n = 0, stable = 0, max = job->o->rule.max_n < 256 ? job->o->rule.max_n : 256;
    tt_repeat_rule_t rule = job->o->rule;
    rule.max_n = max;
    double elapsed = 0;
    for (int warm = 1;; warm = 0) {
        int64_t t0 = tt_now_ns();
        for (int i = 0; i < iters; i++)
            if (issue(o) || (o->latency && cudaStreamSynchronize(o->stream) != cudaSuccess))
                return -1;
        if (cudaStreamSynchronize(o->stream) != cudaSuccess ||
            (o->stream2 && cudaStreamSynchronize(o->stream2) != cudaSuccess))
            return -1;
        double s = (double)(tt_now_ns() - t0) * 1e-9;
        if (warm)
            continue;
        elapsed += s;
        samples[n++] = o->latency ? s / iters * 1e6 : bytes_per_op * iters / s / 1e9;
        if (tt_stats_enough(&rule, samples, n, elapsed, &stable))
            break;
    }
    tt_stats_compute(samples, n, out);
    out->stable = stable;
    return 0;
}
