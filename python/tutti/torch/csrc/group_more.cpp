// SPDX-License-Identifier: MIT
// The rest of the group's calls: all-to-all (even and uneven), gather,
// scatter, point to point (held, work.hpp), the monitored barrier, sparse
// all-reduce, DDP's compressed all-reduce, and what the Python package asks
// of a group it shrinks or grows.
#include "group.hpp"

#include <ATen/ATen.h>

namespace tt_torch {

namespace {

std::vector<int64_t> counts_of(const std::vector<int64_t> &splits, const at::Tensor &t, int p)
{
    int64_t row = t.dim() > 0 && t.size(0) ? t.numel() / t.size(0) : 1;
    std::vector<int64_t> counts(p, t.dim() > 0 ? t.size(0) / p * row : 0);
    if (!splits.empty())
        for (int q = 0; q < p; q++)
            counts[q] = splits[q] * row;
    return counts;
}

void send_to(tutti_comm_t comm, const at::Tensor &v, int peer)
{
    check(tutti_send(v.data_ptr(), v.numel(), dtype_of(v, "send"), peer, comm, nullptr), comm, "tutti_send");
}

void recv_from(tutti_comm_t comm, const at::Tensor &v, int peer)
{
    check(tutti_recv(v.data_ptr(), v.numel(), dtype_of(v, "recv"), peer, comm, nullptr), comm, "tutti_recv");
}

std::vector<at::Tensor> joined_with(const std::vector<at::Tensor> &a, const std::vector<at::Tensor> &b)
{
    std::vector<at::Tensor> all = a;
    all.insert(all.end(), b.begin(), b.end());
    return all;
}

} // namespace

// Blocks of uneven element counts, each padded to the largest any rank has
// (tutti's all-to-all takes equal blocks; every rank must pad alike).
std::function<void()> alltoall_body(tutti_comm_t comm, at::Tensor output, at::Tensor input,
                                    std::vector<int64_t> out_counts, std::vector<int64_t> in_counts)
{
    return [=] {
        int p = static_cast<int>(in_counts.size());
        at::Tensor in = data_view(input).reshape(-1), out = data_view(output.contiguous()).reshape(-1);
        int scale = in.numel() == input.numel() ? 1 : 2; // complex: two reals an element
        int64_t most = 0;
        for (int q = 0; q < p; q++)
            most = std::max({most, in_counts[q] * scale, out_counts[q] * scale});
        at::Tensor biggest = at::full({1}, most, at::kLong);
        check(tutti_allreduce(biggest.data_ptr(), biggest.data_ptr(), 1, TUTTI_INT64, TUTTI_MAX, comm, nullptr), comm,
              "tutti_allreduce");
        int64_t block = biggest.item<int64_t>();
        at::Tensor send = at::zeros({p * block}, in.options()), got = at::empty({p * block}, in.options());
        for (int q = 0, at = 0; q < p; at += in_counts[q] * scale, q++)
            send.narrow(0, q * block, in_counts[q] * scale).copy_(in.narrow(0, at, in_counts[q] * scale));
        check(tutti_alltoall(send.data_ptr(), got.data_ptr(), block, dtype_of(in, "all_to_all"), comm, nullptr), comm,
              "tutti_alltoall");
        for (int q = 0, at = 0; q < p; at += out_counts[q] * scale, q++)
            out.narrow(0, at, out_counts[q] * scale).copy_(got.narrow(0, q * block, out_counts[q] * scale));
        at::Tensor result = output.is_complex() ? at::view_as_complex(out.view({-1, 2})) : out.view(output.scalar_type());
        if (result.data_ptr() != output.data_ptr())
            output.copy_(result.view(output.sizes()));
    };
}

ProcessGroupTutti::Ptr ProcessGroupTutti::alltoall_base(at::Tensor &output, at::Tensor &input,
                                                       std::vector<int64_t> &output_splits,
                                                       std::vector<int64_t> &input_splits,
                                                       const c10d::AllToAllOptions &)
{
    int p = getSize();
    TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(), "tutti: all_to_all_single output is ",
                     output.scalar_type(), ", input ", input.scalar_type());
    tutti_comm_t comm = comm_;
    if (output_splits.empty() && input_splits.empty()) {
        TORCH_CHECK_VALUE(input.numel() % p == 0 && output.numel() == input.numel(), "tutti: all_to_all_single "
                          "needs equal input and output sizes divisible by ", p);
        at::Tensor in = data_view(input);
        auto out = std::make_shared<at::Tensor>(output.contiguous());
        return queue(c10d::OpType::ALLTOALL_BASE, {input, output}, {output}, [comm, in, out, output, p] {
            at::Tensor v = data_view(*out);
            check(tutti_alltoall(in.data_ptr(), v.data_ptr(), in.numel() / p, dtype_of(in, "all_to_all"), comm,
                                 nullptr),
                  comm, "tutti_alltoall");
            if (!out->is_same(output))
                output.copy_(*out);
        });
    }
    auto ins = counts_of(input_splits, input, p), outs = counts_of(output_splits, output, p);
    int64_t in_total = 0, out_total = 0;
    for (int q = 0; q < p; q++)
        in_total += ins[q], out_total += outs[q];
    TORCH_CHECK_VALUE(static_cast<int>(ins.size()) == p && static_cast<int>(outs.size()) == p &&
                          in_total == input.numel() && out_total == output.numel(),
                      "tutti: all_to_all_single split sizes must have ", p,
                      " entries that add up to the first dimension of input and output");
    at::Tensor in = input.contiguous();
    return queue(c10d::OpType::ALLTOALL_BASE, {input, output}, {output}, alltoall_body(comm, output, in, outs, ins));
}

