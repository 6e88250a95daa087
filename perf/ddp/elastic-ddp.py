#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""DDP training that survives kill -9 of a rank, against torchrun restarting the job.

    python3 perf/ddp/elastic-ddp.py --json perf/plots/elastic.json    # both runs, one after the other
    python3 perf/ddp/elastic-ddp.py --run tutti --steps 24 --kill-at 8 --join-at 14 --check   # short (make check)

Both runs train the same model (an MLP on 16 Gaussian clusters, SGD with
momentum) on 4 CPU ranks with tutti's backend, gradients averaged by
tutti.torch.compression_hook (top-k with error feedback), and kill -9 one
rank (--victim) once step --kill-at is done.

tutti: this script starts the 4 workers itself and serves them a torch
TCPStore. The survivors' collective fails; they call tutti.torch.shrink,
wrap DDP anew over the 3 of them (rank 0's parameters and momentum are
broadcast, the hook's error feedback carried over) and go on. At step
--join-at a replacement is started; it joins through tutti.torch.join and
the survivors' tutti.torch.grow, and training goes on with 4.

restart: the same workers under torchrun --max_restarts 1 (its defaults
otherwise), rank 0 checkpointing every --ckpt-every steps; after the kill,
torchrun notices, stops the others and starts all 4 again, which load the
checkpoint.

Measured: from the kill (this process's clock) to the next step completed
by every rank of the job, and the global loss of every step. With --json,
everything goes there (perf/ddp/elastic-plot.py draws it).
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "python"))


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default="both", choices=["tutti", "restart", "both"])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=90)
    ap.add_argument("--kill-at", type=int, default=25, help="kill once this step is done")
    ap.add_argument("--victim", type=int, default=2)
    ap.add_argument("--join-at", type=int, default=26, help="tutti: start the replacement at this step")
    ap.add_argument("--ckpt-every", type=int, default=10, help="restart: rank 0 checkpoints every this many steps")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=20, help="seconds: the groups' timeout (TUTTI_TIMEOUT)")
    ap.add_argument("--json", help="write the runs here")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the tutti run recovered as it must")
    ap.add_argument("--worker", choices=["tutti", "restart"], help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--store-port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--join", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ckpt", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


# ---------------------------------------------------------------- training

CLASSES, FEATURES = 16, 64


def model_for(args):
    import torch

    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, args.width), torch.nn.ReLU(),
                               torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
                               torch.nn.Linear(args.width, CLASSES))


def batch_for(args, step, rank):
    """The same data for a (step, rank) in both runs, whoever holds the rank."""
    import torch

    g = torch.Generator().manual_seed(7)
    centers = torch.randn(CLASSES, FEATURES, generator=g) * 2
    g.manual_seed(1000003 * step + rank)
    y = torch.randint(0, CLASSES, (args.batch,), generator=g)
    return centers[y] + 4 * torch.randn(args.batch, FEATURES, generator=g), y


class Trainer:
    """One rank's model, optimizer, hook state and DDP wrapper."""

    def __init__(self, args, log):
        import torch
        import tutti.torch as tt

        self.args, self.log, self.torch, self.tt = args, log, torch, tt
        self.model = model_for(args)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=args.lr, momentum=0.9)
        for p in self.model.parameters():  # so that momentum can be handed over before the first step
            self.opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
        self.state = None
        self.pg = self.ddp = None
        self.step = 0

    def wrap(self, pg):
        """DDP over pg: rank 0's parameters, momentum and step count reach every rank."""
        import gc
        import weakref

        from torch.nn.parallel import DistributedDataParallel as DDP

        # The old wrapper's gradient hooks must go before the next backward
        # pass; a full collection (a second, under load) only if a cycle kept it.
        old, self.ddp, self.pg = self.ddp, None, pg
        if old is not None:
            alive = weakref.ref(old)
            del old
            if alive() is not None:
                gc.collect()
        self.ddp = DDP(self.model, process_group=pg)  # broadcasts rank 0's parameters
        if self.state is None:
            self.state = self.tt.CompressionState("topk", density=0.05, process_group=pg)
        self.ddp.register_comm_hook(self.state, self.tt.compression_hook)
        comm = self.tt.communicator(pg)
        for p in self.model.parameters():
            comm.broadcast(self.opt.state[p]["momentum_buffer"], 0)
        count = self.torch.tensor([self.step], dtype=self.torch.int64)
        comm.broadcast(count, 0)
        self.step = int(count)

    def train_step(self, *flags):
        """One step; returns the loss averaged over the ranks, and for each
        flag whether any rank raised it."""
        x, y = batch_for(self.args, self.step, self.pg.rank())
        self.opt.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self.ddp(x), y)
        loss.backward()
        self.opt.step()
        ctl = self.torch.tensor([float(loss)] + [float(f) for f in flags])
        self.tt.communicator(self.pg).allreduce(ctl)
        self.step += 1
        return (float(ctl[0]) / self.pg.size(),) + tuple(bool(c > 0) for c in ctl[1:])


