// SPDX-License-Identifier: MIT
// The Python module tutti.torch._tutti_c10d: the backend's class, its Work
// (with what a compressed all-reduce sent), and tutti's failures raised as
// tutti.TuttiError. tutti/torch/_pg.py makes groups of it.
#include "group.hpp"

// pybind11 shares its registry of types (torch's ProcessGroup, Work, ...)
// only with modules built with the same ABI tags as torch's; configure
// passes torch's as identifiers (python/torch_flags.py), made strings here.
#define TT_STR_(x) #x
#define TT_STR(x) TT_STR_(x)
#ifdef TT_PYBIND11_COMPILER_TYPE
#define PYBIND11_COMPILER_TYPE TT_STR(TT_PYBIND11_COMPILER_TYPE)
#endif
#ifdef TT_PYBIND11_STDLIB
#define PYBIND11_STDLIB TT_STR(TT_PYBIND11_STDLIB)
#endif
#ifdef TT_PYBIND11_BUILD_ABI
#define PYBIND11_BUILD_ABI TT_STR(TT_PYBIND11_BUILD_ABI)
#endif

#include <pybind11/chrono.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace {

using tt_torch::ProcessGroupTutti;

c10::intrusive_ptr<ProcessGroupTutti> make_group(const py::object &store, int rank, int size,
                                                 std::chrono::milliseconds timeout, uintptr_t comm)
{
    TORCH_CHECK_VALUE(comm != 0, "tutti: a process group needs a communicator");
    c10::intrusive_ptr<c10d::Store> s;
    if (!store.is_none())
        s = store.cast<c10::intrusive_ptr<c10d::Store>>();
    return c10::make_intrusive<ProcessGroupTutti>(s, rank, size, timeout, reinterpret_cast<tutti_comm_t>(comm));
}

c10::intrusive_ptr<tt_torch::Work> compressed(ProcessGroupTutti &pg, const at::Tensor &bucket, const py::dict &how,
                                              uintptr_t ef, bool compress)
{
    tutti_compress_t c{};
    c.kind = static_cast<tutti_compress_kind_t>(how["kind"].cast<int>());
    c.density = how["density"].cast<double>();
    c.k = how["k"].cast<size_t>();
    c.sampled = how["sampled"].cast<int>();
    c.block = how["block"].cast<size_t>();
    c.rounding = static_cast<tutti_rounding_t>(how["rounding"].cast<int>());
    c.seed = how["seed"].cast<uint64_t>();
    c.no_error_feedback = how["no_error_feedback"].cast<int>();
    py::gil_scoped_release nogil;
    return pg.allreduce_compressed(bucket, c, reinterpret_cast<tutti_ef_state_t>(ef), compress);
}

py::object tutti_error(const tt_torch::Error &e)
{
    return py::module::import("tutti").attr("TuttiError")(static_cast<int>(e.status), e.detail, e.call);
}

// A DDP hook's result: the bucket, as a future of a Python object (what
// torch 1.x takes from a Python hook); the call's failure is its error,
// unchanged (then() rethrows it from value()).
std::shared_ptr<torch::jit::PythonFutureWrapper> bucket_future(tt_torch::Work &w)
{
    auto fut = w.getFuture()->then(
        [](c10::ivalue::Future &done) -> c10::IValue {
            at::Tensor bucket = done.value().toTensorVector().at(0);
            py::gil_scoped_acquire gil;
            return torch::jit::toIValue(py::cast(bucket), c10::PyObjectType::get());
        },
        c10::PyObjectType::get());
    return std::make_shared<torch::jit::PythonFutureWrapper>(fut);
}

void translate(std::exception_ptr p)
{
    try {
        if (p)
            std::rethrow_exception(p);
    } catch (const tt_torch::Error &e) {
        py::object exc = tutti_error(e);
        PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
    }
}

// A failed Work's error as Python raises it (torch's own binding of
// exception() cannot convert it); None while it has not failed.
py::object work_exception(const tt_torch::Work &w)
{
    std::exception_ptr p = w.exception();
    if (!p)
        return py::none();
    try {
        std::rethrow_exception(p);
    } catch (const tt_torch::Error &e) {
        return tutti_error(e);
    } catch (const c10::Error &e) {
        return py::module::import("builtins").attr("RuntimeError")(e.what_without_backtrace());
    } catch (const std::exception &e) {
        return py::module::import("builtins").attr("RuntimeError")(e.what());
    }
}

} // namespace

PYBIND11_MODULE(_tutti_c10d, m)
{
    py::module::import("torch.distributed"); // torch's classes, which these derive from
    py::register_exception_translator(translate);

    py::class_<tt_torch::Work, c10::intrusive_ptr<tt_torch::Work>, c10d::Work>(m, "Work")
        .def("exception", &work_exception)
        .def("_bucket_future", &bucket_future)
        .def("compress_stats", [](const tt_torch::Work &w) {
            return py::make_tuple(w.stats.bytes_sent, w.stats.dense_bytes_sent, w.stats.k_sent, w.stats.fell_back != 0);
        });

    py::class_<ProcessGroupTutti, c10::intrusive_ptr<ProcessGroupTutti>, tt_torch::Base>(m, "ProcessGroupTutti")
        .def(py::init(&make_group), py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
             py::arg("comm"))
        .def("_comm_handle",
             [](const ProcessGroupTutti &pg) -> py::object {
                 if (pg.comm() == nullptr)
                     return py::none();
                 return py::int_(reinterpret_cast<uintptr_t>(pg.comm()));
             })
        .def("_drain", &ProcessGroupTutti::drain, py::call_guard<py::gil_scoped_release>())
        .def("_retire", &ProcessGroupTutti::retire, py::arg("destroy"), py::call_guard<py::gil_scoped_release>())
        .def("_allreduce_compressed", &compressed, py::arg("bucket"), py::arg("how"), py::arg("ef"),
             py::arg("compress"))
        .def("__repr__", [](const ProcessGroupTutti &pg) {
            return "<ProcessGroupTutti rank " + std::to_string(pg.getRank()) + " of " + std::to_string(pg.getSize()) +
                   ">";
        });

    m.def("_stop_all", &tt_torch::Worker::stop_all, py::call_guard<py::gil_scoped_release>(),
          "Runs every group's queued calls and stops their threads (at exit).");
    m.attr("TORCH_VERSION") = TORCH_VERSION; // the torch it was built for, which alone can load it
}