ProcessGroupTutti::Ptr ProcessGroupTutti::alltoall(Tensors &outputs, Tensors &inputs, const c10d::AllToAllOptions &)
{
    int p = getSize();
    TORCH_CHECK_VALUE(static_cast<int>(outputs.size()) == p && static_cast<int>(inputs.size()) == p,
                      "tutti: all_to_all takes ", p, " inputs and ", p, " outputs");
    std::vector<int64_t> ins, outs;
    std::vector<at::Tensor> flat;
    for (int q = 0; q < p; q++) {
        TORCH_CHECK_TYPE(inputs[q].scalar_type() == inputs[0].scalar_type() &&
                             outputs[q].scalar_type() == inputs[0].scalar_type(),
                         "tutti: all_to_all needs inputs and outputs of one dtype");
        ins.push_back(inputs[q].numel());
        outs.push_back(outputs[q].numel());
        flat.push_back(inputs[q].reshape(-1));
    }
    at::Tensor in = at::cat(flat);
    int64_t total = 0;
    for (auto n : outs)
        total += n;
    at::Tensor out = at::empty({total}, in.options());
    auto body = alltoall_body(comm_, out, in, outs, ins);
    Tensors targets = outputs;
    // Always padded: one rank's blocks may all be equal while a peer's are not.
    return queue(c10d::OpType::ALLTOALL, inputs, outputs, [body, out, targets] {
        body();
        int64_t at = 0;
        for (const auto &t : targets) {
            t.copy_(out.narrow(0, at, t.numel()).view(t.sizes()));
            at += t.numel();
        }
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::gather(TensorLists &outputs, Tensors &inputs, const c10d::GatherOptions &opts)
{
    TORCH_CHECK_VALUE(inputs.size() == 1, "tutti: gather takes one tensor per process");
    check_rank(opts.rootRank, "gather");
    int root = static_cast<int>(opts.rootRank), me = getRank(), p = getSize();
    at::Tensor t = inputs[0];
    Tensors outs = me == root && !outputs.empty() ? outputs[0] : Tensors{};
    TORCH_CHECK_VALUE(me != root || static_cast<int>(outs.size()) == p, "tutti: gather needs ", p,
                      " outputs on the root");
    for (const auto &o : outs)
        TORCH_CHECK_VALUE(o.numel() == t.numel() && o.scalar_type() == t.scalar_type(), "tutti: gather needs ", p,
                          " outputs of ", t.numel(), " elements of ", t.scalar_type(), " on the root");
    at::Tensor v = data_view(t);
    tutti_comm_t comm = comm_;
    return queue(c10d::OpType::GATHER, joined_with(inputs, outs), outs, [comm, v, t, outs, root, me] {
        if (me != root)
            return send_to(comm, v, root);
        for (int r = 0; r < static_cast<int>(outs.size()); r++) {
            if (r == me) {
                outs[r].copy_(t);
                continue;
            }
            at::Tensor buf = outs[r].contiguous();
            recv_from(comm, data_view(buf), r);
            if (!buf.is_same(outs[r]))
                outs[r].copy_(buf);
        }
    });
}

ProcessGroupTutti::Ptr ProcessGroupTutti::scatter(Tensors &outputs, TensorLists &inputs,
                                                 const c10d::ScatterOptions &opts)
{
    TORCH_CHECK_VALUE(outputs.size() == 1, "tutti: scatter takes one tensor per process");
    check_rank(opts.rootRank, "scatter");
    int root = static_cast<int>(opts.rootRank), me = getRank(), p = getSize();
    at::Tensor t = outputs[0];
    Tensors ins = me == root && !inputs.empty() ? inputs[0] : Tensors{};
    TORCH_CHECK_VALUE(me != root || static_cast<int>(ins.size()) == p, "tutti: scatter needs ", p,
                      " inputs on the root");
    std::vector<at::Tensor> views;
    for (const auto &i : ins) {
        TORCH_CHECK_VALUE(i.numel() == t.numel() && i.scalar_type() == t.scalar_type(), "tutti: scatter needs ", p,
                          " inputs of ", t.numel(), " elements of ", t.scalar_type(), " on the root");
        views.push_back(data_view(i));
    }
    tutti_comm_t comm = comm_;
    return queue(c10d::OpType::SCATTER, joined_with(outputs, ins), outputs, [comm, views, ins, t, root, me] {
        if (me != root) {
            at::Tensor buf = t.contiguous();
            recv_from(comm, data_view(buf), root);
            if (!buf.is_same(t))
                t.copy_(buf);
            return;
        }
        for (int r = 0; r < static_cast<int>(views.size()); r++) {
            if (r == me)
                t.copy_(ins[r]);
            else
                send_to(comm, views[r], r);
        }
    });
}

c10::intrusive_ptr<Work> ProcessGroupTutti::hold(bool send, int peer, at::Tensor tensor)
{
    TORCH_CHECK(comm_ != nullptr, "tutti: isend/irecv on a process group that was destroyed (or shrunk, or grown)");
    at::Tensor buf = tensor.contiguous();
    auto work = c10::make_intrusive<Work>(getRank(), send ? c10d::OpType::SEND : c10d::OpType::RECV,
                                          std::vector<at::Tensor>{tensor});
    P2P op{send, peer, data_view(buf), buf, buf.is_same(tensor) ? at::Tensor() : tensor, work, fence_for({tensor})};
    return worker_->hold(std::move(op));
}

ProcessGroupTutti::Ptr ProcessGroupTutti::send(Tensors &tensors, int dst, int)
{
    TORCH_CHECK_VALUE(tensors.size() == 1, "tutti: send takes one tensor");
    check_rank(dst, "send");
    return hold(true, dst, tensors[0]);
}

ProcessGroupTutti::Ptr ProcessGroupTutti::recv(Tensors &tensors, int src, int)
{
    TORCH_CHECK_VALUE(tensors.size() == 1, "tutti: recv takes one tensor");
    check_rank(src, "recv");
    return hold(false, src, tensors[0]);
}

// Held as a recv is; its Work's source_rank() names the sender once it finished.
ProcessGroupTutti::Ptr ProcessGroupTutti::recvAnysource(Tensors &tensors, int)
{
    TORCH_CHECK_VALUE(tensors.size() == 1, "tutti: recv takes one tensor");
    return hold(false, -1, tensors[0]);
}

// On the caller's thread, through the store: its timeout is its own (a
// collective that waited past it would end the communicator), and a rank
// that never arrives leaves nothing half-received.
void ProcessGroupTutti::monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all_ranks)
{
    TORCH_CHECK(store_, "tutti: monitored_barrier needs the group's store (this group was made without one)");
    auto timeout = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
    monitored_barrier(*store_, getRank(), getSize(), ++monitored_, timeout, wait_all_ranks);
}

// All-reduce of a sparse COO tensor (SUM, as gloo has it): every rank's
// indices and values gathered, padded to the largest count, then added by
// coalescing, and the sum written into the caller's tensor.
std::function<void()> sparse_allreduce_body(tutti_comm_t comm, at::Tensor tensor)
{
    return [comm, tensor] {
        at::Tensor mine = tensor.coalesce(), indices = mine._indices(), values = mine._values();
        int64_t n = indices.size(1);
        at::Tensor counts = gather_all(comm, at::full({1}, n, indices.options())).reshape(-1).cpu();
        int64_t most = counts.max().item<int64_t>();
        at::Tensor pad_i = at::zeros({indices.size(0), most}, indices.options());
        std::vector<int64_t> vshape{most};
        for (int64_t d = 1; d < values.dim(); d++)
            vshape.push_back(values.size(d));
        at::Tensor pad_v = at::zeros(vshape, values.options());
        pad_i.narrow(1, 0, n).copy_(indices);
        pad_v.narrow(0, 0, n).copy_(values);
        at::Tensor every_i = gather_all(comm, pad_i), every_v = gather_all(comm, pad_v);
        std::vector<at::Tensor> is, vs;
        for (int64_t q = 0; q < counts.numel(); q++) {
            int64_t c = counts[q].item<int64_t>();
            is.push_back(every_i[q].narrow(1, 0, c));
            vs.push_back(every_v[q].narrow(0, 0, c));
        }
        at::Tensor total = at::sparse_coo_tensor(at::cat(is, 1), at::cat(vs), mine.sizes());
        tensor.copy_(total.coalesce());
    };
}

// One DDP bucket averaged (compressed or not), with what it sent in the
// Work's stats: the hook reads them once the Work is done.
c10::intrusive_ptr<Work> ProcessGroupTutti::allreduce_compressed(const at::Tensor &bucket, const tutti_compress_t &how,
                                                                 tutti_ef_state_t ef, bool compress)
{
    TORCH_CHECK_VALUE(bucket.is_contiguous(), "tutti: a DDP bucket is contiguous; this tensor is not");
    tutti_comm_t comm = comm_;
    uint64_t p = getSize();
    auto work = c10::make_intrusive<Work>(getRank(), c10d::OpType::ALLREDUCE, Tensors{bucket});
    Work *w = work.get(); // alive until the worker completed it
    at::Tensor t = bucket;
    submit(work, {t}, [comm, t, how, ef, compress, p, w] {
        void *ptr = t.data_ptr();
        tutti_dtype_t dt = dtype_of(t, "all_reduce");
        if (compress) {
            check(tutti_allreduce_compressed(ptr, ptr, t.numel(), dt, TUTTI_AVG, &how, ef, comm, nullptr), comm,
                  "tutti_allreduce_compressed");
            check(tutti_compress_last_stats(comm, &w->stats), comm, "tutti_compress_last_stats");
            return;
        }
        check(tutti_allreduce(ptr, ptr, t.numel(), dt, TUTTI_AVG, comm, nullptr), comm, "tutti_allreduce");
        uint64_t bytes = t.numel() * t.element_size();
        w->stats.bytes_sent = w->stats.dense_bytes_sent = 2 * (p - 1) * bytes / p; // the ring's
    });
    return work;
}

c10::intrusive_ptr<Work> ProcessGroupTutti::drain()
{
    return queue(c10d::OpType::UNKNOWN, {}, {}, [] {});
}

void ProcessGroupTutti::retire(bool destroy)
{
    worker_->stop();
    tutti_comm_t comm = comm_;
    comm_ = nullptr;
    if (comm == nullptr)
        return;
    if (destroy)
        check(tutti_comm_destroy(comm), nullptr, "tutti_comm_destroy");
    else
        tutti_comm_abort(comm);
}

} // namespace tt_torch