def is_lost_rank(e):
    return "TUTTI_ERR_PEER_FAILED" in str(e) or "TUTTI_ERR_REVOKED" in str(e) or "TUTTI_ERR_TIMEOUT" in str(e)


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, event, **kw):
        kw.update(event=event, t=time.time())
        self.f.write(json.dumps(kw) + "\n")


def tutti_worker(args):
    import torch.distributed as dist
    import tutti.torch as tt

    log = Log(args.log)
    log("start", pid=os.getpid(), rank=args.rank)
    store = dist.TCPStore("127.0.0.1", args.store_port, is_master=False,
                          timeout=datetime.timedelta(seconds=120))
    t = Trainer(args, log)
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.join:
        store.add("elastic/ready", 1)
        pg = tt.join(store, args.rank, args.ranks, key="elastic/grow", timeout=timeout)
        t.wrap(pg)
        log("joined", rank=pg.rank(), world=pg.size(), step=t.step)
    else:
        dist.init_process_group("tutti", store=store, rank=args.rank, world_size=args.ranks, timeout=timeout)
        t.wrap(dist.distributed_c10d._get_default_group())
    # Rank 0 reads the store (add 0 never blocks) and tells the others through each step's
    # all-reduce: a replacement is coming (then training goes on until it joined), or ready.
    # After a grow every rank makes one step more, so that the newcomer and the others agree.
    grown, waiting, more = args.join, False, int(args.join)
    while t.step < args.steps or waiting or more:
        try:
            asks = not grown and t.pg.rank() == 0
            loss, grow, coming = t.train_step(asks and store.add("elastic/ready", 0) > 0,
                                              asks and store.add("elastic/coming", 0) > 0)
            waiting, more = coming and not grown, 0
            log("step", step=t.step, loss=loss, world=t.pg.size())
            if grow:
                pg = tt.grow(t.pg, store, args.ranks, key="elastic/grow", states=[t.state])
                t.wrap(pg)
                grown, waiting, more = True, False, 1
                log("grown", world=pg.size(), step=t.step)
        except RuntimeError as e:
            if not is_lost_rank(e):
                raise
            log("failed", step=t.step, why=str(e).splitlines()[0][:300])
            pg = tt.shrink(t.pg, states=[t.state])
            t.wrap(pg)
            log("shrunk", world=pg.size(), rank=pg.rank(), step=t.step)
    log("done", step=t.step)
    tt.communicator(t.pg).barrier()
    os._exit(0)  # no collective destroy: the default group is spent, and the survivors' needs no ceremony


def restart_worker(args):
    import torch
    import torch.distributed as dist
    import tutti.torch  # noqa: F401  (registers the backend)

    rank = int(os.environ["RANK"])
    log = Log(os.path.join(args.log, f"rank{rank}.jsonl"))
    log("start", pid=os.getpid(), rank=rank, restart=int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)))
    dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=args.timeout))
    t = Trainer(args, log)
    if os.path.exists(args.ckpt):
        saved = torch.load(args.ckpt)
        t.model.load_state_dict(saved["model"])
        t.opt.load_state_dict(saved["opt"])
        t.step = saved["step"]
        log("loaded", step=t.step)
    t.wrap(dist.distributed_c10d._get_default_group())
    while t.step < args.steps:
        loss, _ = t.train_step(False)
        log("step", step=t.step, loss=loss, world=t.pg.size())
        if rank == 0 and t.step % args.ckpt_every == 0:
            torch.save({"model": t.model.state_dict(), "opt": t.opt.state_dict(), "step": t.step}, args.ckpt + ".new")
            os.replace(args.ckpt + ".new", args.ckpt)
    tutti.torch.communicator(t.pg).barrier()
    log("done", step=t.step)


# ---------------------------------------------------------------- the runs


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def common_args(args):
    return ["--ranks", str(args.ranks), "--steps", str(args.steps), "--width", str(args.width), "--batch",
            str(args.batch), "--lr", str(args.lr), "--timeout", str(args.timeout), "--ckpt-every",
            str(args.ckpt_every)]


