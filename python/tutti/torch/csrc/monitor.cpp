// SPDX-License-Identifier: MIT
// monitored_barrier: a barrier that names the ranks that did not arrive.
// It goes through the group's store, not the communicator. Every rank but
// 0 says it arrived and waits to be let through; rank 0 waits for each in
// turn until the deadline, then raises naming the missing ones (the first
// only, unless wait_all_ranks), or lets everyone through. The errors carry
// gloo's words, which tools look for; rank 0 out of time before a rank's
// turn (a timeout of 0) says it timed out, as gloo does.
#include "group.hpp"

#include <chrono>
#include <thread>

namespace tt_torch {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(5);

// Whether key was counted up before deadline. Polled with add(key, 0), as
// torch's own store barrier does: a store's wait that times out leaves its
// waiter behind, and the key's arrival later would answer it, out of turn,
// the next command on that connection.
bool counted(c10d::Store &store, const std::string &key, Clock::time_point deadline)
{
    while (store.add(key, 0) == 0) {
        if (Clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(kPoll);
    }
    return true;
}

std::string ranks_text(const std::vector<int> &ranks)
{
    std::string s;
    for (int r : ranks)
        s += (s.empty() ? "" : ", ") + std::to_string(r);
    return s;
}

} // namespace

void monitored_barrier(c10d::Store &store, int rank, int size, int number, std::chrono::milliseconds timeout,
                       bool wait_all_ranks)
{
    std::string prefix = "tutti/monitored_barrier/" + std::to_string(number) + "/";
    long long ms = timeout.count();
    Clock::time_point deadline = Clock::now() + timeout;
    if (rank != 0) {
        store.add(prefix + std::to_string(rank), 1);
        TORCH_CHECK(counted(store, prefix + "pass", deadline), "tutti: monitored_barrier timeout on rank ", rank,
                    ": Rank ", rank, " successfully reached monitoredBarrier, but received errors while waiting for "
                    "send/recv from rank 0 (it did not let this rank pass within ", ms,
                    " ms; its error names the ranks that did not arrive)");
        return;
    }
    std::vector<int> missing;
    for (int q = 1; q < size; q++) {
        if (!missing.empty() && !wait_all_ranks)
            break;
        if (!wait_all_ranks && Clock::now() > deadline) { // out of time before rank q's turn
            std::vector<int> done;
            for (int r = 1; r < q; r++)
                done.push_back(r);
            TORCH_CHECK(false, "tutti: monitored_barrier timeout on rank 0: Rank 0 timed out in monitoredBarrier after ",
                        ms, " ms (ranks that arrived: ", done.empty() ? "none" : ranks_text(done), ")");
        }
        if (!counted(store, prefix + std::to_string(q), deadline))
            missing.push_back(q);
    }
    TORCH_CHECK(missing.empty(), "tutti: monitored_barrier timeout on rank 0: ",
                missing.size() == 1 ? "Rank " : "Ranks ", ranks_text(missing), " failed to pass monitoredBarrier in ",
                ms, " ms");
    // Every rank read the previous barrier's pass before it arrived here.
    for (int q = 1; q < size; q++)
        store.deleteKey(prefix + std::to_string(q));
    store.deleteKey("tutti/monitored_barrier/" + std::to_string(number - 1) + "/pass");
    store.add(prefix + "pass", 1);
}

} // namespace tt_torch
