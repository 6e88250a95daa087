// SPDX-License-Identifier: MIT
// ProcessGroupTutti: torch.distributed's collectives on a tutti
// communicator, for CPU tensors and (through tutti's device path) CUDA ones.
// Each call is checked and planned on the caller's thread, then queued on
// the group's worker; the caller gets a Work at once (work.hpp).
#pragma once

#include "work.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace tt_torch {

class ProcessGroupTutti : public Base {
  public:
    // comm: the group's communicator, which it owns from now on.
    ProcessGroupTutti(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout,
                      tutti_comm_t comm);
    ~ProcessGroupTutti() override;
    const std::string getBackendName() const override { return "tutti"; }

    using Works = std::vector<c10::intrusive_ptr<c10d::Work>>;
    using Ptr = c10::intrusive_ptr<c10d::Work>;
    using Tensors = std::vector<at::Tensor>;
    using TensorLists = std::vector<std::vector<at::Tensor>>;

    Ptr broadcast(Tensors &tensors, const c10d::BroadcastOptions &opts = {}) override;
    Ptr allreduce(Tensors &tensors, const c10d::AllreduceOptions &opts = {}) override;
    Ptr allreduce_coalesced(Tensors &tensors, const c10d::AllreduceCoalescedOptions &opts = {}) override;
    Ptr reduce(Tensors &tensors, const c10d::ReduceOptions &opts = {}) override;
    Ptr allgather(TensorLists &outputs, Tensors &inputs, const c10d::AllgatherOptions &opts = {}) override;
    Ptr _allgather_base(at::Tensor &output, at::Tensor &input, const c10d::AllgatherOptions &opts = {}) override;
    Ptr allgather_coalesced(TensorLists &outputs, Tensors &inputs, const c10d::AllgatherOptions &opts = {}) override;
    Ptr gather(TensorLists &outputs, Tensors &inputs, const c10d::GatherOptions &opts = {}) override;
    Ptr scatter(Tensors &outputs, TensorLists &inputs, const c10d::ScatterOptions &opts = {}) override;
    Ptr reduce_scatter(Tensors &outputs, TensorLists &inputs, const c10d::ReduceScatterOptions &opts = {}) override;
    Ptr _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                             const c10d::ReduceScatterOptions &opts = {}) override;
    Ptr alltoall_base(at::Tensor &output, at::Tensor &input, std::vector<int64_t> &output_splits,
                      std::vector<int64_t> &input_splits, const c10d::AllToAllOptions &opts = {}) override;
    Ptr alltoall(Tensors &outputs, Tensors &inputs, const c10d::AllToAllOptions &opts = {}) override;
    Ptr barrier(const c10d::BarrierOptions &opts = {}) override;
    void monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all_ranks = false) override;
    Ptr send(Tensors &tensors, int dst, int tag) override;
    Ptr recv(Tensors &tensors, int src, int tag) override;
    Ptr recvAnysource(Tensors &tensors, int tag) override;
    void setSequenceNumberForGroup() override {}
    uint64_t getSequenceNumberForGroup() override { return issued_; }
    void startCoalescing() override;
#if TT_TORCH_BACKEND
    Ptr allreduce_sparse(Tensors &tensors, const c10d::AllreduceOptions &opts = {}) override
    {
        return allreduce(tensors, opts);
    }
    Ptr endCoalescing() override;
    Ptr allgather_into_tensor_coalesced(Tensors &outputs, Tensors &inputs,
                                        const c10d::AllgatherOptions &opts = {}) override;
    Ptr reduce_scatter_tensor_coalesced(Tensors &outputs, Tensors &inputs,
                                        const c10d::ReduceScatterOptions &opts = {}) override;
#else
    void endCoalescing(Works &reqs) override;
#endif

    // For the Python package: the communicator, ...
    tutti_comm_t comm() const { return comm_; }
    // ... what is queued run (the Work of a call queued after it) ...
    c10::intrusive_ptr<Work> drain();
    // ... the worker stopped and the communicator destroyed (collective) or
    // aborted (the others are not asked), its calls from then on failing ...
    void retire(bool destroy);
    // ... and DDP's compressed all-reduce of one bucket (compress false: dense).
    c10::intrusive_ptr<Work> allreduce_compressed(const at::Tensor &bucket, const tutti_compress_t &how,
                                                  tutti_ef_state_t ef, bool compress);

  private:
    // Queues run after the held isend/irecv of every group; outputs go in
    // the Work's result and future.
    c10::intrusive_ptr<Work> queue(c10d::OpType type, const Tensors &tensors, Tensors outputs,
                                   std::function<void()> run);
    void submit(const c10::intrusive_ptr<Work> &work, const Tensors &tensors, std::function<void()> run);
    // A Work done once every one of works is, failing as the first that failed.
    c10::intrusive_ptr<Work> all_of(std::vector<c10::intrusive_ptr<Work>> works, Tensors outputs);
    c10::intrusive_ptr<Work> hold(bool send, int peer, at::Tensor tensor);
    void check_rank(int peer, const char *call) const;

    c10::intrusive_ptr<c10d::Store> store_;
    std::chrono::milliseconds timeout_;
    tutti_comm_t comm_;
    std::shared_ptr<Worker> worker_;
    uint64_t issued_ = 0;
    int monitored_ = 0;
    bool coalescing_ = false;
    std::vector<c10::intrusive_ptr<Work>> coalesced_;
};

// The collectives that are neither all-reduce nor all-gather (group_more.cpp):
// each returns the body the worker runs.
std::function<void()> alltoall_body(tutti_comm_t comm, at::Tensor output, at::Tensor input,
                                    std::vector<int64_t> out_counts, std::vector<int64_t> in_counts);
std::function<void()> sparse_allreduce_body(tutti_comm_t comm, at::Tensor tensor);

// Every rank but 0 checks in through the store and waits to be let
// through; rank 0 names those that did not arrive in time (monitor.cpp).
void monitored_barrier(c10d::Store &store, int rank, int size, int number, std::chrono::milliseconds timeout,
                       bool wait_all_ranks);

} // namespace tt_torch
