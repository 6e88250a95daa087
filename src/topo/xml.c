/* SPDX-License-Identifier: MIT */
/*
 * A reader for hwloc's XML exports (formats 2 and 3): just enough XML to walk
 * the <object> tree, its <info> tags and the NVLinkBandwidth distance
 * matrix. It needs no hwloc, so topology tests run on any machine.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

#define MAX_NESTING 64
#define MAX_ATTRS 24
#define NVLINK_MBPS 25000 /* one NVLink's bandwidth as hwloc reports it, MB/s */

typedef struct {
    char name[24];
    char value[160];
} attr_t;

typedef struct {
    char tag[24];
    int closing, self_closing;
    int nattrs;
    attr_t attrs[MAX_ATTRS];
} tag_t;

static const char *attr(const tag_t *t, const char *name)
{
    for (int i = 0; i < t->nattrs; i++)
        if (strcmp(t->attrs[i].name, name) == 0)
            return t->attrs[i].value;
    return NULL;
}

/* Reads the tag starting at *p (just after '<'); leaves *p after '>'. */
static int read_tag(const char **p, tag_t *t)
{
    const char *s = *p;
    memset(t, 0, sizeof *t);
    if (*s == '/') {
        t->closing = 1;
        s++;
    }
    size_t n = 0;
    while (*s && !isspace((unsigned char)*s) && *s != '>' && *s != '/') {
        if (n + 1 < sizeof t->tag)
            t->tag[n++] = *s;
        s++;
    }
    for (;;) {
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '/' && s[1] == '>') {
            t->self_closing = 1;
            *p = s + 2;
            return 0;
        }
        if (*s == '>') {
            *p = s + 1;
            return 0;
        }
        if (!*s)
            return -1;
        attr_t a = {{0}, {0}};
        n = 0;
        while (*s && *s != '=' && !isspace((unsigned char)*s)) {
            if (n + 1 < sizeof a.name)
                a.name[n++] = *s;
            s++;
        }
        while (isspace((unsigned char)*s) || *s == '=')
            s++;
        if (*s != '"')
            return -1;
        s++;
        n = 0;
        while (*s && *s != '"') {
            if (n + 1 < sizeof a.value)
                a.value[n++] = *s;
            s++;
        }
        if (!*s)
            return -1;
        s++;
        if (t->nattrs < MAX_ATTRS)
            t->attrs[t->nattrs++] = a;
    }
}

/* hwloc bitmap "0x000000ff,0xffffff00" (32-bit words, highest first) to a
 * CPU list "8-39"; also returns the first set bit. */
static int bitmap_to_list(const char *text, char *out, size_t len)
{
    unsigned words[64];
    int nwords = 0, first = -1;
    for (const char *s = text; *s && nwords < 64;) {
        words[nwords++] = (unsigned)strtoul(s, NULL, 16);
        s = strchr(s, ',');
        if (!s)
            break;
        s++;
    }
    size_t used = 0;
    out[0] = '\0';
    int start = -1, nbits = nwords * 32;
    for (int b = 0; b <= nbits; b++) {
        int set = b < nbits && (words[nwords - 1 - b / 32] >> (b % 32) & 1);
        if (set && first < 0)
            first = b;
        if (set && start < 0)
            start = b;
        if (!set && start >= 0 && used < len) {
            used += (size_t)snprintf(out + used, len - used, "%s%d", used ? "," : "", start);
            if (b - 1 > start && used < len)
                used += (size_t)snprintf(out + used, len - used, "-%d", b - 1);
            start = -1;
        }
    }
    return first;
}

/* What the reader remembers of each open <object>. */
typedef struct {
    char type[16];
    int dev; /* index into devs for a GPU or NIC, else -1 */
    long gp_index;
    int numa; /* first node of its nodeset; -1 for I/O objects */
    char cpus[64];
    char bridge[TT_TOPO_LABEL]; /* a Bridge's label */
} frame_t;

/* Objects the NVLink matrix names, by gp_index: a GPU device or another
 * endpoint (an NVSwitch). */
typedef struct {
    long gp_index;
    int dev; /* -1: not one of ours (a switch) */
} gpref_t;

typedef struct {
    tt_topo_t *t;
    frame_t stack[MAX_NESTING];
    int depth;
    gpref_t refs[4 * TT_TOPO_MAX_DEVS];
    int nrefs;
    /* the NVLinkBandwidth matrix while it is read */
    int in_nvlink, in_indexes, in_values;
    long idx[2 * TT_TOPO_MAX_DEVS];
    int nidx;
    unsigned long long *values;
    size_t nvalues, values_cap;
} reader_t;

static void add_ref(reader_t *r, long gp, int dev)
{
    if (r->nrefs < (int)(sizeof r->refs / sizeof r->refs[0]))
        r->refs[r->nrefs++] = (gpref_t){gp, dev};
}

static int ref_dev(const reader_t *r, long gp, int *known)
{
    for (int i = 0; i < r->nrefs; i++)
        if (r->refs[i].gp_index == gp) {
            *known = 1;
            return r->refs[i].dev;
        }
    *known = 0;
    return -1;
}

