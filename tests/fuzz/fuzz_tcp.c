/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the tcp receiver parsing what arrives on a channel (header,
 * then payload), plain and reducing through the bounce buffer. The input's
 * first bytes set the posted receive; the rest is the byte stream a peer
 * sent, fed through a socket pair in pieces of every size.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transports/tcp/tcp.h"

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
    if (size < 3)
        return 0;
    size_t len = (size_t)data[0] * 37, unit = 1u << (data[1] % 4), piece = 1 + data[2];
    int reducing = (data[1] >> 4) & 1;
    data += 3;
    size -= 3;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 0;
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    unsigned char *dst = calloc(1, len + 1);
    tt_tcp_conn_t c = {.peer = 1, .nchannels = 1};
    c.ch[0].fd = sv[1];
    tt_req_t req = {.hdr = {.magic = TT_MSG_MAGIC, .seq = 3, .count = len / unit, .bytes = len},
                    .buf = (char *)dst,
                    .len = len,
                    .unit = unit};
    if (reducing) {
        req.combine = sum_into;
        req.combine_ctx = dst;
    }
    tt_tcp_irecv(&c, 0, &req);
    for (size_t off = 0; off < size && req.state == TT_REQ_PENDING;) {
        size_t n = size - off < piece ? size - off : piece;
        if (write(sv[0], data + off, n) != (ssize_t)n)
            break;
        off += n;
        int progressed = 0;
        tt_tcp_progress(&c, &progressed);
    }
    close(sv[0]); /* the peer is gone: the receive ends either way */
    for (int i = 0; i < 4 && req.state == TT_REQ_PENDING; i++) {
        int progressed = 0;
        tt_tcp_progress(&c, &progressed);
    }
    close(sv[1]);
    free(c.ch[0].bounce);
    free(dst);
    return 0;
}
