# SPDX-License-Identifier: MIT
"""torch_styles.py's cases that need torch 2.x: FSDP1 (every sharding
strategy) and FSDP2, tensor and sequence parallel with DTensor, 2-D
FSDP x TP, torch.distributed.pipelining (GPipe, 1F1B, interleaved 1F1B),
functional collectives eager and compiled, and compiled DDP; each against
the one-process reference, as there."""
import contextlib

import torch
import torch.distributed as dist
import torch.nn as nn

from torch_styles import (BATCH, D_HID, D_IN, DDP, LR, STEPS, case, data, flat, loss_of, mlp, rank, reference, size,
                          train_ddp, whole)

CPU = torch.device("cpu")


def full(module):
    """Every parameter whole, DTensor or not, end to end."""
    return torch.cat([(p.full_tensor() if hasattr(p, "full_tensor") else p).detach().reshape(-1)
                      for p in module.parameters()])


def train(model, batch, steps=STEPS):
    o = torch.optim.SGD(model.parameters(), lr=LR)
    for s in range(steps):
        o.zero_grad()
        x = batch(s)
        loss_of(model(x), x).backward()
        o.step()
    return model


def fsdp1(strategy):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy

    group = None
    if strategy == "HYBRID_SHARD":  # one host: shard across every rank, replicate across none
        inter = [dist.new_group([q]) for q in range(size())]
        group = (dist.group.WORLD, inter[rank()])
    model = FSDP(mlp(), process_group=group, sharding_strategy=getattr(ShardingStrategy, strategy), device_id=CPU,
                 use_orig_params=True)
    train(model, lambda s: data(s, rank()))
    with FSDP.summon_full_params(model):
        got = flat(model)
    return got, reference(), flat(mlp())


for _s in ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD"):
    case(f"fsdp1 {_s}")(lambda s=_s: fsdp1(s))


def _mesh(shape, names=None):
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", shape, mesh_dim_names=names)


@contextlib.contextmanager
def _fully_shard_on_cpu():
    """Lets torch 2.6's fully_shard (FSDP2) train on the CPU, as it trains on
    a GPU, for the case's duration; on every backend alike, since neither
    of the two things it lacks there is a collective.

    Streams. fully_shard orders its copies and collectives with a device's
    streams and events: it records an event on the stream a collective ran
    on and has the next stream wait for it. torch.cpu's Stream, the CPU's
    stand-in for a device stream, has neither record_event nor wait_event,
    so fully_shard fails before its first collective. The two are given
    here where torch lacks them, doing nothing, which is exact on the CPU:
    every tensor op runs on the calling thread in program order, and every
    collective fully_shard issues either returns complete (async_op=False:
    c10d waits on its Work before returning) or is waited on through its
    Work by fully_shard itself (an explicit unshard's all-gather). What
    orders a collective's result is still the backend's Work.wait().

    Version counters. Resharded after forward, a layer's parameters are
    all-gathered again for backward and copied out into the very buffer
    that forward's autograd graph saved, with the same values. fully_shard
    means that copy to be invisible to autograd: torch 2.6's CUDA copy-out
    kernel leaves the buffer's version counter alone, and later torch
    preserves the counter around the copy itself; on the CPU, torch 2.6's
    kernel bumps it, and backward then fails ("modified by an inplace
    operation"). The copy-out is wrapped here to preserve the counters of
    what it writes, as later torch does (where it changes nothing). The
    values come from the backend's all-gather all the same: were they
    wrong, the gradients would be, and the case would fail."""
    stream, added = torch.cpu.Stream, []

    def record_event(self, event=None):
        event = event if event is not None else torch.cpu.Event()
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    for name, fn in (("record_event", record_event), ("wait_event", wait_event)):
        if not hasattr(stream, name):
            setattr(stream, name, fn)
            added.append(name)
    copy_out = getattr(torch.ops.fsdp, "split_with_sizes_copy", None)  # defined by importing fully_shard

    def preserving(*args, out, **kwargs):
        versions = [(t, t._version) for t in out if not t.is_inference()]
        copy_out(*args, out=out, **kwargs)
        for t, v in versions:
            torch._C._autograd._unsafe_set_version_counter(t, v)

    if copy_out is not None:
        torch.ops.fsdp.split_with_sizes_copy = preserving
    try:
        yield
    finally:
        if copy_out is not None:
            torch.ops.fsdp.split_with_sizes_copy = copy_out
        for name in added:
            delattr(stream, name)


@case("fsdp2 (fully_shard)")
def fsdp2():
    """fully_shard averages the gradients with reduce_scatter_tensor and
    ReduceOp.AVG. torch 2.6's gloo has no AVG, and its reduce_scatter_tensor
    sums instead without a word, so on gloo this case and 2-D FSDP x TP
    take steps as many times too long as there are data-parallel ranks,
    and miss the reference by about 1."""
    from torch.distributed.fsdp import fully_shard

    with _fully_shard_on_cpu():
        model, mesh = mlp(), _mesh((size(),))
        for layer in (model[0], model[2]):
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        got = full(train(model, lambda s: data(s, rank())))
    return got, reference(), flat(mlp())


def _tp_plan():
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    return {"0": ColwiseParallel(), "2": RowwiseParallel()}


@case("tensor parallel (DTensor, column then row)")
def tensor_parallel():
    from torch.distributed.tensor.parallel import parallelize_module

    model = parallelize_module(mlp(), _mesh((size(),)), _tp_plan())
    return full(train(model, whole)), reference(), flat(mlp())