static int is_gpu(unsigned cls, unsigned vendor)
{
    /* 3D and VGA controllers from the GPU makers (not BMC display chips). */
    return (cls == 0x0302 || cls == 0x0300) && (vendor == 0x10de || vendor == 0x1002);
}

static int is_nic(unsigned cls)
{
    return cls >> 8 == 0x02; /* ethernet 0200, infiniband 0207, other 0280 */
}

static void open_object(reader_t *r, const tag_t *tag)
{
    tt_topo_t *t = r->t;
    frame_t f = {.dev = -1, .numa = -1};
    const char *type = attr(tag, "type"), *gp = attr(tag, "gp_index"), *nodeset = attr(tag, "nodeset");
    snprintf(f.type, sizeof f.type, "%s", type ? type : "");
    f.gp_index = gp ? strtol(gp, NULL, 10) : -1;
    if (nodeset) {
        const char *cpuset = attr(tag, "cpuset");
        char scratch[64];
        f.numa = bitmap_to_list(nodeset, scratch, sizeof scratch);
        if (cpuset)
            bitmap_to_list(cpuset, f.cpus, sizeof f.cpus);
    } else if (r->depth > 0) { /* I/O objects inherit their locality */
        f.numa = r->stack[r->depth - 1].numa;
        memcpy(f.cpus, r->stack[r->depth - 1].cpus, sizeof f.cpus);
    }
    if (strcmp(f.type, "Package") == 0)
        t->npackages++;
    else if (strcmp(f.type, "NUMANode") == 0)
        t->nnuma++;
    else if (strcmp(f.type, "Core") == 0)
        t->ncores++;
    else if (strcmp(f.type, "PU") == 0)
        t->npus++;
    else if (strcmp(f.type, "Bridge") == 0) {
        const char *bt = attr(tag, "bridge_type"), *busid = attr(tag, "pci_busid"),
                   *range = attr(tag, "bridge_pci");
        if (bt && bt[0] == '0') /* from the host: a host bridge, named by the buses below it */
            snprintf(f.bridge, sizeof f.bridge, "host %s", range ? range : "?");
        else
            snprintf(f.bridge, sizeof f.bridge, "%s", busid ? busid : "?");
    } else if (strcmp(f.type, "PCIDev") == 0) {
        const char *pci_type = attr(tag, "pci_type"), *busid = attr(tag, "pci_busid");
        unsigned cls = 0, vendor = 0, device = 0;
        if (pci_type)
            sscanf(pci_type, "%x [%x:%x]", &cls, &vendor, &device);
        int ours = is_gpu(cls, vendor) || is_nic(cls);
        if (ours && t->ndevs < TT_TOPO_MAX_DEVS) {
            tt_topo_dev_t *d = &t->devs[t->ndevs];
            memset(d, 0, sizeof *d);
            d->kind = is_nic(cls) ? TT_DEV_NIC : TT_DEV_GPU;
            d->vendor = vendor;
            d->pci_class = cls;
            d->numa = f.numa;
            snprintf(d->cpus, sizeof d->cpus, "%s", f.cpus);
            snprintf(d->busid, sizeof d->busid, "%s", busid ? busid : "?");
            for (int i = 0; i < r->depth; i++)
                if (r->stack[i].bridge[0] && d->depth < TT_TOPO_MAX_DEPTH)
                    memcpy(d->bridges[d->depth++], r->stack[i].bridge, TT_TOPO_LABEL);
            f.dev = t->ndevs++;
        }
        add_ref(r, f.gp_index, f.dev);
    } else if (strcmp(f.type, "OSDev") == 0 && r->depth > 0) {
        int parent = r->stack[r->depth - 1].dev;
        const char *name = attr(tag, "name");
        if (parent >= 0 && name && !t->devs[parent].os_name[0])
            snprintf(t->devs[parent].os_name, sizeof t->devs[parent].os_name, "%s", name);
        add_ref(r, f.gp_index, parent);
    }
    if (r->depth < MAX_NESTING)
        r->stack[r->depth] = f;
    r->depth++;
}

/* Numbers in the text of <indexes> ("OSDev:802 PCIDev:449") or <u64values>. */
static void read_text(reader_t *r, const char *s, const char *end)
{
    while (s < end) {
        while (s < end && isspace((unsigned char)*s))
            s++;
        if (s >= end)
            break;
        const char *word = s;
        while (s < end && !isspace((unsigned char)*s))
            s++;
        if (r->in_indexes) {
            const char *colon = memchr(word, ':', (size_t)(s - word));
            if (colon && r->nidx < (int)(sizeof r->idx / sizeof r->idx[0]))
                r->idx[r->nidx++] = strtol(colon + 1, NULL, 10);
        } else if (r->in_values) {
            if (r->nvalues == r->values_cap) {
                size_t cap = r->values_cap ? 2 * r->values_cap : 256;
                unsigned long long *grown = realloc(r->values, cap * sizeof *grown);
                if (!grown)
                    return;
                r->values = grown;
                r->values_cap = cap;
            }
            r->values[r->nvalues++] = strtoull(word, NULL, 10);
        }
    }
}