class Tail:
    """The JSON lines appended to some files, as they come; each event gets its file's name as 'src'."""

    def __init__(self):
        self.files = {}

    def watch(self, path, src):
        self.files.setdefault(path, [src, 0])

    def poll(self):
        out = []
        for path, where in self.files.items():
            if not os.path.exists(path):
                continue
            with open(path) as f:
                f.seek(where[1])
                for line in f:
                    if not line.endswith("\n"):
                        break
                    where[1] += len(line)
                    ev = json.loads(line)
                    ev["src"] = where[0]
                    out.append(ev)
        return out


def first_after(events, kind, t, src=None):
    return min((e["t"] for e in events if e["event"] == kind and e["t"] > t and (src is None or e["src"] == src)),
               default=None)


def recovery(events, t_kill, ranks):
    """Seconds from the kill until every rank in ranks completed a step."""
    firsts = [first_after(events, "step", t_kill, r) for r in ranks]
    return None if None in firsts else max(firsts) - t_kill


def curve(events, src):
    return [{"step": e["step"], "loss": e["loss"], "world": e["world"], "t": e["t"]} for e in events
            if e["event"] == "step" and e["src"] == src]


def supervise(procs, tail, events, on_event, limit_s):
    """Collects events until every process in procs ended; on_event may act on each."""
    deadline = time.time() + limit_s
    while any(p.poll() is None for p in procs.values()):
        for e in tail.poll():
            events.append(e)
            on_event(e)
        if time.time() > deadline:
            for p in procs.values():
                p.kill()
            raise SystemExit(f"the run did not end within {limit_s} s")
        time.sleep(0.005)
    events.extend(tail.poll())


def run_tutti(args, tmp):
    import torch.distributed as dist

    # A free port can be taken by another process before the store binds it
    # (tests run side by side): then another port is tried.
    for attempt in range(5):
        port = free_port()
        try:
            store = dist.TCPStore("127.0.0.1", port, is_master=True, timeout=datetime.timedelta(seconds=120),
                                  wait_for_workers=False)
            break
        except RuntimeError as e:
            if "Address already in use" not in str(e) or attempt == 4:
                raise
    tail, events, procs, at = Tail(), [], {}, {}

    def start(name, extra):
        log = os.path.join(tmp, f"tutti-{name}.jsonl")
        tail.watch(log, name)
        procs[name] = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", "tutti", "--log", log,
                                        "--store-port", str(port)] + common_args(args) + extra)

    for r in range(args.ranks):
        start(f"rank{r}", ["--rank", str(r)])

    def act(e):
        if "kill" not in at and e["src"] == "rank0" and e["event"] == "step" and e["step"] >= args.kill_at:
            procs[f"rank{args.victim}"].send_signal(signal.SIGKILL)
            at["kill"] = time.time()
        if "kill" in at and "join" not in at and e["event"] == "step" and e["step"] >= args.join_at:
            start("replacement", ["--rank", str(args.ranks - 1), "--join"])
            store.add("elastic/coming", 1)
            at["join"] = time.time()

    supervise(procs, tail, events, act, 600)
    del store
    codes = {n: p.returncode for n, p in procs.items()}
    survivors = [f"rank{r}" for r in range(args.ranks) if r != args.victim]
    t_kill = at.get("kill", float("inf"))
    return {"name": "tutti", "codes": codes, "kill_t": at.get("kill"), "join_t": at.get("join"),
            "detect_s": max((first_after(events, "failed", t_kill, r) or float("nan")) - t_kill for r in survivors),
            "shrunk_s": max((first_after(events, "shrunk", t_kill, r) or float("nan")) - t_kill for r in survivors),
            "recovery_s": recovery(events, t_kill, survivors),
            "joined_s": (first_after(events, "joined", 0, "replacement") or float("nan")) - at.get("join", float("nan")),
            "curve": curve(events, "rank0"), "events": events}


