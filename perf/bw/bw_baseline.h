/* SPDX-License-Identifier: MIT */
/*
 * The baselines tutti-bw's verdicts compare a link with, measured the way
 * the link is: the same message size, the same CPUs, the same caches (the
 * receiver reads what another CPU just wrote), batches repeated under the
 * same rule, and the median of them, as the tables show.
 */
#ifndef TT_BW_BASELINE_H
#define TT_BW_BASELINE_H

#include <sched.h>
#include <stddef.h>

#include "bw_stats.h"

/* A plain copy of messages of bytes from a writer thread on the CPUs
 * writer to a reader thread on reader, through nslots slots of slot_bytes
 * of shared memory as shm's queue (each side copies once, both at once).
 * *out: GB/s of the batches; -1 when it could not run. */
int tt_bw_copy_baseline(const cpu_set_t *writer, const cpu_set_t *reader, size_t bytes, size_t slot_bytes,
                        int nslots, const tt_repeat_rule_t *rule, tt_stats_t *out);
/* A plain TCP stream over loopback, sends of bytes, writer and reader
 * threads on those CPUs, socket buffers of bufbytes; *out as above. */
int tt_bw_tcp_baseline(const cpu_set_t *writer, const cpu_set_t *reader, size_t bytes, int bufbytes,
                       const tt_repeat_rule_t *rule, tt_stats_t *out);

#endif
