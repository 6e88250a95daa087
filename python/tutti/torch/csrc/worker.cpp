// SPDX-License-Identifier: MIT
// A group's thread, which runs its calls in issue order as NCCL's stream
// orders them, and its isend/irecv, held and then run as one batch in an
// order that cannot deadlock.
//
// tutti's send and recv block, and a group runs one call at a time, so two
// ranks that each isend a large tensor to the other before they irecv would
// each wait in the send for a recv queued behind it. torch 1.13 brackets
// batch_isend_irecv with _start/_end_coalescing, which lets a batch be
// ordered; torch 2.x issues a CPU batch as plain isend/irecv calls, and so
// does code written for gloo, whose sends progress by themselves. So each
// isend/irecv is held and its Work returned at once; what a group holds is
// queued as one batch when one of its Works is asked about, when any call
// is made on any group (a pipeline's send held on its stage group must not
// wait for the loss all-reduce on the world group), at the end of
// coalescing, and when the group stops.
#include "work.hpp"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <limits>
#include <set>

namespace tt_torch {

namespace {

std::mutex live_mutex;
std::set<Worker *> *live = new std::set<Worker *>; // never destroyed: workers may outlive statics
std::atomic<int> held_anywhere{0};
thread_local Worker *running_here = nullptr; // the worker whose thread this is

std::exception_ptr stopped_error()
{
    return std::make_exception_ptr(
        std::runtime_error("tutti: a call on a process group that was destroyed (or shrunk, or grown) never runs"));
}

} // namespace

Worker::Worker(tutti_comm_t comm, std::string name) : comm_(comm)
{
    tutti_comm_rank(comm, &rank_);
    thread_ = std::thread([this] { loop(); });
    (void)name;
    std::lock_guard<std::mutex> lock(live_mutex);
    live->insert(this);
}

Worker::~Worker()
{
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        live->erase(this);
    }
    stop();
}

Worker *Worker::current()
{
    return running_here;
}

void Worker::submit(const c10::intrusive_ptr<Work> &work, std::function<void()> run, std::shared_ptr<Fence> fence)
{
    work->worker_ = weak_from_this();
    Task t{work, std::move(run), std::move(fence)};
    if (running_here == this) { // a callback's call: now, before what is queued
        run_task(t);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!stopping_) {
            queue_.push_back(std::move(t));
            cv_.notify_one();
            return;
        }
    }
    work->complete(stopped_error());
}

void Worker::pump_until(Work &work)
{
    while (!work.done()) {
        Task t;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (queue_.empty())
                return; // not this group's to run: wait() blocks as it would elsewhere
            t = std::move(queue_.front());
            queue_.pop_front();
        }
        run_task(t);
    }
}

void Worker::loop()
{
    running_here = this;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty())
            return;
        Task t = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        run_task(t);
        lock.lock();
    }
}

// Device calls go on the device's default stream (tutti's NULL stream),
// after the caller's stream reached the call; the Work is done once the
// stream finished them, as the caller expects of wait().
void Worker::run_task(Task &t)
{
    try {
        if (t.fence) {
            c10::DeviceGuard guard(t.fence->device);
            c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
            c10::Stream stream = impl.getDefaultStream(t.fence->device);
            for (const auto &event : t.fence->events)
                event.block(stream);
            t.run();
            stream.synchronize();
        } else {
            t.run();
        }
    } catch (...) {
        t.work->complete(std::current_exception());
        return;
    }
    t.work->complete(nullptr);
}

c10::intrusive_ptr<Work> Worker::hold(P2P op)
{
    std::weak_ptr<Worker> self = shared_from_this();
    op.work->worker_ = self;
    op.work->before = [self] {
        if (auto w = self.lock())
            w->flush();
    };
    auto work = op.work;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!stopping_) {
            held_.push_back(std::move(op));
            held_anywhere++;
            return work;
        }
    }
    work->complete(stopped_error());
    return work;
}

// Takes what is held; fails it when the worker stopped.
std::vector<P2P> Worker::take_held()
{
    std::vector<P2P> ops;
    bool stopped;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ops.swap(held_);
        held_anywhere -= static_cast<int>(ops.size());
        stopped = stopping_;
    }
    if (stopped) {
        for (auto &op : ops)
            op.work->complete(stopped_error());
        ops.clear();
    }
    return ops;
}

