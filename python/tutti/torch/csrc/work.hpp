// SPDX-License-Identifier: MIT
// The execution model. Each group's calls run in issue order on a thread of
// the group's own (its Worker), so groups progress independently. That
// thread completes a call's Work and then its Future, so torch runs the
// Future's callbacks there, at once, before the group's next call, as they
// run at once for NCCL's futures. A call a callback issues on the same
// group runs there and then, ahead of what is queued: every rank issues a
// callback's calls at the same point (PowerSGD's, for one), and its wait()
// or Future finds them done. A callback that waits on a Work still queued
// runs the queue up to it (Work::wait pumps).
#pragma once

#include "tt_torch.hpp"

#include <c10/core/Event.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace tt_torch {

class Worker;

// A call's Work. wait() and is_completed() report the Future completed too,
// so that its value can be read once they say so.
class Work : public c10d::Work {
  public:
    Work(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);
    bool isCompleted() override;
    bool isSuccess() const override;
    std::exception_ptr exception() const override;
    int sourceRank() const override;
    std::vector<at::Tensor> result() override;
    void synchronize() override;
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

    // By the worker once the call ran: error is its failure, or null. The
    // Future's callbacks run here.
    void complete(std::exception_ptr error);
    void set_source(int rank) { source_ = rank; }
    // Called first by every question asked of the Work (the group's: it
    // queues the isend/irecv it still holds, this one among them).
    std::function<void()> before;
    // What a compressed all-reduce sent, once it ran.
    tutti_compress_stats_t stats{};

  private:
    friend class Worker;
    void ask() const;
    bool done();
    std::weak_ptr<Worker> worker_; // the group's, set when it is queued or held
    std::vector<at::Tensor> outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
    std::atomic<int> source_{-1};
};

// Events on the callers' current CUDA streams, recorded when the calls were
// issued: the worker's device calls start after the work queued before them.
struct Fence {
    c10::Device device;
    std::vector<c10::Event> events;
};
std::shared_ptr<Fence> fence_for(const std::vector<at::Tensor> &tensors);

// An isend or irecv (peer -1: from any source), held until the group runs it.
struct P2P {
    bool send;
    int peer;
    at::Tensor view;   // what tutti reads or writes: data_view(buf)
    at::Tensor buf;    // the caller's tensor, or its contiguous copy
    at::Tensor target; // the caller's tensor, where a receive lands in a copy
    c10::intrusive_ptr<Work> work;
    std::shared_ptr<Fence> fence;
};

// One group's thread, its queue, and its held isend/irecv.
class Worker : public std::enable_shared_from_this<Worker> {
  public:
    Worker(tutti_comm_t comm, std::string name);
    ~Worker();
    tutti_comm_t comm() const { return comm_; }
    // Queues run; work completes with its outcome. Called on this worker's
    // own thread (by a callback), it runs it there and then.
    void submit(const c10::intrusive_ptr<Work> &work, std::function<void()> run, std::shared_ptr<Fence> fence);
    // On this worker's thread: runs what is queued, in order, until work is
    // done (a callback waiting on a Work of its group queued behind it).
    void pump_until(Work &work);
    // The worker whose thread this is, or null.
    static Worker *current();
    // Holds op; its Work's questions queue what is held.
    c10::intrusive_ptr<Work> hold(P2P op);
    // Queues the held calls as one batch; its Work, or null when none.
    c10::intrusive_ptr<Work> flush();
    // Every live group's held calls: any call on any group lets them out,
    // so a send held on one group cannot wait for a call on another.
    static void flush_all();
    // Runs what is queued, then the thread ends; later calls fail.
    void stop();
    // Every live worker stopped (at the interpreter's exit).
    static void stop_all();

  private:
    struct Task {
        c10::intrusive_ptr<Work> work;
        std::function<void()> run;
        std::shared_ptr<Fence> fence;
    };
    void loop();
    void run_task(Task &t);
    std::vector<P2P> take_held();
    std::function<void()> batch(std::vector<P2P> ops);
    tutti_comm_t comm_;
    int rank_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Task> queue_;
    std::vector<P2P> held_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace tt_torch
