/* SPDX-License-Identifier: MIT */
/*
 * Every TUTTI_* variable, declared once: X(id, type, default, help).
 * Types: STR, INT (decimal), SIZE (bytes, K/M/G suffixes).
 * tutti-info -e prints this table and tutti(7) documents it.
 * An empty value means the default, as an unset variable does.
 */
/* The verbs transport comes before tcp where it is built. */
#ifdef TT_HAVE_VERBS
#define TT_DEFAULT_TRANSPORTS "cuda_ipc,shm,verbs,tcp"
#else
#define TT_DEFAULT_TRANSPORTS "cuda_ipc,shm,tcp"
#endif

#define TT_CONFIG_TABLE(X)                                                                                   \
    X(LOG, STR, "warn", "log level: none, error, warn, info, debug, trace")                                  \
    X(LOG_SUBSYS, STR, "all", "comma-separated subsystems to log: init,coll,engine,net,config")              \
    X(LOG_PREFIX, STR, "none", "what goes before each log line, comma-separated: time,host,pid,tid; none")   \
    X(TIMEOUT, INT, "300", "seconds a blocking call may wait without progress before it fails")              \
    X(TRANSPORTS, STR, TT_DEFAULT_TRANSPORTS,                                                                \
      "transports to use, in priority order (cuda_ipc: device buffers; shm: same host; verbs: RDMA)")        \
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
    X(SHM_SLOT_BYTES, SIZE, "256K", "bytes of one shm queue slot")                                           \
    X(SHM_SLOTS, INT, "2", "slots in each shm queue (one queue per peer and slice in flight)")               \
    X(CUDA_IPC, INT, "1",                                                                                    \
      "1: device calls of ranks on one host run on the GPUs through cuda_ipc when all can; 0: staged")       \
    X(CUDA_GATE, STR, "auto",                                                                                \
      "how a device call holds the caller's stream: auto (stream memory operations, else a kernel), "        \
      "memops, "                                                                                             \
      "kernel")                                                                                              \
    X(IPC_WINDOW_BYTES, SIZE, "32M",                                                                         \
      "bytes of each rank's cuda_ipc window in GPU memory: two halves, one round of a direct run in each")   \
    X(DEVICE_STAGING_BYTES, SIZE, "64M",                                                                     \
      "bytes of pinned host memory per communicator for staged device calls, allocated at its first one")    \
    X(TOPO_FILE, STR, "", "hwloc XML export read instead of this machine's topology (GPU link classes)")     \
    X(TCP_BUF_BYTES, SIZE, "4M", "socket send/receive buffer size for tcp")                                  \
    X(IB_HCA, STR, "",                                                                                       \
      "RDMA devices[:port] for verbs, comma-separated prefixes (=: exact names, ^: all but these); "         \
      "default: the active port nearest the rank's GPU or CPU")                                              \
    X(IB_GID_INDEX, INT, "-1",                                                                               \
      "GID index for verbs (RoCE; InfiniBand across subnets); -1: a RoCE v2 IPv4 GID")                       \
    X(IB_QPS_PER_PEER, INT, "2",                                                                             \
      "RC queue pairs per peer for verbs, 1..8; slices in flight spread over them")                          \
    X(IB_TIMEOUT, INT, "18", "verbs ACK timeout: 4.096 us x 2^value per retry (1..31)")                      \
    X(IB_RETRY_CNT, INT, "7", "verbs transport retries before a peer counts as lost (0..7)")                 \
    X(IB_SLOT_BYTES, SIZE, "128K", "bytes of one verbs receive slot (a multiple of 64, >= 128)")             \
    X(IB_SLOTS, INT, "4", "verbs receive slots per peer and slice in flight (the sender's credits)")         \
    X(IB_ZCOPY_BYTES, SIZE, "128K",                                                                          \
      "verbs messages from this size are written straight into the receiver's buffer; 0: never")             \
    X(IB_REG_CACHE, INT, "1",                                                                                \
      "1: keep user-buffer registrations between calls while tutti can see their memory released; 0: never") \
    X(IB_GDR, STR, "auto", "GPUDirect RDMA for device buffers: 1, 0, or auto (where driver and NIC allow)")  \
    X(IBVERBS_LIB, STR, "",                                                                                  \
      "testing hook: the libibverbs to open instead of libibverbs.so.1 (the test suites' stand-in)")         \
    X(REDUCE_ISA, STR, "auto", "reduction kernels: auto, portable, avx2, avx512, avx512bf16")                \
    X(KEY, STR, "", "32 hex digits: the job key (set by tutti-run; optional under torchrun and srun)")       \
    X(ROOT_ADDR, STR, "", "host:port of the bootstrap root (set by tutti-run; optional under srun)")         \
    X(ROOT_FD, INT, "-1", "listening socket inherited by rank 0 from tutti-run")                             \
    X(RANK, INT, "-1", "this process's rank (set by tutti-run)")                                             \
    X(NRANKS, INT, "-1", "number of ranks (set by tutti-run)")                                               \
    X(LOCAL_RANK, INT, "-1", "rank among the ranks of this host (set by tutti-run)")                         \
    X(NODE_ID, INT, "-1", "host index this rank counts as (tutti-run --nodes); -1: real hostname")           \
    X(ROOT_PORT_OFFSET, INT, "1", "under torchrun, tutti's root listens on MASTER_PORT plus this")

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
 * .hostport "host:port". Checked when a communicator is created: each
 * value that breaks its rule is logged once, naming what is allowed.
 */