c10::intrusive_ptr<Work> Worker::flush()
{
    std::vector<P2P> ops = take_held();
    if (ops.empty())
        return {};
    std::vector<at::Tensor> tensors;
    std::shared_ptr<Fence> fence;
    for (auto &op : ops) {
        tensors.push_back(op.buf);
        if (!op.fence)
            continue;
        if (!fence)
            fence = std::make_shared<Fence>(Fence{op.fence->device, {}});
        for (auto &event : op.fence->events)
            fence->events.push_back(std::move(event));
    }
    auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::UNKNOWN, tensors);
    submit(work, batch(std::move(ops)), fence);
    return work;
}

// Every live worker, held so that none goes away while the caller uses it.
static std::vector<std::shared_ptr<Worker>> live_workers()
{
    std::vector<std::shared_ptr<Worker>> workers;
    std::lock_guard<std::mutex> lock(live_mutex);
    for (Worker *w : *live)
        if (auto s = w->weak_from_this().lock())
            workers.push_back(s);
    return workers;
}

void Worker::flush_all()
{
    if (held_anywhere.load() == 0)
        return;
    for (auto &w : live_workers())
        w->flush();
}

void Worker::stop()
{
    if (!thread_.joinable())
        return;
    flush();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    take_held(); // held since the flush: failed
    cv_.notify_all();
    if (thread_.get_id() == std::this_thread::get_id()) {
        thread_.detach(); // the last reference went on the worker itself
    } else if (Py_IsInitialized() && PyGILState_Check()) {
        // Python dropped the group: the worker's last call may still hold
        // the last reference to a tensor Python made, and releasing it takes
        // the GIL, which this thread would hold while it waits.
        pybind11::gil_scoped_release nogil;
        thread_.join();
    } else {
        thread_.join();
    }
}

void Worker::stop_all()
{
    for (auto &w : live_workers())
        w->stop();
}

// The order this rank runs ops in. Blocking sends cannot all go first: every
// rank takes its peers in one global order of pairs (lower rank first), the
// lower rank of a pair sending before it receives. The smallest pair not yet
// done can then always proceed, so the batch cannot deadlock; messages
// between two ranks keep their order. Receives from any source go last, so
// that the batch's sends are out before they wait.
static std::vector<size_t> p2p_order(int me, const std::vector<P2P> &ops)
{
    std::vector<size_t> idx(ops.size());
    for (size_t k = 0; k < ops.size(); k++)
        idx[k] = k;
    auto key = [&](size_t k) {
        const P2P &op = ops[k];
        if (op.peer < 0)
            return std::make_tuple(std::numeric_limits<int>::max(), 0, false);
        bool recv_first = me > op.peer;
        return std::make_tuple(std::min(me, op.peer), std::max(me, op.peer), op.send == recv_first);
    };
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    return idx;
}

// A receive from any source: tutti takes host memory there.
static int recv_any(tutti_comm_t comm, const at::Tensor &view)
{
    at::Tensor host = view.is_cuda() ? at::empty(view.sizes(), view.options().device(at::kCPU)) : view;
    int source = -1;
    check(tutti_recv_any(host.data_ptr(), host.numel(), dtype_of(host, "recv"), &source, comm, nullptr), comm,
          "tutti_recv_any");
    if (view.is_cuda())
        view.copy_(host);
    return source;
}

std::function<void()> Worker::batch(std::vector<P2P> ops)
{
    auto order = p2p_order(rank_, ops);
    tutti_comm_t comm = comm_;
    auto shared = std::make_shared<std::vector<P2P>>(std::move(ops));
    return [comm, order, shared] {
        auto &ops = *shared;
        try {
            for (size_t k : order) {
                P2P &op = ops[k];
                void *p = op.view.data_ptr();
                size_t n = op.view.numel();
                tutti_dtype_t dt = dtype_of(op.view, op.send ? "send" : "recv");
                if (op.send)
                    check(tutti_send(p, n, dt, op.peer, comm, nullptr), comm, "tutti_send");
                else if (op.peer < 0)
                    op.work->set_source(recv_any(comm, op.view));
                else
                    check(tutti_recv(p, n, dt, op.peer, comm, nullptr), comm, "tutti_recv");
                if (!op.send && op.target.defined())
                    op.target.copy_(op.buf);
            }
        } catch (...) {
            for (auto &op : ops)
                op.work->complete(std::current_exception());
            throw;
        }
        for (auto &op : ops)
            op.work->complete(nullptr);
    };
}

} // namespace tt_torch
