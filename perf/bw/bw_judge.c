/* SPDX-License-Identifier: MIT */
/* Verdicts on links and on fits, from the figures tutti-bw shows. */
#include <stdio.h>

#include "bw_judge.h"

const char *tt_bw_verdict_name(tt_bw_verdict_t v)
{
    static const char *const names[] = {"normal",   "below the usual", "low", "above its baseline",
                                        "withheld", "unknown"};
    return v <= TT_VERDICT_UNKNOWN ? names[v] : "unknown";
}

tt_bw_verdict_t tt_bw_judge(const tt_bw_evidence_t *e, char *why, size_t len)
{
    int need = e->same_host ? 2 : 1; /* CPUs of this host the pair runs on */
    snprintf(why, len, "%s", "");
    if (e->baseline <= 0) {
        snprintf(why, len, "no baseline to compare with");
        return TT_VERDICT_UNKNOWN;
    }
    if (e->shared_cpu) {
        snprintf(why, len, "its two ranks are pinned to one CPU and take turns");
        return TT_VERDICT_WITHHELD;
    }
    if (e->cpus < need) {
        snprintf(why, len, "the host gives the job %d CPU, so the pair takes turns", e->cpus);
        return TT_VERDICT_WITHHELD;
    }
    if (e->others_cpus > e->cpus - need + TT_BW_BUSY_MARGIN) {
        snprintf(why, len, "other processes kept %.1f of %d CPUs busy while it was measured", e->others_cpus,
                 e->cpus);
        return TT_VERDICT_WITHHELD;
    }
    if (e->cv > TT_BW_NOISY_CV) {
        snprintf(why, len, "its repeats varied by %.0f%% (cv)", 100 * e->cv);
        return TT_VERDICT_WITHHELD;
    }
    double f = e->measured / e->baseline;
    if (f > 1) {
        /* A link cannot beat what bounds it: the baseline was measured in a
         * busier moment, or is not a ceiling for this link. */
        snprintf(why, len,
                 "the baseline is no ceiling here: measured in a busier moment, or the link beats it");
        return TT_VERDICT_ABOVE;
    }
    return f >= 0.75 ? TT_VERDICT_NORMAL : f >= 0.4 ? TT_VERDICT_BELOW : TT_VERDICT_LOW;
}

double tt_bw_fit_miss(const double *measured, const double *fitted, int n, int *at)
{
    double worst = 1;
    *at = 0;
    for (int i = 0; i < n; i++) {
        if (measured[i] <= 0 || fitted[i] <= 0)
            continue;
        double q = fitted[i] > measured[i] ? fitted[i] / measured[i] : measured[i] / fitted[i];
        if (q > worst) {
            worst = q;
            *at = i;
        }
    }
    return worst;
}
