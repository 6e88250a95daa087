# SPDX-License-Identifier: MIT
"""PyTorch's own distributed test battery on backend "tutti" and on gloo.

torch tests every c10d backend with one battery, DistributedTest._DistTestBase
in torch/testing/_internal/distributed/distributed_test.py, run per backend
through TestDistBackend (environment BACKEND, WORLD_SIZE, TEMP_DIR). This
runs its tests that need no GPU, for gloo and for tutti, at each world size,
each (backend, world size) in a process of its own, then compares: a test
that passes on gloo but not on tutti fails the run, unless DIFFERENCES below
says why it differs. The counts and the differences are printed as a table.

    python3 tests/torch/battery/torch_battery.py [-n 2,3] [-k PATTERN] [--json FILE]

How the battery is run here, and why:
- "tutti" joins the battery's feature sets of plugin, ddp, subgroup and gpu
  backends (gpu: the tests behind it that need a GPU are left out anyway).
- The tests gated to other backends by name that tutti implements run on
  it (UNGATED); the gates that are not about the backend stay.
- Test processes are forked, not spawned: a spawned rank imports torch anew
  for every test, which would make the run many times longer.
- torch 1.13's TestDistBackend turns on DDP's ReplicatedTensor mode, whose
  torch.distributed._shard does not import on Python 3.11 (Debian 12), so
  five CPU DDP tests fail on every backend there; it stays off (it is off by
  default, and gone from later torch).
- torch's test helpers import expecttest, which Debian 12 does not package;
  where it is missing, the stand-in beside this file is used.
"""
import argparse
import inspect
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ("gloo", "tutti")

# Tests that need a GPU: their decorators say so, or their name.
NEEDS_GPU = re.compile(r"skip_if_no_gpu|skip_if_lt_x_gpu|nccl_skip_if_lt_x_gpu|require_n_gpus_for_nccl_backend")
GPU_NAME = re.compile(r"cuda|_gpu|nccl", re.I)

# Tests gated to other backends by name that run on tutti: the gate is
# lifted for these, when its reason names a backend.
UNGATED = {
    # all_reduce_coalesced: "requires backend gloo"
    *(f"test_all_reduce_coalesced{g}_{op}" for g in ("", "_group", "_full_group")
      for op in ("sum", "product", "min", "max")),
    # all_to_all on CPU tensors, lists and single tensor, even and uneven: "Only MPI supports"
    *(f"test_all_to_all{g}" for g in ("", "_complex", "_group", "_full_group")),
    *(f"test_all_to_all_single_{s}_split{g}" for s in ("equal", "unequal")
      for g in ("", "_complex", "_group", "_full_group")),
    # the group's timeout: "Only gloo backend supports timeouts"
    "test_barrier_timeout_group", "test_barrier_timeout_full_group", "test_barrier_timeout_global",
    # batch_isend_irecv on CPU tensors: "GLOO Batch Send Recv CPU"
    "test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags",
    # object collectives: "requires backend gloo (or nccl)"
    "test_scatter_object_list", "test_gather_object", "test_gather_object_subgroup",
    # sparse all_reduce: "Only Gloo backend support sparse all reduce"
    "test_sparse_all_reduce_sum",
    # the group's own monitored_barrier, called directly (torch.distributed's refuses all but gloo)
    "test_monitored_barrier_gloo_rank_0_timeout",
    # DDP's no_sync (torch 2.x): "requires backend gloo"
    "test_grads_same_across_ranks_with_no_sync",
}
GATE_NAMES_BACKEND = re.compile(r"gloo|mpi|nccl|backend", re.I)

# Every test that passes on gloo and not on tutti, and why. The run fails
# on any other; an entry that no longer differs is reported as stale.
_MONITORED = ("torch.distributed.monitored_barrier refuses every backend but gloo by name, before it reaches the "
              "group; tutti's groups have monitored_barrier(timeout, wait_all_ranks) as gloo's, with its messages "
              "(tests/torch/torch_ranks.py; test_monitored_barrier_gloo_rank_0_timeout calls it directly and passes)")
DIFFERENCES = {
    "test_monitored_barrier_gloo": _MONITORED,
    "test_monitored_barrier_gloo_subgroup": _MONITORED,
    "test_monitored_barrier_failure_order": _MONITORED,
    "test_monitored_barrier_wait_all_ranks": _MONITORED,
}


