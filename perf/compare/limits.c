/* SPDX-License-Identifier: MIT */
/*
 * The ceilings a host collective is compared with, measured on this machine:
 * single-thread memcpy bandwidth and the bandwidth of one TCP stream over
 * loopback. The stream is measured twice: writing and reading one 4 MiB
 * buffer over and over (cache-resident on both ends, as iperf-style tools
 * measure it), and with SIZE-byte buffers (64 MiB by default), whose pages
 * come from memory as a large collective's do.
 *
 * The 4 MiB stream also reports the CPU its two ends used, as fractions of
 * a core (softirq work is charged to whichever process it interrupts; on
 * loopback that is mostly the writer). From them follows the ceiling of
 * traffic that goes both ways at once, as in a 2-rank all-reduce, where
 * each of the two cores both writes and reads: every byte each way costs
 * (writer + reader) / stream core-seconds, so one direction can reach at
 * most stream / (writer + reader).
 *
 * Prints "memcpy_gbps", "tcp_stream_gbps" (the 4 MiB stream),
 * "tcp_stream_writer_cores", "tcp_stream_reader_cores",
 * "tcp_two_way_ceiling_gbps" and "tcp_stream_sized_gbps" (GB = 1e9 bytes).
 * usage: limits [-s SIZE] [-t SECONDS]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/env_config.h"

static double memcpy_gbps(size_t bytes, double seconds)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst)
        return 0;
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    double best = 0;
    int64_t end = tt_now_ns() + (int64_t)(seconds * 1e9);
    while (tt_now_ns() < end) {
        int64_t t0 = tt_now_ns();
        memcpy(dst, src, bytes);
        double gbps = (double)bytes / (double)(tt_now_ns() - t0);
        if (gbps > best)
            best = gbps;
        src[0] = dst[bytes - 1]; /* keep the copy observable */
    }
    free(src);
    free(dst);
    return best;
}

typedef struct {
    double gbps;
    double writer_cores, reader_cores; /* CPU used, in cores */
} stream_t;

static double cpu_seconds(const struct rusage *r)
{
    return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) +
           (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1e6;
}

/* One connection over loopback, written from and read into chunk-byte
 * buffers; a child process reads everything. */
static stream_t tcp_stream(size_t chunk, double seconds)
{
    stream_t none = {0, 0, 0};
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&addr, &len))
        return none;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = accept(lfd, NULL, NULL);
        char *buf = calloc(1, chunk);
        while (buf && read(fd, buf, chunk) > 0) {
        }
        _exit(0);
    }
    close(lfd);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1, bufsize = 4 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return none;
    }
    char *buf = calloc(1, chunk);
    size_t sent = 0;
    if (!buf) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(fd);
        return none;
    }
    memset(buf, 1, chunk); /* real pages: untouched ones all map the one zero page */
    struct rusage before, after, reader;
    getrusage(RUSAGE_SELF, &before);
    int64_t t0 = tt_now_ns(), end = t0 + (int64_t)(seconds * 1e9);
    while (tt_now_ns() < end) {
        ssize_t n = write(fd, buf, chunk);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    wait4(pid, NULL, 0, &reader); /* the reader has all the bytes */
    double wall = (double)(tt_now_ns() - t0) / 1e9;
    getrusage(RUSAGE_SELF, &after);
    close(fd);
    free(buf);
    /* The reader's whole life is the stream, give or take its accept. */
    return (stream_t){(double)sent / wall / 1e9, (cpu_seconds(&after) - cpu_seconds(&before)) / wall,
                      cpu_seconds(&reader) / wall};
}

int main(int argc, char **argv)
{
    uint64_t size = 64 << 20;
    double seconds = 1.0;
    int opt;
    while ((opt = getopt(argc, argv, "s:t:h")) != -1) {
        switch (opt) {
        case 's':
            if (tt_parse_size(optarg, &size) || size == 0) {
                fprintf(stderr, "limits: bad size %s\n", optarg);
                return 2;
            }
            break;
        case 't': seconds = atof(optarg); break;
        default:
            fprintf(stderr,
                    "usage: limits [-s SIZE (default 64M)] [-t SECONDS per measurement (default 1)]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    printf("memcpy_gbps %.3f\n", memcpy_gbps((size_t)size, seconds));
    stream_t st = tcp_stream((size_t)4 << 20, seconds);
    printf("tcp_stream_gbps %.3f\n", st.gbps);
    printf("tcp_stream_writer_cores %.2f\n", st.writer_cores);
    printf("tcp_stream_reader_cores %.2f\n", st.reader_cores);
    double cores = st.writer_cores + st.reader_cores;
    printf("tcp_two_way_ceiling_gbps %.3f\n", cores > 0 ? st.gbps / cores : 0);
    printf("tcp_stream_sized_gbps %.3f\n", tcp_stream((size_t)size, seconds).gbps);
    return 0;
}
