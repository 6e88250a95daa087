/* SPDX-License-Identifier: MIT */
/*
 * The core's TUTTI_* variables, each declared once: X(id, type, default,
 * help). Types: STR, INT (decimal), SIZE (bytes, K/M/G suffixes). Each
 * transport declares its own the same way, in its folder (its ops' .config);
 * tutti-info -e prints them all and tutti(7) documents them. An empty value
 * means the default, as an unset variable does.
 */

#define TT_CONFIG_TABLE(X)                                                                                   \
    X(LOG, STR, "warn", "log level: none, error, warn, info, debug, trace")                                  \
    X(LOG_SUBSYS, STR, "all", "comma-separated subsystems to log: init,coll,engine,net,config")              \
    X(LOG_PREFIX, STR, "none", "what goes before each log line, comma-separated: time,host,pid,tid; none")   \
    X(TIMEOUT, INT, "300", "seconds a blocking call may wait without progress before it fails")              \
    X(SPIN_US, INT, "200",                                                                                   \
      "microseconds a waiting rank polls before it sleeps in the kernel, when a core is free for it")        \
    X(TRANSPORTS, STR, "",                                                                                   \
      "transports to use, in priority order; default: every one built, in the order tutti-info -l lists")    \
    X(SOCKET_IFNAME, STR, "",                                                                                \
      "network interface for the bootstrap and tcp (default: first up, non-loopback)")                       \
    X(ALGO, STR, "", "force this algorithm wherever it serves the collective (tutti-info -A lists them)")    \
    X(ALGO_ALLREDUCE, STR, "", "force this all-reduce algorithm (over TUTTI_ALGO)")                          \
    X(ALGO_REDUCE_SCATTER, STR, "", "force this reduce-scatter algorithm (over TUTTI_ALGO)")                 \
    X(ALGO_ALLGATHER, STR, "", "force this all-gather algorithm (over TUTTI_ALGO)")                          \
    X(ALGO_BROADCAST, STR, "", "force this broadcast algorithm (over TUTTI_ALGO)")                           \
    X(ALGO_REDUCE, STR, "", "force this reduce algorithm (over TUTTI_ALGO)")                                 \
    X(ALGO_ALLTOALL, STR, "", "force this all-to-all algorithm (over TUTTI_ALGO)")                           \
    X(ALGO_BARRIER, STR, "", "force this barrier algorithm (over TUTTI_ALGO)")                               \
    X(TUNING_FILE, STR, "", "cost-model parameters per link class (tutti-algorithms(7)); default: built in") \
    X(DETERMINISTIC, INT, "0",                                                                               \
      "1: reductions add in rank order, giving the same bits whatever the algorithm, transport or layout")   \
    X(SLICE_BYTES, SIZE, "0", "bytes of one pipeline slice of a rank's chunk; 0: the tuner picks")           \
    X(PIPELINE, INT, "4", "slices in flight (and tcp sockets / shm queues per peer), 1..16")                 \
    X(CUDA_GATE, STR, "auto",                                                                                \
      "how a device call holds the caller's stream: auto (stream memory operations, else a kernel), "        \
      "memops, "                                                                                             \
      "kernel")                                                                                              \
    X(DEVICE_STAGING_BYTES, SIZE, "64M",                                                                     \
      "bytes of pinned host memory per communicator for staged device calls, allocated at its first one")    \
    X(TOPO_FILE, STR, "", "hwloc XML export read instead of this machine's topology (GPU link classes)")     \
    X(REDUCE_ISA, STR, "auto", "reduction kernels: auto, portable, avx2, avx512, avx512bf16")                \
    X(KEY, STR, "", "32 hex digits: the job key (set by tutti-run; optional under torchrun and srun)")       \
    X(ROOT_ADDR, STR, "", "host:port of the bootstrap root (set by tutti-run; optional under srun)")         \
    X(ROOT_FD, INT, "-1", "listening socket inherited by rank 0 from tutti-run")                             \
    X(ROOT_ADDRS, STR, "",                                                                                   \
      "host:port of each bootstrap root, comma-separated, for a join over several (tutti-run --roots)")     \
    X(RANK, INT, "-1", "this process's rank (set by tutti-run)")                                             \
    X(NRANKS, INT, "-1", "number of ranks (set by tutti-run)")                                               \
    X(LOCAL_RANK, INT, "-1", "rank among the ranks of this host (set by tutti-run)")                         \
    X(NODE_ID, INT, "-1", "host index this rank counts as (tutti-run --nodes); -1: real hostname")           \
    X(ROOT_PORT_OFFSET, INT, "1", "under torchrun, tutti's root listens on MASTER_PORT plus this")           \
    X(LIBRARY, STR, "", "path of the libtutti.so.0 the Python package loads (read by the package only)")

/* The most slices in flight (TUTTI_PIPELINE); transports size their
 * per-peer arrays by it (TT_MAX_CHANNELS). */
#define TT_CFG_PIPELINE_MAX 16

/*
 * What a variable allows beyond its type, as designated initializers of a
 * tt_config_rule_t (env_config.h); variables not listed take any value of
 * their type. .min and .max bound INT and SIZE values (inclusive; .max 0:
 * no bound), .zero_ok allows 0 below .min, .multiple is what a SIZE must be
 * a multiple of. A STR must be one of .words (comma-separated), or with
 * .list a comma-separated list of them, or .hex hex digits, or with
 * .hostport "host:port". .agreed: the ranks must set it alike
 * (TT_CFG_AGREE_JOB or _HOST). Checked when a communicator is created: each
 * value that breaks its rule is logged once, naming what is allowed.
 */
#define TT_CONFIG_RULES(R)                                                                                   \
    R(LOG, .words = "none,error,warn,info,debug,trace")                                                      \
    R(LOG_SUBSYS, .words = "all,init,coll,engine,net,config", .list = 1)                                     \
    R(LOG_PREFIX, .words = "none,time,host,pid,tid", .list = 1)                                              \
    R(TIMEOUT, .min = 1, .max = 100000000)                                                                   \
    R(SPIN_US, .min = 0, .max = 1000000)                                                                     \
    R(DETERMINISTIC, .min = 0, .max = 1)                                                                     \
    R(SLICE_BYTES, .min = 64, .zero_ok = 1)                                                                  \
    R(PIPELINE, .min = 1, .max = TT_CFG_PIPELINE_MAX, .agreed = TT_CFG_AGREE_JOB)                            \
    R(DEVICE_STAGING_BYTES, .min = 1 << 16, .max = (int64_t)1 << 34, .multiple = 4096)                       \
    R(CUDA_GATE, .words = "auto,memops,kernel")                                                              \
    R(REDUCE_ISA, .words = "auto,portable,avx2,avx512,avx512bf16")                                           \
    R(KEY, .hex = 32)                                                                                        \
    R(ROOT_ADDR, .hostport = 1)                                                                              \
    R(ROOT_FD, .min = -1, .max = 1 << 30)                                                                    \
    R(RANK, .min = -1, .max = 1 << 30)                                                                       \
    R(NRANKS, .min = -1, .max = 1 << 30)                                                                     \
    R(LOCAL_RANK, .min = -1, .max = 1 << 30)                                                                 \
    R(NODE_ID, .min = -1, .max = 1 << 30)                                                                    \
    R(ROOT_PORT_OFFSET, .min = 1, .max = 65535)
