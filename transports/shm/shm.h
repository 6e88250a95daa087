/* SPDX-License-Identifier: MIT */
/*
 * shm transport internals. Each rank owns one segment holding its incoming
 * queues: one per same-host peer and channel. A queue is a ring of slots;
 * the sender fills a slot and then sets its sequence number, which the
 * receiver polls (one cache line carries the header and the flag); the
 * receiver consumes the slot (copies or reduces straight from it) and bumps
 * tail, which the sender reads only when the ring looks full.
 */
#ifndef TT_SHM_H
#define TT_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#include "transports/local.h"
#include "transports/transport.h"

#define TT_SHM_MAGIC 0x74747368u /* "ttsh" */

typedef struct {
    uint32_t magic;
    int32_t owner;
    int32_t nlocal, nchannels, nslots;
    uint64_t slot_bytes;
    unsigned char key[TT_KEY_BYTES];
    _Atomic uint32_t aborted; /* set by the owner when it gives up */
} tt_shm_seg_hdr_t;

typedef struct {
    tt_local_queue_t *q;
    char *slots; /* nslots of (tt_local_slot_t + slot_bytes) */
    tt_req_t *reqs;
    uint64_t pos;       /* next slot position to fill (out) or to read (in) */
    uint64_t tail_seen; /* out: the receiver's tail when last read */
} tt_shm_side_t;

typedef struct {
    int peer;
    int nchannels, nslots;
    size_t slot_bytes;
    int pidfd; /* readable once the peer process has exited */
    int pid;
    tutti_status_t failed;      /* why the connection is unusable, or 0 */
    tt_shm_seg_hdr_t *peer_seg; /* the peer's segment (we send into it) */
    tt_shm_side_t out[TT_MAX_CHANNELS], in[TT_MAX_CHANNELS];
    struct tt_shm_ctx *ctx;
} tt_shm_conn_t;

typedef struct tt_shm_ctx {
    const tt_tp_env_t *env;
    char name[64];
    tt_shm_seg_hdr_t *seg; /* our own segment */
    size_t seg_bytes;
    int *local_index; /* rank -> index among ranks of this host, or -1 */
    int nlocal, nchannels, nslots;
    size_t slot_bytes;
    int unlinked;
} tt_shm_ctx_t;

/* Byte offset of queue (sender local index, channel) inside a segment. */
size_t tt_shm_queue_offset(int nchannels, int nslots, size_t slot_bytes, int sender, int channel);
size_t tt_shm_segment_bytes(int nlocal, int nchannels, int nslots, size_t slot_bytes);

tutti_status_t tt_shm_isend(void *conn, int channel, tt_req_t *req);
tutti_status_t tt_shm_irecv(void *conn, int channel, tt_req_t *req);
int tt_shm_peek(void *conn, int channel, tt_msg_hdr_t *hdr);
tutti_status_t tt_shm_progress(void *conn, int *progressed);
tutti_status_t tt_shm_alive(void *conn);

#endif
