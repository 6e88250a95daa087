/* SPDX-License-Identifier: MIT */
/* Top-k selection by magnitude: exact (quickselect) and sampled (DGC). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

/* The value of rank kth (0-based, ascending) among a[0..n): quickselect
 * with three-way partitions (many equal magnitudes are common: zeros) and
 * pivots from a fixed pseudo-random sequence; a is reordered. */
static float select_kth(float *a, size_t n, size_t kth)
{
    size_t lo = 0, hi = n; /* the answer is in a[lo, hi) */
    uint64_t state = 0x2545F4914F6CDD1Dull ^ n;
    while (hi - lo > 1) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        float pivot = a[lo + (size_t)(state >> 33) % (hi - lo)];
        size_t lt = lo, i = lo, gt = hi; /* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
        while (i < gt) {
            float v = a[i];
            if (v < pivot) {
                a[i++] = a[lt];
                a[lt++] = v;
            } else if (v > pivot) {
                a[i] = a[--gt];
                a[gt] = v;
            } else {
                i++;
            }
        }
        if (kth < lt)
            hi = lt;
        else if (kth >= gt)
            lo = gt;
        else
            return pivot;
    }
    return a[lo];
}

/* Indices of the elements whose magnitude beats thr, then those equal to
 * it, up to limit; ascending. */
static size_t collect(const float *x, size_t n, float thr, size_t limit, uint32_t *idx)
{
    size_t above = 0, got = 0;
    for (size_t i = 0; i < n; i++)
        above += fabsf(x[i]) > thr;
    size_t ties = limit > above ? limit - above : 0;
    for (size_t i = 0; i < n && got < limit; i++) {
        float m = fabsf(x[i]);
        if (m > thr || (m == thr && ties > 0)) {
            ties -= m == thr;
            idx[got++] = (uint32_t)i;
        }
    }
    return got;
}

/* |x| as an integer that orders like the magnitude (NaN above infinity). */
static inline uint32_t magnitude_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7fffffffu;
}

size_t tt_topk_exact(const float *x, size_t n, size_t k, uint32_t *idx)
{
    if (k >= n) {
        for (size_t i = 0; i < n; i++)
            idx[i] = (uint32_t)i;
        return n;
    }
    if (k == 0)
        return 0;
    /* Radix select on the magnitude's bits: a histogram of the top 16 bits
     * finds the bin holding the k-th largest, one of the low 15 bits within
     * that bin finds its exact value; then one pass collects. */
    uint32_t *hist = calloc(1u << 16, sizeof *hist);
    if (!hist) { /* no memory for the histogram: quickselect on a copy */
        float *m = malloc(n * sizeof *m);
        if (!m)
            return 0;
        for (size_t i = 0; i < n; i++)
            m[i] = fabsf(x[i]);
        float thr = select_kth(m, n, n - k);
        free(m);
        return collect(x, n, thr, k, idx);
    }
    for (size_t i = 0; i < n; i++)
        hist[magnitude_bits(x[i]) >> 15]++;
    size_t above = 0;
    uint32_t hi = 0xffff;
    while (above + hist[hi] < k)
        above += hist[hi--];
    memset(hist, 0, (1u << 15) * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = magnitude_bits(x[i]);
        if (u >> 15 == hi)
            hist[u & 0x7fff]++;
    }
    uint32_t lo = 0x7fff;
    while (above + hist[lo] < k)
        above += hist[lo--];
    free(hist);
    uint32_t thr = hi << 15 | lo;
    /* above elements beat thr; k - above of those equal to it go too, the lowest indices first */
    size_t ties = k - above, got = 0;
    for (size_t i = 0; i < n && got < k; i++) {
        uint32_t u = magnitude_bits(x[i]);
        if (u > thr || (u == thr && ties > 0)) {
            ties -= u == thr;
            idx[got++] = (uint32_t)i;
        }
    }
    return got;
}

size_t tt_topk_sampled(const float *x, size_t n, size_t k, uint64_t seed, uint64_t stream, uint32_t *idx,
                       float *mag)
{
    /* A sample of 1% (at least 1024 elements) estimates the threshold that k of n pass. */
    size_t s = n / 100 < 1024 ? (n < 1024 ? n : 1024) : n / 100;
    if (k == 0 || s == 0)
        return 0;
    if (k >= n || s == n)
        return tt_topk_exact(x, n, k, idx);
    for (size_t i = 0; i < s; i++) {
        size_t at = (size_t)(tt_uniform01(seed, stream, i) * (float)n);
        mag[i] = fabsf(x[at < n ? at : n - 1]);
    }
    size_t ks = (size_t)((double)k * (double)s / (double)n);
    float thr = select_kth(mag, s, s - (ks < 1 ? 1 : ks));
    size_t got = collect(x, n, thr, 2 * k, idx);
    if (got < 2 * k)
        return got;
    /* Too many passed (a flat distribution): exact top-k among them. */
    for (size_t i = 0; i < got; i++)
        mag[i] = x[idx[i]];
    uint32_t *picked = malloc(k * sizeof *picked);
    size_t kept = picked ? tt_topk_exact(mag, got, k, picked) : 0;
    if (!kept) {
        free(picked);
        return k; /* no memory: the first k that passed */
    }
    for (size_t i = 0; i < kept; i++)
        idx[i] = idx[picked[i]];
    free(picked);
    return kept;
}