#define TT_CONFIG_RULES(R)                                                                                   \
    R(LOG, .words = "none,error,warn,info,debug,trace")                                                      \
    R(LOG_SUBSYS, .words = "all,init,coll,engine,net,config", .list = 1)                                     \
    R(LOG_PREFIX, .words = "none,time,host,pid,tid", .list = 1)                                              \
    R(TIMEOUT, .min = 1, .max = 100000000)                                                                   \
    R(DETERMINISTIC, .min = 0, .max = 1)                                                                     \
    R(SLICE_BYTES, .min = 64, .zero_ok = 1)                                                                  \
    R(PIPELINE, .min = 1, .max = TT_CFG_PIPELINE_MAX)                                                        \
    R(SHM_SLOT_BYTES, .min = 64, .max = 1 << 30, .multiple = 64)                                             \
    R(SHM_SLOTS, .min = 1, .max = 1024)                                                                      \
    R(CUDA_IPC, .min = 0, .max = 1)                                                                          \
    R(IPC_WINDOW_BYTES, .min = 1 << 16, .max = 1 << 30, .multiple = 512)                                     \
    R(DEVICE_STAGING_BYTES, .min = 1 << 16, .max = (int64_t)1 << 34, .multiple = 4096)                       \
    R(TCP_BUF_BYTES, .min = 0, .max = 1 << 30)                                                               \
    R(CUDA_GATE, .words = "auto,memops,kernel")                                                              \
    R(IB_GID_INDEX, .min = -1, .max = 65535)                                                                 \
    R(IB_QPS_PER_PEER, .min = 1, .max = 8)                                                                   \
    R(IB_TIMEOUT, .min = 1, .max = 31)                                                                       \
    R(IB_RETRY_CNT, .min = 0, .max = 7)                                                                      \
    R(IB_SLOT_BYTES, .min = 128, .max = 1 << 30, .multiple = 64)                                             \
    R(IB_SLOTS, .min = 1, .max = 4096)                                                                       \
    R(IB_ZCOPY_BYTES, .min = 0)                                                                              \
    R(IB_REG_CACHE, .min = 0, .max = 1)                                                                      \
    R(IB_GDR, .words = "auto,1,0")                                                                           \
    R(REDUCE_ISA, .words = "auto,portable,avx2,avx512,avx512bf16")                                           \
    R(KEY, .hex = 32)                                                                                        \
    R(ROOT_ADDR, .hostport = 1)                                                                              \
    R(ROOT_FD, .min = -1, .max = 1 << 30)                                                                    \
    R(RANK, .min = -1, .max = 1 << 30)                                                                       \
    R(NRANKS, .min = -1, .max = 1 << 30)                                                                     \
    R(LOCAL_RANK, .min = -1, .max = 1 << 30)                                                                 \
    R(NODE_ID, .min = -1, .max = 1 << 30)                                                                    \
    R(ROOT_PORT_OFFSET, .min = 1, .max = 65535)
