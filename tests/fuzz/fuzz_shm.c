/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the shm receiver reading what a peer wrote into the slot
 * ring it shares with it (a peer can write anything there). The input is
 * a sequence of slots as the peer would fill them, header and bytes; after
 * each, the receiver makes progress on a posted receive, plain or reducing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transports/local.h"
#include "transports/shm/shm.h"

#define SLOT_BYTES 64

static void sum_into(void *ctx, size_t off, const void *src, size_t n)
{
    unsigned char *dst = ctx;
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        dst[off + i] += s[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t len = data[0] % 200; /* the receive's payload */
    int reducing = data[1] & 1, nslots = 1 + (data[1] >> 1) % 2;
    data += 2;
    size -= 2;
    size_t stride = sizeof(tt_local_slot_t) + SLOT_BYTES;
    /* The ring, aligned as in a segment and no larger, so a read past its
     * last slot is caught. */
    size_t ring = sizeof(tt_local_queue_t) + (size_t)nslots * stride;
    char *mem = aligned_alloc(TT_LOCAL_LINE, ring);
    memset(mem, 0, ring);
    unsigned char *dst = calloc(1, len + 1);
    tt_shm_seg_hdr_t peer_seg = {0}; /* the peer's header: never asleep, so nobody rings */
    tt_shm_conn_t c = {.peer = 1, .nchannels = 1, .pidfd = -1, .peer_seg = &peer_seg};
    c.in[0] = (tt_shm_side_t){.q = (tt_local_queue_t *)mem,
                              .slots = mem + sizeof(tt_local_queue_t),
                              .slot_bytes = SLOT_BYTES,
                              .nslots = nslots};
    tt_req_t req = {.hdr = {.magic = TT_MSG_MAGIC, .seq = 7, .count = len, .bytes = len},
                    .buf = (char *)dst,
                    .len = len,
                    .unit = 1};
    if (reducing) {
        req.combine = sum_into;
        req.combine_ctx = dst;
    }
    tt_shm_irecv(&c, 0, &req);
    uint64_t written = 0;
    while (size >= sizeof(tt_local_slot_t) && req.state == TT_REQ_PENDING) {
        tt_local_slot_t *slot = (tt_local_slot_t *)(c.in[0].slots + (written % (uint64_t)nslots) * stride);
        size_t body = size - sizeof *slot < SLOT_BYTES ? size - sizeof *slot : SLOT_BYTES;
        memcpy((char *)slot, data, sizeof *slot); /* what the peer put there, seq included */
        memcpy(slot + 1, data + sizeof *slot, body);
        data += sizeof *slot + body;
        size -= sizeof *slot + body;
        written++;
        int progressed = 0;
        tt_shm_progress(&c, &progressed);
    }
    free(dst);
    free(mem);
    return 0;
}