def run_restart(args, tmp):
    logdir, ckpt = os.path.join(tmp, "restart"), os.path.join(tmp, "ckpt.pt")
    os.makedirs(logdir, exist_ok=True)
    tail, events, at = Tail(), [], {}
    for r in range(args.ranks):
        tail.watch(os.path.join(logdir, f"rank{r}.jsonl"), f"rank{r}")
    # The workers' output goes to files: torch 1.13 on Python 3.11 cannot parse its own default
    # for these two options (a zero or multi-bit Std is not found when iterating the enum).
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(args.ranks), "--max_restarts", "1",
           "--master_port", str(free_port()), "--redirects", "1", "--tee", "2", "--log_dir",
           os.path.join(tmp, "torchrun"), os.path.abspath(__file__), "--worker", "restart", "--log", logdir, "--ckpt",
           ckpt] + common_args(args)
    procs = {"torchrun": subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)}
    pids = {}

    def act(e):
        if e["event"] == "start" and e.get("restart") == 0:
            pids[e["src"]] = e["pid"]
        if "kill" not in at and e["src"] == "rank0" and e["event"] == "step" and e["step"] >= args.kill_at:
            os.kill(pids[f"rank{args.victim}"], signal.SIGKILL)
            at["kill"] = time.time()

    supervise(procs, tail, events, act, 900)
    t_kill = at.get("kill", float("inf"))
    last = max((e["step"] for e in events if e["event"] == "step" and e["t"] < t_kill and e["src"] == "rank0"),
               default=0)
    again = min((e["t"] for e in events if e["event"] == "step" and e["t"] > t_kill and e["src"] == "rank0"
                 and e["step"] >= last), default=float("nan"))
    loaded = [e["step"] for e in events if e["event"] == "loaded" and e["src"] == "rank0"]
    up = min((e["t"] for e in events if e["event"] == "start" and e.get("restart") == 1), default=float("nan"))
    return {"name": "restart", "codes": {"torchrun": procs["torchrun"].returncode}, "kill_t": at.get("kill"),
            "up_s": up - t_kill,
            "recovery_s": recovery(events, t_kill, [f"rank{r}" for r in range(args.ranks)]),
            "caught_up_s": again - t_kill, "resumed_from": loaded[0] if loaded else None,
            "curve": curve(events, "rank0"), "events": events}


def check(run, args):
    """The tutti run recovered as it must: every rank finished, 3 ranks after the kill, 4 after the join."""
    bad = [n for n, c in run["codes"].items() if c != 0 and n != f"rank{args.victim}"]
    worlds = [p["world"] for p in run["curve"]]
    losses = [p["loss"] for p in run["curve"]]
    problems = []
    if bad:
        problems.append(f"ranks {bad} failed")
    if run["codes"].get(f"rank{args.victim}") != -signal.SIGKILL:
        problems.append("the victim was not killed")
    if not run["curve"] or run["curve"][-1]["step"] < args.steps:
        problems.append("training did not reach the last step")
    if args.ranks - 1 not in worlds or worlds[-1] != args.ranks:
        problems.append(f"the world sizes went {sorted(set(worlds))}, not down to {args.ranks - 1} and back")
    if run["recovery_s"] is None or not losses or not losses[-1] < losses[0]:
        problems.append("no step after the kill, or the loss did not fall")
    for p in problems:
        print("FAIL:", p)
    return not problems


def report(runs, args):
    print(f"{'run':8} {'kill->detect':>13} {'kill->shrunk':>13} {'kill->next step':>16}  notes")
    for r in runs:
        notes = ""
        if r["name"] == "restart":
            notes = f"workers up again {r['up_s']:.1f} s after the kill, resumed from checkpoint step " \
                    f"{r['resumed_from']}, back at the killed step after {r['caught_up_s']:.2f} s"
        else:
            grown = next((p["step"] for p in r["curve"] if p["t"] > (r["join_t"] or 0) and p["world"] == args.ranks),
                         None)
            notes = f"{args.ranks - 1} ranks from step {args.kill_at + 1}; the replacement, started then, joined " \
                    f"{r['joined_s']:.1f} s later: {args.ranks} ranks from step {grown}"
        fmt = lambda v: "-" if v is None else f"{v:.3f} s"  # noqa: E731
        print(f"{r['name']:8} {fmt(r.get('detect_s')):>13} {fmt(r.get('shrunk_s')):>13} "
              f"{fmt(r['recovery_s']):>16}  {notes}")
    if len(runs) == 2 and runs[0]["recovery_s"] and runs[1]["recovery_s"]:
        print(f"restart / tutti: {runs[1]['recovery_s'] / runs[0]['recovery_s']:.1f}x")


def main():
    args = parse()
    if args.worker == "tutti":
        return tutti_worker(args)
    if args.worker == "restart":
        return restart_worker(args)
    tmp = tempfile.mkdtemp(prefix="tutti-elastic-")
    os.environ.setdefault("TUTTI_TIMEOUT", str(int(args.timeout)))
    try:
        runs = []
        if args.run in ("tutti", "both"):
            runs.append(run_tutti(args, tmp))
        if args.run in ("restart", "both"):
            runs.append(run_restart(args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(runs, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "load": os.getloadavg(), "runs": runs}, f)
    if args.check and not check(runs[0], args):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