class _Norm(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.norm, self.body = nn.LayerNorm(D_IN), mlp()

    def forward(self, x):
        return self.body(self.norm(x))


@case("sequence parallel (DTensor: LayerNorm sharded on the sequence)")
def sequence_parallel():
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    seq = 4 * size()

    def tokens(s):
        return torch.randn(2, seq, D_IN, generator=torch.Generator().manual_seed(7 + s))

    plan = {"norm": SequenceParallel(), "body.0": ColwiseParallel(input_layouts=Shard(1)),
            "body.2": RowwiseParallel()}
    model = parallelize_module(_Norm(), _mesh((size(),)), plan)
    o = torch.optim.SGD(model.parameters(), lr=LR)
    for s in range(STEPS):
        o.zero_grad()
        x = tokens(s)
        mine = x[:, 4 * rank():4 * rank() + 4]
        loss_of(model(mine), x).backward()
        o.step()
    ref, start = _Norm(), flat(_Norm())
    o = torch.optim.SGD(ref.parameters(), lr=LR)
    for s in range(STEPS):
        o.zero_grad()
        x = tokens(s)
        loss_of(ref(x), x).backward()
        o.step()
    return full(model), flat(ref), start


@case("2-D FSDP x TP (fully_shard over tensor parallel)", ranks=4)
def fsdp_tp():
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import parallelize_module

    with _fully_shard_on_cpu():
        mesh = _mesh((size() // 2, 2), ("dp", "tp"))
        model = parallelize_module(mlp(), mesh["tp"], _tp_plan())
        fully_shard(model, mesh=mesh["dp"])
        dp = mesh["dp"].get_local_rank()
        got = full(train(model, lambda s: data(s, dp)))
    return got, reference(batches=lambda s: [torch.cat([data(s, d) for d in range(size() // 2)])]), flat(mlp())


def _deep(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(D_IN, D_HID), nn.Tanh(), nn.Linear(D_HID, D_HID), nn.Tanh(),
                         nn.Linear(D_HID, D_HID), nn.Tanh(), nn.Linear(D_HID, D_IN))


def pipelined(schedule, per_rank):
    """torch.distributed.pipelining: per_rank stages on each rank, stage k on rank k % ranks."""
    from torch.distributed import pipelining as pp

    stages_n, micro = size() * per_rank, 2 * size()
    bounds = [round(len(_deep()) * k / stages_n) for k in range(stages_n + 1)]
    model, ref = _deep(), _deep()
    mine = [k for k in range(stages_n) if k % size() == rank()]
    parts = [model[bounds[k]:bounds[k + 1]] for k in mine]
    start = torch.cat([flat(p) for p in parts])
    stages = [pp.PipelineStage(part, k, stages_n, CPU) for part, k in zip(parts, mine)]
    kind = getattr(pp, schedule)
    sched = kind(stages if per_rank > 1 else stages[0], micro, loss_fn=lambda out, tgt: (out - tgt).pow(2).mean())
    o = torch.optim.SGD([p for part in parts for p in part.parameters()], lr=LR)
    for s in range(STEPS):
        o.zero_grad()
        x = whole(s)
        args, kwargs = ((x,) if 0 in mine else ()), ({"target": x.flip(1)} if stages_n - 1 in mine else {})
        sched.step(*args, **kwargs)
        o.step()
    reference(model=ref, batches=lambda s: list(whole(s).chunk(micro)))
    want = torch.cat([flat(ref[bounds[k]:bounds[k + 1]]) for k in mine])
    return torch.cat([flat(p) for p in parts]), want, start


case("pipelining GPipe")(lambda: pipelined("ScheduleGPipe", 1))
case("pipelining 1F1B")(lambda: pipelined("Schedule1F1B", 1))
case("pipelining interleaved 1F1B (2 stages a rank)")(lambda: pipelined("ScheduleInterleaved1F1B", 2))


def _funcol_math(x):
    import torch.distributed._functional_collectives as funcol

    g = dist.group.WORLD
    y = funcol.all_reduce(x * 2, "sum", g)
    z = funcol.all_gather_tensor(y + 1, 0, g)
    w = funcol.reduce_scatter_tensor(z, "sum", 0, g)
    return funcol.all_to_all_single(w * 3, None, None, g) + funcol.wait_tensor(y)[: w.shape[0]]


def _funcol_want(xs):
    """_funcol_math worked out for every rank, here: xs[q] is rank q's input."""
    p = len(xs)
    y = sum(x * 2 for x in xs)
    z = torch.cat([y + 1] * p)
    w = [(z * p).chunk(p)[q] for q in range(p)]
    blocks = [[(w[q] * 3).chunk(p)[j] for j in range(p)] for q in range(p)]
    return [torch.cat([blocks[q][r] for q in range(p)]) + y[: w[r].shape[0]] for r in range(p)]


def funcol_case(compiler):
    xs = [torch.arange(4 * size(), dtype=torch.float32) + 10 * q for q in range(size())]
    fn = _funcol_math if compiler is None else torch.compile(_funcol_math, backend=compiler, fullgraph=True)
    got = fn(xs[rank()].clone())
    want = _funcol_want(xs)[rank()]
    return got, want, torch.zeros_like(want)


case("functional collectives, eager")(lambda: funcol_case(None))
case("functional collectives, torch.compile aot_eager")(lambda: funcol_case("aot_eager"))
case("functional collectives, torch.compile inductor")(lambda: funcol_case("inductor"))


@case("compiled DDP (torch.compile aot_eager, DDPOptimizer)")
def compiled_ddp():
    ddp = DDP(mlp(), bucket_cap_mb=0.002)
    compiled = torch.compile(ddp, backend="aot_eager")
    o = torch.optim.SGD(ddp.parameters(), lr=LR)
    for s in range(STEPS):
        o.zero_grad()
        x = data(s, rank())
        loss_of(compiled(x), x).backward()
        o.step()
    return flat(ddp.module), reference(), flat(mlp())


_ = (BATCH, train_ddp)  # shared names the 2.x cases do not all use