def _log(*what):
    print(*what, flush=True)


# --- one backend at one world size, in a process of its own ---------------

def _expecttest():
    try:
        import expecttest  # noqa: F401
    except ImportError:
        sys.path.append(HERE)  # the stand-in


def _lift_gates(common_utils):
    """Skip decorators that leave the UNGATED tests alone when their reason names a backend."""
    def lifting(skip_if):
        def patched(condition, reason):
            def decorate(fn):
                if condition and fn.__name__ in UNGATED and GATE_NAMES_BACKEND.search(reason):
                    return fn
                return skip_if(condition, reason)(fn)
            return decorate
        return patched

    for name in ("sandcastle_skip_if", "skip_but_pass_in_sandcastle_if"):
        if hasattr(common_utils, name):
            setattr(common_utils, name, lifting(getattr(common_utils, name)))
    for name in ("sandcastle_skip", "skip_but_pass_in_sandcastle"):
        if hasattr(common_utils, name):
            skip_if = getattr(common_utils, name + "_if")
            setattr(common_utils, name, lambda reason, s=skip_if: s(True, reason))


def _replicated_tensor_off():
    try:
        import torch.nn.parallel._replicated_tensor_ddp_utils as rt
    except ImportError:
        return  # torch 2.x: no such mode
    rt._set_ddp_with_replicated_tensor = lambda value: None


def _import_battery(backend):
    _expecttest()
    import tutti.torch  # noqa: F401  registers the backend
    import torch.testing._internal.common_utils as common_utils

    _lift_gates(common_utils)
    from torch.testing._internal import common_distributed

    for feature in ("plugin", "ddp", "subgroup", "gpu"):
        common_distributed.DistTestCases.backend_feature[feature].add("tutti")
    import torch.testing._internal.distributed.distributed_test as battery

    _replicated_tensor_off()
    return battery


def _cpu_tests(base, pattern):
    names = []
    for name in sorted(n for n in dir(base) if n.startswith("test_")):
        src = inspect.getsource(getattr(base, name))
        decorators = src[:src.index("def ")]
        if NEEDS_GPU.search(decorators) or GPU_NAME.search(name):
            continue
        if pattern and not re.search(pattern, name):
            continue
        names.append(name)
    return names


