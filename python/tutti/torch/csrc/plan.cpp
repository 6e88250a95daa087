// SPDX-License-Identifier: MIT
// torch's dtypes and reduce ops in tutti's terms. tutti reduces sum, prod,
// min, max and avg on its ten integer and float types and fp8; the rest is
// brought to that: bool as uint8 (sum and max are or, prod and min are and,
// as torch's NCCL backend has it), 16-bit integers widened to int32 and
// narrowed back, complex as pairs of reals (sum and avg), bitwise and/or/xor
// on integers by gathering every rank's tensor and folding it here, and
// PREMUL_SUM as the product by its factor, then the sum.
#include "tt_torch.hpp"

#include <ATen/ATen.h>

namespace tt_torch {

Error::Error(tutti_status_t st, const std::string &det, const std::string &fn)
    : std::runtime_error(fn + ": " + tutti_status_name(st) + " (" + tutti_strerror(st) + ")" +
                         (det.empty() ? "" : ": " + det)),
      status(st), detail(det), call(fn)
{
}

void check(tutti_status_t status, tutti_comm_t comm, const char *call)
{
    if (status != TUTTI_SUCCESS)
        throw Error(status, tutti_comm_last_error(comm), call);
}

tutti_dtype_t dtype_of(const at::Tensor &t, const char *what)
{
    switch (t.scalar_type()) {
    case at::kChar: return TUTTI_INT8;
    case at::kByte: return TUTTI_UINT8;
    case at::kInt: return TUTTI_INT32;
    case at::kLong: return TUTTI_INT64;
    case at::kHalf: return TUTTI_FP16;
    case at::kBFloat16: return TUTTI_BF16;
    case at::kFloat: return TUTTI_FP32;
    case at::kDouble: return TUTTI_FP64;
#if TORCH_VERSION_MAJOR >= 2
    case at::kFloat8_e4m3fn: return TUTTI_FP8_E4M3;
    case at::kFloat8_e5m2: return TUTTI_FP8_E5M2;
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    case at::kUInt32: return TUTTI_UINT32;
    case at::kUInt64: return TUTTI_UINT64;
#endif
    default: break;
    }
    TORCH_CHECK_TYPE(false, "tutti: ", what, ": tutti has no ", t.scalar_type(), " type");
    return TUTTI_NUM_DTYPES; // not reached
}

at::Tensor data_view(const at::Tensor &tensor)
{
    at::Tensor t = tensor.contiguous();
    if (t.is_complex())
        return at::view_as_real(t);
    if (t.element_size() == 1)
        return t.view(at::kByte);
    if (t.scalar_type() == at::kShort || (t.element_size() == 2 && !t.is_floating_point()))
        return t.view(at::kHalf); // any 2-byte type: the bytes are only moved
    if (t.scalar_type() == at::kBool)
        return t.view(at::kByte);
    return t;
}

static const char *op_name(c10d::ReduceOp::RedOpType op)
{
    static const char *names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"};
    return op < sizeof names / sizeof *names ? names[op] : "UNKNOWN";
}

static tutti_op_t plain_op(c10d::ReduceOp::RedOpType op)
{
    switch (op) {
    case c10d::ReduceOp::AVG: return TUTTI_AVG;
    case c10d::ReduceOp::PRODUCT: return TUTTI_PROD;
    case c10d::ReduceOp::MIN: return TUTTI_MIN;
    case c10d::ReduceOp::MAX: return TUTTI_MAX;
    default: return TUTTI_SUM;
    }
}

// PREMUL_SUM's factor: a double or a one-element tensor per input.
static void premul_factor(Plan &p, const c10d::ReduceOp &op)
{
    auto *s = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(op.supplement_.get());
    TORCH_CHECK_VALUE(s != nullptr, "tutti: ReduceOp.PREMUL_SUM without its factor");
    p.scaled = true;
    p.factor = s->double_factor;
#if TORCH_VERSION_MAJOR >= 2
    p.factor_tensor = s->tensor_factor; // one (undefined: the double)
#else
    if (!s->tensor_factors.empty())
        p.factor_tensor = s->tensor_factors[0];
#endif
}

Plan plan_reduce(const at::Tensor &t, const c10d::ReduceOp &op)
{
    auto kind = op.op_;
    TORCH_CHECK_VALUE(kind <= c10d::ReduceOp::PREMUL_SUM, "tutti: unknown reduce op ", int(kind));
    Plan p;
    p.tensor = t;
    p.base = t.contiguous();
    p.arg = p.base;
    p.op = plain_op(kind);
    bool bitwise = kind == c10d::ReduceOp::BAND || kind == c10d::ReduceOp::BOR || kind == c10d::ReduceOp::BXOR;
    if (bitwise) {
        TORCH_CHECK_TYPE(!t.is_floating_point() && !t.is_complex(), "tutti: ReduceOp.", op_name(kind),
                         " needs an integer or bool tensor, not ", t.scalar_type());
        p.bitwise = kind;
        return p;
    }
    if (kind == c10d::ReduceOp::PREMUL_SUM) {
        TORCH_CHECK_TYPE(t.is_floating_point() || t.is_complex(), "tutti: ReduceOp.PREMUL_SUM needs a float tensor, not ",
                         t.scalar_type());
        premul_factor(p, op);
    }
    if (t.scalar_type() == at::kBool) {
        TORCH_CHECK_TYPE(kind != c10d::ReduceOp::AVG, "tutti: ReduceOp.AVG is not defined for bool tensors");
        p.op = kind == c10d::ReduceOp::SUM || kind == c10d::ReduceOp::MAX ? TUTTI_MAX : TUTTI_MIN;
        p.arg = p.base.view(at::kByte);
    } else if (t.is_complex()) {
        TORCH_CHECK_TYPE(p.op == TUTTI_SUM || p.op == TUTTI_AVG, "tutti: ReduceOp.", op_name(kind),
                         " is not defined for complex tensors (SUM and AVG are)");
        p.arg = at::view_as_real(p.base);
    } else if (t.scalar_type() == at::kShort || (t.element_size() == 2 && !t.is_floating_point())) {
        p.arg = p.base.to(at::kInt); // widened: finish() narrows back
    }
    dtype_of(p.arg, "all_reduce");
    return p;
}

void Plan::prepare()
{
    if (!scaled)
        return;
    // The product goes where tutti reads; a copy when that is the caller's tensor.
    if (arg.data_ptr() == tensor.data_ptr())
        arg = tensor.is_complex() ? at::view_as_real(tensor.clone()) : tensor.clone();
    at::Tensor mine = tensor.is_complex() ? at::view_as_complex(arg) : arg;
    if (factor_tensor.defined())
        mine.mul_(factor_tensor.to(mine.device()));
    else
        mine.mul_(factor);
}

void Plan::finish()
{
    if (arg.data_ptr() != base.data_ptr()) {
        // widened, or PREMUL_SUM's copy: back into the caller's tensor
        at::Tensor result = tensor.is_complex() ? at::view_as_complex(arg) : arg;
        tensor.copy_(result);
    } else if (!base.is_same(tensor)) {
        tensor.copy_(base); // was not contiguous
    }
}

at::Tensor gather_all(tutti_comm_t comm, const at::Tensor &t)
{
    int size = 0;
    tutti_comm_size(comm, &size);
    at::Tensor v = data_view(t);
    std::vector<int64_t> shape{size};
    shape.insert(shape.end(), v.sizes().begin(), v.sizes().end());
    at::Tensor out = at::empty(shape, v.options());
    check(tutti_allgather(v.data_ptr(), out.data_ptr(), v.numel(), dtype_of(v, "all_gather"), comm, nullptr), comm,
          "tutti_allgather");
    return t.is_complex() ? at::view_as_complex(out) : out.view(t.scalar_type());
}

at::Tensor fold_bitwise(int bitwise, const at::Tensor &gathered)
{
    at::Tensor acc = gathered[0].clone();
    for (int64_t q = 1; q < gathered.size(0); q++) {
        if (bitwise == c10d::ReduceOp::BAND)
            acc.bitwise_and_(gathered[q]);
        else if (bitwise == c10d::ReduceOp::BOR)
            acc.bitwise_or_(gathered[q]);
        else
            acc.bitwise_xor_(gathered[q]);
    }
    return acc;
}

} // namespace tt_torch
