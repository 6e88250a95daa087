/* SPDX-License-Identifier: MIT */
/* SipHash-2-4, 128-bit output: two compression rounds a word, four to finish. */
#include <stdint.h>
#include <string.h>

#include "core/mac.h"

static uint64_t load_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void store_le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static void rounds(uint64_t v[4], int n)
{
    for (int i = 0; i < n; i++) {
        v[0] += v[1];
        v[1] = rotl(v[1], 13) ^ v[0];
        v[0] = rotl(v[0], 32);
        v[2] += v[3];
        v[3] = rotl(v[3], 16) ^ v[2];
        v[0] += v[3];
        v[3] = rotl(v[3], 21) ^ v[0];
        v[2] += v[1];
        v[1] = rotl(v[1], 17) ^ v[2];
        v[2] = rotl(v[2], 32);
    }
}

static void absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    rounds(v, 2);
    v[0] ^= m;
}

void tt_mac(const unsigned char key[TT_KEY_BYTES], const void *msg, size_t len,
            unsigned char out[TT_MAC_BYTES])
{
    const unsigned char *p = msg;
    uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
    /* "somepseudorandomlygeneratedbytes", and the 128-bit output's tweak. */
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull ^ 0xee,
                     k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8)
        absorb(v, load_le(p + i, 8));
    absorb(v, load_le(p + whole, len % 8) | (uint64_t)(len & 0xff) << 56);
    v[2] ^= 0xee;
    rounds(v, 4);
    store_le(out, v[0] ^ v[1] ^ v[2] ^ v[3]);
    v[1] ^= 0xdd;
    rounds(v, 4);
    store_le(out + 8, v[0] ^ v[1] ^ v[2] ^ v[3]);
}

int tt_mac_equal(const unsigned char a[TT_MAC_BYTES], const unsigned char b[TT_MAC_BYTES])
{
    unsigned char d = 0;
    for (int i = 0; i < TT_MAC_BYTES; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}