class _Record(unittest.TestResult):
    """Each test's outcome: pass, fail (with the end of its message) or skip (with the reason)."""

    def __init__(self):
        super().__init__()
        self.outcomes = {}
        self._started = {}

    def startTest(self, test):
        super().startTest(test)
        self._started[test] = time.monotonic()

    def _put(self, test, outcome, detail=""):
        took = time.monotonic() - self._started.get(test, time.monotonic())
        self.outcomes[test._testMethodName] = {"outcome": outcome, "detail": detail[-2000:], "s": round(took, 1)}
        _log(f"  {test._testMethodName}: {outcome} ({took:.1f} s){': ' + detail.splitlines()[-1] if detail else ''}")

    def addSuccess(self, test):
        self._put(test, "pass")

    def addFailure(self, test, err):
        self._put(test, "fail", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self._put(test, "fail", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self._put(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        self._put(test, "pass")

    def addUnexpectedSuccess(self, test):
        self._put(test, "fail", "unexpected success")


def run_one(backend, world_size, pattern, out):
    """Runs the CPU tests for backend at world_size; writes {test: outcome} to out."""
    temp = tempfile.mkdtemp(prefix=f"tutti-battery-{backend}{world_size}-")
    os.environ.update(BACKEND=backend, WORLD_SIZE=str(world_size), TEMP_DIR=temp)
    # A hung test costs this much, not the battery's 300 s default.
    os.environ.setdefault("DISTRIBUTED_TESTS_DEFAULT_TIMEOUT", "60")
    sys.argv = sys.argv[:1]  # torch's test helpers parse the command line when imported
    battery = _import_battery(backend)
    logging.getLogger().setLevel(logging.WARNING)  # the battery logs every process start at INFO
    import torch.multiprocessing

    fork = torch.multiprocessing.get_context("fork").Process

    class Battery(battery.TestDistBackend, battery.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            self._start_processes(fork)

    names = _cpu_tests(battery.DistributedTest._DistTestBase, pattern)
    suite = unittest.TestSuite(Battery(n) for n in names)
    record = _Record()
    suite.run(record)
    with open(out, "w") as f:
        json.dump(record.outcomes, f, indent=1)


# --- every backend and world size, compared --------------------------------

def _run_all(sizes, pattern, folder, jobs):
    """Runs every (backend, world size), jobs at a time (their tests mostly
    wait: for ranks to start, for polled barriers); returns their outcomes."""
    todo = [(backend, ws) for ws in sizes for backend in BACKENDS]
    running, results = {}, {}
    while todo or running:
        while todo and len(running) < jobs:
            backend, ws = todo.pop(0)
            base = os.path.join(folder, f"{backend}-{ws}")
            cmd = [sys.executable, os.path.abspath(__file__), "--one", backend, str(ws), "--out", base + ".json"]
            if pattern:
                cmd += ["-k", pattern]
            with open(base + ".log", "w") as log:
                running[backend, ws] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), base,
                                        time.monotonic())
        time.sleep(0.2)
        for key, (proc, base, start) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[key]
            if proc.returncode != 0 or not os.path.exists(base + ".json"):
                with open(base + ".log") as log:
                    _log(log.read()[-5000:])
                raise SystemExit(f"torch_battery: the run of {key[0]} at world size {key[1]} ended with status "
                                 f"{proc.returncode} (its output's end is above)")
            with open(base + ".json") as f:
                results[key] = json.load(f)
            _log(f"{key[0]}, world size {key[1]}: {len(results[key])} tests in {time.monotonic() - start:.0f} s")
    return results


def _compare(results, sizes):
    """The tests that pass on gloo and not on tutti: unexplained, and listed
    in DIFFERENCES; and the listed ones that passed on both wherever gloo passed."""
    bad, known, same = [], [], set()
    for ws in sizes:
        gloo, tutti = results["gloo", ws], results["tutti", ws]
        for name, g in sorted(gloo.items()):
            t = tutti.get(name, {"outcome": "absent", "detail": ""})
            if g["outcome"] != "pass":
                continue
            if t["outcome"] == "pass":
                same.add(name)
            elif name in DIFFERENCES:
                known.append((ws, name, t["outcome"]))
            else:
                bad.append((ws, name, t))
    stale = same & set(DIFFERENCES) - {name for _, name, _ in known}
    return bad, known, stale


def _table(results, sizes):
    _log("| world size | backend | pass | fail | skip |")
    _log("|---:|---|---:|---:|---:|")
    for ws in sizes:
        for backend in BACKENDS:
            counts = [sum(o["outcome"] == k for o in results[backend, ws].values()) for k in ("pass", "fail", "skip")]
            _log(f"| {ws} | {backend} | {counts[0]} | {counts[1]} | {counts[2]} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--world-sizes", default="2,3", help="world sizes, comma-separated (default 2,3)")
    ap.add_argument("-k", dest="pattern", help="only the tests whose name matches this regular expression")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="backends and world sizes run at once (default 2)")
    ap.add_argument("--json", help="write every test's outcome per backend and world size here")
    ap.add_argument("--one", nargs=2, metavar=("BACKEND", "WORLD_SIZE"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        run_one(args.one[0], int(args.one[1]), args.pattern, args.out)
        return 0
    sizes = [int(s) for s in args.world_sizes.split(",")]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tutti-battery-") as folder:
        results = _run_all(sizes, args.pattern, folder, args.jobs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{b}-{ws}": r for (b, ws), r in results.items()}, f, indent=1)
    _table(results, sizes)
    bad, known, stale = _compare(results, sizes)
    by_reason = {}
    for ws, name, outcome in known:
        by_reason.setdefault(DIFFERENCES[name], {}).setdefault(name, []).append(f"{outcome} at world size {ws}")
    for reason, tests in by_reason.items():
        _log("known difference: " + "; ".join(f"{n} ({', '.join(w)})" for n, w in tests.items()) + f": {reason}")
    for name in sorted(stale):
        _log(f"note: {name} is listed as a difference but passed on tutti wherever it passed on gloo")
    for ws, name, t in bad:
        _log(f"FAIL, world size {ws}: {name} passes on gloo, {t['outcome']} on tutti:\n{t['detail']}")
    _log(f"torch_battery: {len(bad)} test(s) pass on gloo but not on tutti, {len(known)} known difference(s); "
         f"{time.monotonic() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
