/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's fabric: the devices it invents (TTFAKE_DEVICES), the shared
 * directory where every opened device takes a slot (TTFAKE_FABRIC), opening
 * and closing devices with their NIC thread, and the port and GID queries.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fv.h"

#undef ibv_query_port

static fv_devcfg_t devcfg[FV_MAX_DEVS];
static int ndevcfg = -1;
static struct ibv_device devices[FV_MAX_DEVS];
static fv_dir_t *dir;
static char fabric[64];
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

long long fv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* "name:ib|roce:ports[:down][:alone]" entries, comma-separated; unset: one of each. */
static void parse_devices(void)
{
    const char *env = getenv("TTFAKE_DEVICES");
    char list[512];
    snprintf(list, sizeof list, "%s", env ? env : "fakeib0:ib:1,fakeroce0:roce:1");
    ndevcfg = 0;
    char *save = NULL;
    for (char *e = strtok_r(list, ",", &save); e && ndevcfg < FV_MAX_DEVS; e = strtok_r(NULL, ",", &save)) {
        fv_devcfg_t *d = &devcfg[ndevcfg];
        char *kind = strchr(e, ':');
        char *ports = kind ? strchr(kind + 1, ':') : NULL;
        if (kind)
            *kind++ = '\0';
        if (ports)
            *ports++ = '\0';
        snprintf(d->name, sizeof d->name, "%.*s", (int)sizeof d->name - 1, e);
        d->roce = kind && strcmp(kind, "roce") == 0;
        d->nports = ports ? atoi(ports) : 1;
        if (d->nports < 1 || d->nports > FV_MAX_PORTS)
            d->nports = 1;
        d->down = ports && strstr(ports, ":down") != NULL;
        d->alone = ports && strstr(ports, ":alone") != NULL;
        ndevcfg++;
    }
}

int fv_devcfg_count(void)
{
    pthread_mutex_lock(&init_lock);
    if (ndevcfg < 0)
        parse_devices();
    pthread_mutex_unlock(&init_lock);
    return ndevcfg;
}

const fv_devcfg_t *fv_devcfg(int i)
{
    return &devcfg[i];
}

const char *fv_fabric_name(void)
{
    return fabric;
}

