/* SPDX-License-Identifier: MIT */
/*
 * A keyed message authentication code: SipHash-2-4 with its 128-bit
 * output (Aumasson and Bernstein), written from the paper. A recovery
 * exchange proves it holds a key with it instead of sending the key.
 */
#ifndef TT_MAC_H
#define TT_MAC_H

#include <stddef.h>

#include "core/key.h"

#define TT_MAC_BYTES 16

/* out = MAC(key, msg[0..len)). */
void tt_mac(const unsigned char key[TT_KEY_BYTES], const void *msg, size_t len,
            unsigned char out[TT_MAC_BYTES]);
/* Whether two codes are equal, in time that does not depend on where they differ. */
int tt_mac_equal(const unsigned char a[TT_MAC_BYTES], const unsigned char b[TT_MAC_BYTES]);

#endif