/* NVLinks between GPUs: direct ones from their bandwidth, and, where both
 * GPUs reach NVSwitches, as many as the one with fewer switch links has. */
static void apply_nvlinks(reader_t *r)
{
    tt_topo_t *t = r->t;
    int n = r->nidx, dev[2 * TT_TOPO_MAX_DEVS];
    if ((size_t)n * (size_t)n > r->nvalues)
        return;
    unsigned long long to_switches[TT_TOPO_MAX_DEVS] = {0};
    for (int i = 0; i < n; i++) {
        int known;
        dev[i] = ref_dev(r, r->idx[i], &known);
        if (dev[i] >= 0 && t->devs[dev[i]].kind != TT_DEV_GPU)
            dev[i] = -1;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            unsigned long long bw = r->values[(size_t)i * (size_t)n + (size_t)j];
            if (dev[i] >= 0 && dev[j] >= 0 && i != j)
                t->nvlinks[dev[i]][dev[j]] += (int)(bw / NVLINK_MBPS);
            else if (dev[i] >= 0 && dev[j] < 0)
                to_switches[dev[i]] += bw;
        }
    for (int a = 0; a < t->ndevs; a++)
        for (int b = 0; b < t->ndevs; b++)
            if (a != b && to_switches[a] && to_switches[b])
                t->nvlinks[a][b] +=
                    (int)((to_switches[a] < to_switches[b] ? to_switches[a] : to_switches[b]) / NVLINK_MBPS);
}

tutti_status_t tt_topo_parse_xml(tt_topo_t *t, const char *xml, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    snprintf(t->source, sizeof t->source, "hwloc XML");
    reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return TUTTI_ERR_NO_MEMORY;
    }
    r->t = t;
    int seen_topology = 0;
    tutti_status_t st = TUTTI_SUCCESS;
    for (const char *p = xml; *p;) {
        const char *lt = strchr(p, '<');
        if (!lt)
            break;
        read_text(r, p, lt);
        p = lt + 1;
        if (*p == '?' || *p == '!') { /* declarations and comments */
            const char *gt = strchr(p, '>');
            p = gt ? gt + 1 : p + strlen(p);
            continue;
        }
        tag_t tag;
        if (read_tag(&p, &tag)) {
            snprintf(err, errlen, "malformed XML near byte %zu", (size_t)(lt - xml));
            st = TUTTI_ERR_CONFIG;
            break;
        }
        if (strcmp(tag.tag, "topology") == 0)
            seen_topology = 1;
        else if (strcmp(tag.tag, "object") == 0) {
            if (tag.closing) {
                r->depth -= r->depth > 0;
            } else if (r->depth >= MAX_NESTING) { /* open_object reads its parent's frame */
                snprintf(err, errlen, "objects nested more than %d deep near byte %zu", MAX_NESTING,
                         (size_t)(lt - xml));
                st = TUTTI_ERR_CONFIG;
                break;
            } else {
                open_object(r, &tag);
                if (tag.self_closing)
                    r->depth--;
            }
        } else if (strcmp(tag.tag, "info") == 0 && !tag.closing) {
            const char *name = attr(&tag, "name"), *value = attr(&tag, "value");
            if (name && value && strcmp(name, "DMIProductName") == 0 && !t->machine[0])
                snprintf(t->machine, sizeof t->machine, "%s", value);
            if (name && value && strcmp(name, "HostName") == 0 && !t->host[0])
                snprintf(t->host, sizeof t->host, "%s", value);
        } else if (strncmp(tag.tag, "distances2", 10) == 0) {
            const char *name = attr(&tag, "name");
            if (tag.closing) {
                if (r->in_nvlink)
                    apply_nvlinks(r);
                r->in_nvlink = 0;
            } else if (name && strcmp(name, "NVLinkBandwidth") == 0) {
                r->in_nvlink = 1;
                r->nidx = 0;
                r->nvalues = 0;
            }
        } else if (strcmp(tag.tag, "indexes") == 0) {
            r->in_indexes = r->in_nvlink && !tag.closing;
        } else if (strcmp(tag.tag, "u64values") == 0) {
            r->in_values = r->in_nvlink && !tag.closing;
        }
    }
    free(r->values);
    free(r);
    if (st == TUTTI_SUCCESS && !seen_topology) {
        snprintf(err, errlen, "not an hwloc topology (no <topology> element)");
        st = TUTTI_ERR_CONFIG;
    }
    if (st == TUTTI_SUCCESS)
        tt_topo_finish(t);
    return st;
}

tutti_status_t tt_topo_load_xml(tt_topo_t *t, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return TUTTI_ERR_CONFIG;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                snprintf(err, errlen, "out of memory");
                return TUTTI_ERR_NO_MEMORY;
            }
            text = grown;
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!text) {
        snprintf(err, errlen, "%s: empty", path);
        return TUTTI_ERR_CONFIG;
    }
    text[len] = '\0';
    tutti_status_t st = tt_topo_parse_xml(t, text, err, errlen);
    free(text);
    if (st == TUTTI_SUCCESS)
        snprintf(t->source, sizeof t->source, "hwloc XML file");
    return st;
}