/* Maps the fabric directory, creating it if this is the first process. */
fv_dir_t *fv_dir(void)
{
    fv_dir_t *known = __atomic_load_n(&dir, __ATOMIC_ACQUIRE);
    if (known)
        return known; /* the NIC asks on every packet: no lock once mapped */
    pthread_mutex_lock(&init_lock);
    if (!dir) {
        const char *env = getenv("TTFAKE_FABRIC");
        if (env && *env)
            snprintf(fabric, sizeof fabric, "%s", env);
        else
            snprintf(fabric, sizeof fabric, "ttfake-%u", (unsigned)getuid());
        char name[80];
        snprintf(name, sizeof name, "/%s", fabric);
        int created = 1;
        void *map = NULL;
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 && errno == EEXIST) {
            created = 0;
            fd = shm_open(name, O_RDWR, 0600);
        }
        /* The creator may not have sized it yet: mapping it short would fault. */
        struct stat st;
        for (int i = 0;
             fd >= 0 && !created && i < 2000 && (fstat(fd, &st) || st.st_size < (off_t)sizeof(fv_dir_t)); i++)
            usleep(500);
        if (fd >= 0 && (!created || ftruncate(fd, sizeof(fv_dir_t)) == 0)) {
            void *p = mmap(NULL, sizeof(fv_dir_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            map = p == MAP_FAILED ? NULL : p;
        }
        if (fd >= 0)
            close(fd);
        fv_dir_t *d = map;
        if (d && created) {
            d->magic = FV_MAGIC;
            atomic_store(&d->ready, 1);
        }
        /* Another process may still be sizing it: wait for its mark. */
        for (int i = 0; d && !atomic_load(&d->ready) && i < 1000; i++)
            usleep(1000);
        if (d && atomic_load(&d->ready))
            __atomic_store_n(&dir, d, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&init_lock);
    return dir;
}

uint16_t fv_lid(int ctx_index, int port)
{
    return (uint16_t)(1 + ctx_index * FV_MAX_PORTS + (port - 1));
}

/*
 * GID tables. InfiniBand: one entry, the link-local prefix and the port
 * GUID. RoCE, as mlx5 fills it for an interface with one IPv4 address:
 * link-local v1, link-local v2, IPv4-mapped v1, IPv4-mapped v2.
 */
int fv_gid(int ctx_index, int roce, int port, int idx, union ibv_gid *gid, int *type)
{
    uint16_t lid = fv_lid(ctx_index, port);
    memset(gid, 0, sizeof *gid);
    if (idx < 0 || idx >= (roce ? FV_ROCE_GIDS : 1))
        return -1;
    if (idx < 2) {
        gid->raw[0] = 0xfe;
        gid->raw[1] = 0x80;
        gid->raw[8] = 0x02; /* a made-up vendor GUID ending in the LID */
        gid->raw[9] = 0xc9;
        gid->raw[14] = (uint8_t)(lid >> 8);
        gid->raw[15] = (uint8_t)lid;
    } else {
        gid->raw[10] = gid->raw[11] = 0xff;
        gid->raw[12] = 10;
        gid->raw[13] = 7;
        gid->raw[14] = (uint8_t)(lid >> 8);
        gid->raw[15] = (uint8_t)lid;
    }
    *type = !roce ? IBV_GID_TYPE_IB : (idx % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1);
    return 0;
}

struct ibv_device **ibv_get_device_list(int *num)
{
    int n = fv_devcfg_count();
    struct ibv_device **list = calloc((size_t)n + 1, sizeof *list);
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        memset(&devices[i], 0, sizeof devices[i]);
        devices[i].node_type = IBV_NODE_CA;
        devices[i].transport_type = IBV_TRANSPORT_IB;
        memcpy(devices[i].name, devcfg[i].name, sizeof devices[i].name);
        snprintf(devices[i].dev_name, sizeof devices[i].dev_name, "uverbs%d", i);
        list[i] = &devices[i];
    }
    if (num)
        *num = n;
    return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

fv_ctx_t *fv_ctx_of(struct ibv_context *c)
{
    return (fv_ctx_t *)((char *)c - offsetof(fv_ctx_t, vctx.context));
}

static int pid_alive(int pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Takes a free directory slot, or one whose owner died. */
static int claim_slot(fv_dir_t *d, int32_t me, uint32_t *gen)
{
    for (int i = 0; i < FV_MAX_CTX; i++) {
        int32_t owner = atomic_load(&d->ctx[i].pid);
        if (owner != 0 && pid_alive(owner))
            continue;
        if (atomic_compare_exchange_strong(&d->ctx[i].pid, &owner, me)) {
            *gen = atomic_fetch_add(&d->next_gen, 1) + 1;
            atomic_store(&d->ctx[i].gen, *gen);
            return i;
        }
    }
    return -1;
}

static fv_seg_t *segment_create(fv_ctx_t *c)
{
    snprintf(c->seg_name, sizeof c->seg_name, "/%s-c%d-g%u", fabric, c->index, c->gen);
    int fd = shm_open(c->seg_name, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd < 0)
        return NULL;
    void *p = MAP_FAILED;
    if (ftruncate(fd, sizeof(fv_seg_t)) == 0)
        p = mmap(NULL, sizeof(fv_seg_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(c->seg_name);
        return NULL;
    }
    fv_seg_t *s = p;
    s->magic = FV_MAGIC;
    atomic_store(&s->pid, (int32_t)getpid());
    return s;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    int d = (int)(device - devices);
    fv_dir_t *fd = fv_dir();
    if (d < 0 || d >= fv_devcfg_count() || !fd) {
        errno = ENODEV;
        return NULL;
    }
    fv_ctx_t *c = calloc(1, sizeof *c);
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    c->dev = &devcfg[d];
    c->index = claim_slot(fd, (int32_t)getpid(), &c->gen);
    if (c->index < 0 || !(c->seg = segment_create(c))) {
        if (c->index >= 0)
            atomic_store(&fd->ctx[c->index].pid, 0);
        free(c);
        errno = ENOSPC;
        return NULL;
    }
    fd->ctx[c->index].dev = d;
    fd->ctx[c->index].roce = c->dev->roce;
    fd->ctx[c->index].nports = (uint32_t)c->dev->nports;
    fd->ctx[c->index].net = c->dev->alone ? (int32_t)getpid() : 0;
    for (int i = 0; i < FV_MAX_CTX; i++)
        c->peers[i].pidfd = -1;
    c->next_key = 0x1000;
    pthread_mutex_init(&c->lock, NULL);
    struct ibv_context *ctx = &c->vctx.context;
    ctx->device = device;
    ctx->cmd_fd = ctx->async_fd = -1;
    ctx->num_comp_vectors = 1;
    pthread_mutex_init(&ctx->mutex, NULL);
    fv_set_ops(ctx);
    fv_ctx_track(c, 1);
    if (pthread_create(&c->thread, NULL, fv_nic_thread, c) != 0) {
        fv_ctx_track(c, 0);
        munmap(c->seg, sizeof(fv_seg_t));
        shm_unlink(c->seg_name);
        atomic_store(&fd->ctx[c->index].pid, 0);
        free(c);
        errno = EAGAIN;
        return NULL;
    }
    return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
    fv_ctx_t *c = fv_ctx_of(context);
    atomic_store(&c->stop, 1);
    fv_ring_doorbell(c->seg);
    pthread_join(c->thread, NULL);
    fv_ctx_track(c, 0);
    for (int i = 0; i < FV_MAX_CTX; i++) {
        if (c->peers[i].seg)
            munmap(c->peers[i].seg, sizeof(fv_seg_t));
        if (c->peers[i].pidfd >= 0)
            close(c->peers[i].pidfd);
    }
    atomic_store(&c->seg->pid, 0);
    munmap(c->seg, sizeof(fv_seg_t));
    shm_unlink(c->seg_name);
    atomic_store(&fv_dir()->ctx[c->index].pid, 0);
    free(c);
    return 0;
}

/*
 * The segment of directory context index whose generation ends in the
 * byte gen (what a QP number carries), mapped once;
 * *alive (when asked: it costs a system call) says whether its process
 * still runs (a dead host's NIC answers nothing). NULL when that context is gone or never existed.
 */
fv_seg_t *fv_peer_seg(fv_ctx_t *ctx, int index, uint32_t gen, int *alive)
{
    fv_dir_t *d = fv_dir();
    if (alive)
        *alive = 0;
    if (index < 0 || index >= FV_MAX_CTX)
        return NULL;
    fv_peer_t *p = &ctx->peers[index];
    if (p->seg && (p->gen & 0xff) != gen) {
        munmap(p->seg, sizeof(fv_seg_t));
        p->seg = NULL;
        if (p->pidfd >= 0)
            close(p->pidfd);
        p->pidfd = -1;
    }
    if (!p->seg) {
        uint32_t full = atomic_load(&d->ctx[index].gen);
        if ((full & 0xff) != gen || atomic_load(&d->ctx[index].pid) == 0)
            return NULL;
        char name[96];
        snprintf(name, sizeof name, "/%s-c%d-g%u", fabric, index, full);
        int fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0)
            return NULL;
        void *m = mmap(NULL, sizeof(fv_seg_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED)
            return NULL;
        p->seg = m;
        p->gen = full;
        p->pidfd = (int)syscall(SYS_pidfd_open, atomic_load(&p->seg->pid), 0);
    }
    if (!alive)
        return p->seg;
    int32_t pid = atomic_load(&p->seg->pid);
    struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};
    /* A pidfd turns readable once the process exits, zombie or not. */
    *alive = pid != 0 && (p->pidfd >= 0 ? poll(&pf, 1, 0) == 0 : pid_alive(pid));
    return p->seg;
}

void fv_ring_doorbell(fv_seg_t *seg)
{
    atomic_fetch_add(&seg->doorbell, 1);
    if (atomic_load(&seg->sleeping))
        syscall(SYS_futex, &seg->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
    fv_ctx_t *c = fv_ctx_of(context);
    memset(a, 0, sizeof *a);
    snprintf(a->fw_ver, sizeof a->fw_ver, "0.0.0 (tutti stand-in)");
    a->node_guid = htobe64(0x0002c90300000000ull | (uint64_t)c->index);
    a->max_mr_size = ~0ull;
    a->page_size_cap = 0xfffff000;
    a->vendor_id = 0x02c9;
    a->max_qp = FV_MAX_QPS;
    a->max_qp_wr = 32768;
    a->max_sge = FV_MAX_SGE;
    a->max_cq = 1 << 16;
    a->max_cqe = 4194303;
    a->max_mr = 1 << 20;
    a->max_pd = 1 << 16;
    a->max_qp_rd_atom = a->max_qp_init_rd_atom = 16;
    a->phys_port_cnt = (uint8_t)c->dev->nports;
    return 0;
}

static int query_port(struct ibv_context *context, uint8_t port, struct ibv_port_attr *a)
{
    fv_ctx_t *c = fv_ctx_of(context);
    if (port < 1 || port > c->dev->nports)
        return EINVAL;
    memset(a, 0, sizeof *a);
    a->state = c->dev->down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
    a->phys_state = c->dev->down ? 3 : 5; /* Disabled / LinkUp */
    a->max_mtu = IBV_MTU_4096;
    a->active_mtu = c->dev->roce ? IBV_MTU_1024 : IBV_MTU_4096; /* RoCE: 1500-byte Ethernet */
    a->gid_tbl_len = c->dev->roce ? FV_ROCE_GIDS : 1;
    a->max_msg_sz = FV_MAX_MSG;
    a->pkey_tbl_len = 1;
    a->lid = c->dev->roce ? 0 : fv_lid(c->index, port);
    a->sm_lid = c->dev->roce ? 0 : 1;
    a->active_width = 2;  /* 4x */
    a->active_speed = 64; /* HDR: 50 Gb/s per lane */
    a->link_layer = c->dev->roce ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    return 0;
}

/* The exported entry (old ABI); the verbs_context op is what rdma-core's
 * inline ibv_query_port() prefers. */
int ibv_query_port(struct ibv_context *context, uint8_t port, struct _compat_ibv_port_attr *a)
{
    return query_port(context, port, (struct ibv_port_attr *)a);
}

int fv_query_port_ex(struct ibv_context *context, uint8_t port, struct ibv_port_attr *a, size_t len);
int fv_query_port_ex(struct ibv_context *context, uint8_t port, struct ibv_port_attr *a, size_t len)
{
    struct ibv_port_attr full;
    int rc = query_port(context, port, &full);
    if (!rc)
        memcpy(a, &full, len < sizeof full ? len : sizeof full);
    return rc;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port, int index, union ibv_gid *gid)
{
    fv_ctx_t *c = fv_ctx_of(context);
    int type;
    if (port < 1 || port > c->dev->nports || fv_gid(c->index, c->dev->roce, port, index, gid, &type))
        return -1;
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port, uint32_t index, struct ibv_gid_entry *e,
                      uint32_t flags, size_t entry_size)
{
    fv_ctx_t *c = fv_ctx_of(context);
    struct ibv_gid_entry full = {0};
    int type;
    if (flags || port < 1 || port > (uint32_t)c->dev->nports ||
        fv_gid(c->index, c->dev->roce, (int)port, (int)index, &full.gid, &type))
        return ENODATA;
    full.gid_index = index;
    full.port_num = port;
    full.gid_type = (uint32_t)type;
    memcpy(e, &full, entry_size < sizeof full ? entry_size : sizeof full);
    return 0;
}
