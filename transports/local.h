/* SPDX-License-Identifier: MIT */
/*
 * What the same-host transports (shm, cuda_ipc) share: shared segments
 * named per job and rank, created 0600 and stamped with the job key; the
 * slot rings they pass pieces through; and telling a peer process that is
 * gone from one that is only slow.
 */
#ifndef TT_LOCAL_H
#define TT_LOCAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transports/transport.h"

#define TT_LOCAL_LINE 64 /* a cache line */

/* A slot's header: the sender fills the slot, then sets seq, which the
 * receiver polls; one cache line carries the header and the flag. */
typedef struct {
    tt_msg_hdr_t hdr;     /* the message this piece belongs to */
    uint64_t offset;      /* byte offset of the piece in the message */
    uint64_t nbytes;      /* bytes of the piece */
    _Atomic uint64_t seq; /* position + 1 once the slot is filled, set last */
} tt_local_slot_t;

_Static_assert(sizeof(tt_local_slot_t) == TT_LOCAL_LINE, "a slot header is one cache line");

/* A ring's consumer side; the sender reads it only when the ring looks full. */
typedef struct {
    _Alignas(TT_LOCAL_LINE) _Atomic uint64_t tail; /* slots consumed, written by the receiver */
} tt_local_queue_t;

/* Creates segment name (exclusive, 0600) of bytes, zero-filled, and maps
 * it; NULL after logging (as transport tp) and leaving nothing behind. */
void *tt_local_create(const char *tp, const char *name, size_t bytes);
/* Maps rank peer's segment name, bytes long; NULL after logging. */
void *tt_local_map(const char *tp, const char *name, size_t bytes, int peer);
/* Whether a mapped segment's magic and key are the expected ones,
 * compared without an early exit. */
int tt_local_keyed(uint32_t magic, uint32_t want_magic, const unsigned char *key,
                   const unsigned char want_key[TT_KEY_BYTES]);
/* A descriptor that becomes readable once process pid exits (-1 where the
 * kernel has no pidfd); tt_local_gone says whether it has. */
int tt_local_watch(int pid);
int tt_local_gone(int pidfd, int pid);

#endif
