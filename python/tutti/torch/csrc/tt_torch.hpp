// SPDX-License-Identifier: MIT
// What the backend's files share: the class torch gives a backend to
// derive from (ProcessGroup on torch 1.x, Backend under torch's own
// ProcessGroup on 2.x), tutti's failures as a C++ exception, and how a
// tensor becomes a tutti buffer.
#pragma once

#include <tutti.h>

#include <torch/version.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define TT_TORCH_BACKEND 1
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define TT_TORCH_BACKEND 0
#endif

namespace tt_torch {

#if TT_TORCH_BACKEND
using Base = c10d::Backend;
#define TT_OP_COALESCED c10d::OpType::COALESCED
#else
using Base = c10d::ProcessGroup;
#define TT_OP_COALESCED c10d::OpType::UNKNOWN
#endif

// A failed tutti call. Python sees it as tutti.TuttiError (a RuntimeError),
// which the module's exception translator makes of it; a caller that gets it
// through torch's C++ (DDP's backward) sees a RuntimeError with its text.
class Error : public std::runtime_error {
  public:
    Error(tutti_status_t status, const std::string &detail, const std::string &call);
    tutti_status_t status;
    std::string detail, call;
};

// Throws Error unless status is TUTTI_SUCCESS, with what
// tutti_comm_last_error says of comm (this thread's last failure when comm is
// NULL).
void check(tutti_status_t status, tutti_comm_t comm, const char *call);

// tutti's dtype for t; throws a TypeError-like c10::Error naming what.
tutti_dtype_t dtype_of(const at::Tensor &t, const char *what);

// A contiguous tensor of a dtype tutti has, with t's bytes, for calls
// that only move data (complex as pairs of reals, 1-byte types as uint8,
// 2-byte integers as fp16).
at::Tensor data_view(const at::Tensor &t);

// How one tensor is reduced: `arg` is what tutti reads and writes (a view
// of the tensor, or a copy that finish() writes back); `op` a tutti op, or
// `bitwise` the torch fold of every rank's tensor (gathered); `scale`, for
// PREMUL_SUM, multiplies the input first.
struct Plan {
    at::Tensor tensor, base, arg;
    tutti_op_t op = TUTTI_SUM;
    int bitwise = 0; // c10d::ReduceOp::BAND, BOR or BXOR; 0: none
    bool scaled = false;
    double factor = 1.0;
    at::Tensor factor_tensor;
    void prepare(); // on the worker, before the call: PREMUL_SUM's product
    void finish();  // after it: the result back where tutti worked on a copy
};

// Plans the reduction of t by op; throws for what cannot be done.
Plan plan_reduce(const at::Tensor &t, const c10d::ReduceOp &op);

// Every rank's t stacked on a new first dimension (an all-gather).
at::Tensor gather_all(tutti_comm_t comm, const at::Tensor &t);

// folded[i] = the bitwise op over the first dimension of gathered.
at::Tensor fold_bitwise(int bitwise, const at::Tensor &gathered);

} // namespace tt_torch
