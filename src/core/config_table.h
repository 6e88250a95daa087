/* SPDX-License-Identifier: MIT */
/*
 * Every TUTTI_* variable, declared once: X(id, type, default, help).
 * Types: STR, INT (decimal), SIZE (bytes, K/M/G suffixes).
 * tutti-info -e prints this table and tutti(7) documents it.
 */
#define TT_CONFIG_TABLE(X)                                                                                   \
    X(LOG, STR, "warn", "log level: none, error, warn, info, debug, trace")                                  \
    X(LOG_SUBSYS, STR, "all", "comma-separated subsystems to log: init,coll,engine,net,config")              \
    X(TIMEOUT, INT, "300", "seconds a blocking call may wait without progress before it fails")              \
    X(TRANSPORTS, STR, "cuda_ipc,shm,tcp",                                                                   \
      "transports to use, in priority order (cuda_ipc: device buffers; shm: same host only)")                \
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
      "1: device calls of ranks on one host run on the GPUs through cuda_ipc when all can; 0: staged")     \
    X(IPC_SLOT_BYTES, SIZE, "1M", "bytes of one cuda_ipc FIFO slot (in GPU memory)")                         \
    X(IPC_SLOTS, INT, "2", "slots in each cuda_ipc FIFO ring (one ring per peer and slice in flight)")      \
    X(TOPO_FILE, STR, "", "hwloc XML export read instead of this machine's topology (GPU link classes)")    \
    X(TCP_BUF_BYTES, SIZE, "4M", "socket send/receive buffer size for tcp")                                  \
    X(REDUCE_ISA, STR, "auto", "reduction kernels: auto, portable, avx2, avx512, avx512bf16")                \
    X(KEY, STR, "", "32 hex digits: the job key (set by tutti-run; optional under torchrun)")                \
    X(ROOT_ADDR, STR, "", "host:port of the bootstrap root (set by tutti-run)")                              \
    X(ROOT_FD, INT, "-1", "listening socket inherited by rank 0 from tutti-run")                             \
    X(RANK, INT, "-1", "this process's rank (set by tutti-run)")                                             \
    X(NRANKS, INT, "-1", "number of ranks (set by tutti-run)")                                               \
    X(LOCAL_RANK, INT, "-1", "rank among the ranks of this host (set by tutti-run)")                         \
    X(NODE_ID, INT, "-1", "host index this rank counts as (tutti-run --nodes); -1: real hostname")           \
    X(ROOT_PORT_OFFSET, INT, "1", "under torchrun, tutti's root listens on MASTER_PORT plus this")
