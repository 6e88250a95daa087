// SPDX-License-Identifier: MIT
// The group itself, and the reductions and gathers: all-reduce (every
// ReduceOp, sparse, coalesced), broadcast, reduce, the all-gathers and
// reduce-scatters, the barrier, and coalescing.
#include "group.hpp"

#include <set>

#include <ATen/ATen.h>

namespace tt_torch {

namespace {

// What tutti writes into: t itself when contiguous, else a copy that
// back() writes to t.
struct Out {
    at::Tensor tensor, buf, view;
    explicit Out(const at::Tensor &t) : tensor(t), buf(t.contiguous()), view(data_view(buf)) {}
    void back() const
    {
        if (!buf.is_same(tensor))
            tensor.copy_(buf);
    }
};

// A 1-D run of data_view elements read as `like` (its dtype and shape).
at::Tensor as_like(const at::Tensor &run, const at::Tensor &like)
{
    if (like.is_complex())
        return at::view_as_complex(run.reshape({-1, 2})).view(like.sizes());
    return run.view(like.scalar_type()).view(like.sizes());
}

void reduce_into(tutti_comm_t comm, Plan &p, int root)
{
    int rank = 0;
    tutti_comm_rank(comm, &rank);
    p.prepare();
    if (p.bitwise) {
        at::Tensor folded = fold_bitwise(p.bitwise, gather_all(comm, p.arg));
        if (root < 0 || root == rank)
            p.arg.copy_(folded);
    } else if (root < 0) {
        check(tutti_allreduce(p.arg.data_ptr(), p.arg.data_ptr(), p.arg.numel(), dtype_of(p.arg, "all_reduce"), p.op,
                              comm, nullptr),
              comm, "tutti_allreduce");
    } else {
        void *out = root == rank ? p.arg.data_ptr() : nullptr;
        check(tutti_reduce(p.arg.data_ptr(), out, p.arg.numel(), dtype_of(p.arg, "reduce"), p.op, root, comm, nullptr),
              comm, "tutti_reduce");
    }
    if (root < 0 || root == rank)
        p.finish();
}

std::vector<at::Tensor> joined(std::initializer_list<std::vector<at::Tensor>> lists)
{
    std::vector<at::Tensor> all;
    for (const auto &l : lists)
        all.insert(all.end(), l.begin(), l.end());
    return all;
}

} // namespace

ProcessGroupTutti::ProcessGroupTutti(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                     std::chrono::milliseconds timeout, tutti_comm_t comm)
    : Base(rank, size), store_(std::move(store)), timeout_(timeout), comm_(comm),
      worker_(std::make_shared<Worker>(comm, "tutti-r" + std::to_string(rank)))
{
}

// The worker runs what is queued and stops. The communicator is left as
// it is: destroying it is collective and aborting it fails the peers' calls
// that are still under way; the process's exit releases it.
ProcessGroupTutti::~ProcessGroupTutti()
{
    worker_->stop();
}

void ProcessGroupTutti::check_rank(int peer, const char *call) const
{
    TORCH_CHECK_VALUE(peer >= 0 && peer < getSize(), "tutti: ", call, " to or from rank ", peer, ", but the group has ",
                      getSize(), " ranks");
}

c10::intrusive_ptr<Work> ProcessGroupTutti::queue(c10d::OpType type, const Tensors &tensors, Tensors outputs,
                                                  std::function<void()> run)
{
    auto work = c10::make_intrusive<Work>(getRank(), type, std::move(outputs));
    submit(work, tensors, std::move(run));
    return work;
}

void ProcessGroupTutti::submit(const c10::intrusive_ptr<Work> &work, const Tensors &tensors, std::function<void()> run)
{
    TORCH_CHECK(comm_ != nullptr, "tutti: a call on a process group that was destroyed (or shrunk, or grown)");
    Worker::flush_all();
    worker_->submit(work, std::move(run), fence_for(tensors));
    issued_++;
    if (coalescing_)
        coalesced_.push_back(work);
}

c10::intrusive_ptr<Work> ProcessGroupTutti::all_of(std::vector<c10::intrusive_ptr<Work>> works, Tensors outputs)
{
    // Queued after works on the same thread, so they have run when it does.
    return queue(TT_OP_COALESCED, {}, std::move(outputs), [works] {
        for (const auto &w : works)
            if (auto e = w->exception())
                std::rethrow_exception(e);
    });
}

void ProcessGroupTutti::startCoalescing()
{
    Worker::flush_all();
    coalescing_ = true;
    coalesced_.clear();
}

// What was issued since startCoalescing completes with the Work returned
// here: its held isend/irecv go out, and it is done when they and every
// collective issued meanwhile are.
#if TT_TORCH_BACKEND
ProcessGroupTutti::Ptr ProcessGroupTutti::endCoalescing()
{
    auto batch = worker_->flush();
    coalescing_ = false;
    auto works = std::move(coalesced_);
    coalesced_.clear();
    if (batch)
        works.push_back(batch);
    return all_of(std::move(works), {});
}
#else
void ProcessGroupTutti::endCoalescing(Works &reqs)
{
    (void)reqs; // the isend/irecv Works among them are the ones held
    worker_->flush();
    coalescing_ = false;
    coalesced_.clear();
}
#endif

ProcessGroupTutti::Ptr ProcessGroupTutti::allreduce(Tensors &tensors, const c10d::AllreduceOptions &opts)
{
    tutti_comm_t comm = comm_;
    if (!tensors.empty() && tensors[0].is_sparse()) {
        TORCH_CHECK_VALUE(opts.reduceOp == c10d::ReduceOp::SUM, "tutti: all_reduce of a sparse tensor takes "
                                                                "ReduceOp.SUM only");
        std::vector<std::function<void()>> bodies;
        for (auto &t : tensors)
            bodies.push_back(sparse_allreduce_body(comm, t));
        return queue(c10d::OpType::ALLREDUCE, tensors, tensors, [bodies] {
            for (const auto &b : bodies)
                b();
        });
    }
    auto plans = std::make_shared<std::vector<Plan>>();
    for (auto &t : tensors)
        plans->push_back(plan_reduce(t, opts.reduceOp));
    return queue(c10d::OpType::ALLREDUCE, tensors, tensors, [comm, plans] {
        for (auto &p : *plans)
            reduce_into(comm, p, -1);
    });
}

// Tensors of one dtype and a plain op go as one all-reduce, laid end to end,
// unless two share memory (one tensor twice): those run in turn, as the
// calls coalesced would one by one, so it is reduced twice.
ProcessGroupTutti::Ptr ProcessGroupTutti::allreduce_coalesced(Tensors &tensors,
                                                             const c10d::AllreduceCoalescedOptions &opts)
{
    bool one = !tensors.empty();
    std::set<const void *> storages;
    for (const auto &t : tensors)
        one = one && !t.is_sparse() && t.scalar_type() == tensors[0].scalar_type() &&
              t.device() == tensors[0].device() && storages.insert(t.storage().unsafeGetStorageImpl()).second;
    if (!one)
        return allreduce(tensors, opts);
    std::vector<at::Tensor> flat;
    for (const auto &t : tensors)
        flat.push_back(t.reshape(-1));
    auto plan = std::make_shared<Plan>(plan_reduce(at::cat(flat), opts.reduceOp));
    tutti_comm_t comm = comm_;
    Tensors outs = tensors;
    return queue(c10d::OpType::ALLREDUCE_COALESCED, tensors, tensors, [comm, plan, outs] {
        reduce_into(comm, *plan, -1);
        int64_t at = 0;
        for (const auto &t : outs) {
            t.copy_(plan->tensor.narrow(0, at, t.numel()).view(t.sizes()));
            at += t.numel();
        }
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::broadcast(Tensors &tensors, const c10d::BroadcastOptions &opts)
{
    TORCH_CHECK_VALUE(tensors.size() == 1, "tutti: broadcast takes one tensor per process, got ", tensors.size());
    check_rank(opts.rootRank, "broadcast");
    auto out = std::make_shared<Out>(tensors[0]);
    tutti_comm_t comm = comm_;
    int root = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::BROADCAST, tensors, tensors, [comm, out, root] {
        void *p = out->view.data_ptr();
        check(tutti_broadcast(p, p, out->view.numel(), dtype_of(out->view, "broadcast"), root, comm, nullptr), comm,
              "tutti_broadcast");
        out->back();
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::reduce(Tensors &tensors, const c10d::ReduceOptions &opts)
{
    TORCH_CHECK_VALUE(tensors.size() == 1, "tutti: reduce takes one tensor per process, got ", tensors.size());
    check_rank(opts.rootRank, "reduce");
    auto plan = std::make_shared<Plan>(plan_reduce(tensors[0], opts.reduceOp));
    tutti_comm_t comm = comm_;
    int root = static_cast<int>(opts.rootRank);
    return queue(c10d::OpType::REDUCE, tensors, tensors, [comm, plan, root] { reduce_into(comm, *plan, root); });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::_allgather_base(at::Tensor &output, at::Tensor &input,
                                                         const c10d::AllgatherOptions &)
{
    TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(), "tutti: all_gather_into_tensor output has ",
                      output.numel(), " elements, want ", input.numel() * getSize());
    TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(), "tutti: all_gather_into_tensor output is ",
                     output.scalar_type(), ", input ", input.scalar_type());
    at::Tensor in = data_view(input);
    auto out = std::make_shared<Out>(output);
    tutti_comm_t comm = comm_;
    return queue(c10d::OpType::_ALLGATHER_BASE, {input, output}, {output}, [comm, in, out] {
        check(tutti_allgather(in.data_ptr(), out->view.data_ptr(), in.numel(), dtype_of(in, "all_gather"), comm,
                              nullptr),
              comm, "tutti_allgather");
        out->back();
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::allgather(TensorLists &outputs, Tensors &inputs,
                                                   const c10d::AllgatherOptions &)
{
    TORCH_CHECK_VALUE(inputs.size() == 1 && outputs.size() == 1, "tutti: all_gather takes one tensor per process");
    const at::Tensor &t = inputs[0];
    Tensors outs = outputs[0];
    TORCH_CHECK_VALUE(static_cast<int>(outs.size()) == getSize(), "tutti: all_gather needs ", getSize(),
                      " outputs, got ", outs.size());
    for (const auto &o : outs)
        TORCH_CHECK_VALUE(o.numel() == t.numel() && o.scalar_type() == t.scalar_type(), "tutti: all_gather needs ",
                          getSize(), " outputs of ", t.numel(), " elements of ", t.scalar_type(), " each");
    at::Tensor in = data_view(t);
    tutti_comm_t comm = comm_;
    int size = getSize();
    return queue(c10d::OpType::ALLGATHER, joined({inputs, outs}), outs, [comm, in, outs, size] {
        at::Tensor flat = at::empty({size * in.numel()}, in.options());
        check(tutti_allgather(in.data_ptr(), flat.data_ptr(), in.numel(), dtype_of(in, "all_gather"), comm, nullptr),
              comm, "tutti_allgather");
        for (int r = 0; r < size; r++)
            outs[r].copy_(as_like(flat.narrow(0, r * in.numel(), in.numel()), outs[r]));
    });
}

// outputs[q][i] gets rank q's inputs[i]: one all-gather of the inputs'
// bytes laid end to end (they may differ in dtype).
ProcessGroupTutti::Ptr ProcessGroupTutti::allgather_coalesced(TensorLists &outputs, Tensors &inputs,
                                                             const c10d::AllgatherOptions &)
{
    int p = getSize();
    bool ok = static_cast<int>(outputs.size()) == p;
    for (const auto &outs : outputs) {
        ok = ok && outs.size() == inputs.size();
        for (size_t i = 0; ok && i < inputs.size(); i++)
            ok = outs[i].numel() == inputs[i].numel() && outs[i].scalar_type() == inputs[i].scalar_type();
    }
    TORCH_CHECK_VALUE(ok, "tutti: all_gather_coalesced needs ", p, " output lists (one per rank), each of ",
                      inputs.size(), " tensors of the inputs' sizes and dtypes");
    std::vector<at::Tensor> bytes;
    std::vector<int64_t> sizes;
    for (const auto &t : inputs) {
        bytes.push_back(data_view(t).reshape(-1).view(at::kByte));
        sizes.push_back(bytes.back().numel());
    }
    at::Tensor flat = bytes.empty() ? at::empty({0}, at::kByte) : at::cat(bytes);
    auto outs = std::make_shared<TensorLists>(outputs);
    tutti_comm_t comm = comm_;
    Tensors all = inputs;
    for (const auto &o : outputs)
        all.insert(all.end(), o.begin(), o.end());
    return queue(c10d::OpType::ALLGATHER_COALESCED, all, {}, [comm, flat, sizes, outs, p] {
        at::Tensor gathered = at::empty({p * flat.numel()}, flat.options());
        check(tutti_allgather(flat.data_ptr(), gathered.data_ptr(), flat.numel(), TUTTI_UINT8, comm, nullptr), comm,
              "tutti_allgather");
        for (int q = 0; q < p; q++) {
            int64_t at = q * flat.numel();
            for (size_t i = 0; i < sizes.size(); i++) {
                at::Tensor &o = (*outs)[q][i];
                at::Tensor run = gathered.narrow(0, at, sizes[i]).clone(); // aligned for o's dtype
                o.copy_(as_like(run.view(data_view(o).scalar_type()), o));
                at += sizes[i];
            }
        }
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                              const c10d::ReduceScatterOptions &opts)
{
    TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(), "tutti: reduce_scatter_tensor input has ",
                      input.numel(), " elements, want ", output.numel() * getSize());
    TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(), "tutti: reduce_scatter_tensor output is ",
                     output.scalar_type(), ", input ", input.scalar_type());
    auto pin = std::make_shared<Plan>(plan_reduce(input, opts.reduceOp));
    auto pout = std::make_shared<Plan>(plan_reduce(output, opts.reduceOp));
    tutti_comm_t comm = comm_;
    int rank = getRank();
    return queue(c10d::OpType::_REDUCE_SCATTER_BASE, {input, output}, {output}, [comm, pin, pout, rank] {
        int64_t n = pout->arg.numel();
        pin->prepare();
        if (pin->bitwise) {
            at::Tensor folded = fold_bitwise(pin->bitwise, gather_all(comm, pin->arg)).reshape(-1);
            pout->arg.copy_(folded.narrow(0, rank * n, n).view(pout->arg.sizes()));
        } else {
            check(tutti_reduce_scatter(pin->arg.data_ptr(), pout->arg.data_ptr(), n, dtype_of(pin->arg, "reduce_scatter"),
                                       pin->op, comm, nullptr),
                  comm, "tutti_reduce_scatter");
        }
        pout->finish();
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::reduce_scatter(Tensors &outputs, TensorLists &inputs,
                                                        const c10d::ReduceScatterOptions &opts)
{
    TORCH_CHECK_VALUE(outputs.size() == 1 && inputs.size() == 1, "tutti: reduce_scatter takes one tensor per process");
    TORCH_CHECK_VALUE(static_cast<int>(inputs[0].size()) == getSize(), "tutti: reduce_scatter needs ", getSize(),
                      " inputs, got ", inputs[0].size());
    std::vector<at::Tensor> flat;
    for (const auto &t : inputs[0]) {
        TORCH_CHECK_VALUE(t.numel() == outputs[0].numel(), "tutti: reduce_scatter inputs must each have as many "
                                                            "elements as the output");
        flat.push_back(t.reshape(-1));
    }
    at::Tensor in = at::cat(flat);
    return _reduce_scatter_base(outputs[0], in, opts);
}

ProcessGroupTutti::Ptr ProcessGroupTutti::barrier(const c10d::BarrierOptions &)
{
    tutti_comm_t comm = comm_;
    return queue(c10d::OpType::BARRIER, {}, {}, [comm] { check(tutti_barrier(comm, nullptr), comm, "tutti_barrier"); });
}

#if TT_TORCH_BACKEND
ProcessGroupTutti::Ptr ProcessGroupTutti::allgather_into_tensor_coalesced(Tensors &outputs, Tensors &inputs,
                                                                         const c10d::AllgatherOptions &opts)
{
    TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "tutti: as many outputs as inputs, please");
    std::vector<c10::intrusive_ptr<Work>> works;
    for (size_t i = 0; i < inputs.size(); i++)
        works.push_back(c10::static_intrusive_pointer_cast<Work>(_allgather_base(outputs[i], inputs[i], opts)));
    return all_of(std::move(works), outputs);
}

ProcessGroupTutti::Ptr ProcessGroupTutti::reduce_scatter_tensor_coalesced(Tensors &outputs, Tensors &inputs,
                                                                         const c10d::ReduceScatterOptions &opts)
{
    TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "tutti: as many outputs as inputs, please");
    std::vector<c10::intrusive_ptr<Work>> works;
    for (size_t i = 0; i < inputs.size(); i++)
        works.push_back(c10::static_intrusive_pointer_cast<Work>(_reduce_scatter_base(outputs[i], inputs[i], opts)));
    return all_of(std::move(works), outputs);
}
#endif

} // namespace tt_torch
