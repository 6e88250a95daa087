// SPDX-License-Identifier: MIT
// Work objects: done by the group's worker, which then completes the
// Future there (work.hpp).
#include "work.hpp"

#include <ATen/core/ivalue.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace tt_torch {

Work::Work(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get())))
{
}

void Work::ask() const
{
    if (before)
        before();
}

void Work::complete(std::exception_ptr error)
{
    finish(error); // wakes wait(): the call ran
    try {
        if (error)
            future_->setError(error);
        else
            future_->markCompleted(c10::IValue(outputs_));
    } catch (const std::exception &e) { // a callback's own failure: the call's outcome stands
        TORCH_WARN("tutti: a Future's callback raised: ", e.what());
    }
}

bool Work::done()
{
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
}

bool Work::isCompleted()
{
    ask();
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ && future_->completed();
}

bool Work::isSuccess() const
{
    ask();
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ && !exception_;
}

std::exception_ptr Work::exception() const
{
    ask();
    std::lock_guard<std::mutex> lock(mutex_);
    return exception_;
}

int Work::sourceRank() const
{
    int r = source_;
    TORCH_CHECK(r >= 0, "tutti: source_rank() names the sender of a receive from any source (recv without src), once "
                        "it finished; this Work is not one, or has not finished");
    return r;
}

std::vector<at::Tensor> Work::result()
{
    wait();
    return outputs_;
}

void Work::synchronize()
{
    wait();
}

bool Work::wait(std::chrono::milliseconds timeout)
{
    ask();
    auto worker = worker_.lock();
    if (worker && Worker::current() == worker.get())
        worker->pump_until(*this); // a callback waits: it is the group's only thread
    std::unique_lock<std::mutex> lock(mutex_);
    if (timeout == kNoTimeout)
        cv_.wait(lock, [&] { return completed_; });
    else
        TORCH_CHECK(cv_.wait_for(lock, timeout, [&] { return completed_; }), "tutti: wait timeout after ",
                    timeout.count(), " ms: the operation has not finished");
    lock.unlock();
    future_->wait(); // the worker completes it right after
    if (exception_)
        std::rethrow_exception(exception_);
    return true;
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture()
{
    ask();
    return future_;
}

std::shared_ptr<Fence> fence_for(const std::vector<at::Tensor> &tensors)
{
    for (const auto &t : tensors) {
        if (!t.defined() || !t.is_cuda())
            continue;
        c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
        auto fence = std::make_shared<Fence>(Fence{t.device(), {}});
        fence->events.emplace_back(c10::DeviceType::CUDA);
        fence->events.back().record(impl.getStream(t.device()));
        return fence;
    }
    return nullptr;
}

} // namespace tt_torch
