# SPDX-License-Identifier: MIT
"""How perf/scale/scale-bench builds its probes and starts one job of each
system: on this machine (tutti-run, mpirun, or one process per gloo rank)
or over simulated hosts, network namespaces joined by a bridge (tutti and
gloo ranks started in their namespace with their launcher's variables;
mpirun in the first host, reaching the others through an rsh that enters
their namespace). Needs root and iproute2 for the namespaces."""
import os
import shutil
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUBNET = "10.79.0.0/16"


def host_ip(h):
    return f"10.79.{h // 250}.{h % 250 + 1}"


def make_var(build, name):
    """A variable of the build tree's Makefile (abs_top_srcdir ...), or None."""
    try:
        with open(os.path.join(build, "Makefile")) as f:
            for line in f:
                if line.startswith(name + " ="):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def build_probes(build, python, work, systems):
    """{system: command prefix} for the systems that can run here, and
    {system: why not} for the others; the socket counter's path."""
    ready, why = {}, {}
    counter = os.path.join(work, "libsockcount.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", counter, os.path.join(HERE, "sockcount.c"), "-ldl"],
                   check=True)
    probe = os.path.join(HERE, "scale-probe.c")
    if "tutti" in systems:
        src = make_var(build, "abs_top_srcdir") or build
        lib = os.path.join(build, ".libs")
        if not os.path.exists(os.path.join(build, "tutti-run")) or not os.path.isdir(lib):
            why["tutti"] = f"{build} holds no built tutti (tutti-run, .libs)"
        else:
            exe = os.path.join(work, "probe-tutti")
            subprocess.run(["cc", "-O2", "-I" + os.path.join(src, "src/include"), "-I" + os.path.join(build, "src/include"),
                            "-o", exe, probe, "-L" + lib, "-ltutti", "-Wl,-rpath," + lib], check=True)
            ready["tutti"] = exe
    if "mpi" in systems:
        if not shutil.which("mpicc") or not shutil.which("mpirun"):
            why["mpi"] = "no mpicc or mpirun (apt-get install libopenmpi-dev openmpi-bin)"
        else:
            exe = os.path.join(work, "probe-mpi")
            subprocess.run(["mpicc", "-O2", "-DSCALE_MPI", "-o", exe, probe], check=True)
            ready["mpi"] = exe
    if "gloo" in systems:
        ok = subprocess.run([python, "-c", "import torch.distributed as d; assert d.is_gloo_available()"],
                            capture_output=True).returncode == 0
        if ok:
            ready["gloo"] = os.path.join(HERE, "scale_gloo.py")
        else:
            why["gloo"] = f"{python} has no torch with gloo (apt-get install python3-torch)"
    return ready, why, counter


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """Processes started together (each in its own session), waited for with one deadline."""

    def __init__(self):
        self.procs = []

    def start(self, argv, env, log):
        self.procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def wait(self, timeout):
        """The worst exit status, or None when the deadline passed (then all are killed)."""
        deadline, worst = time.time() + timeout, 0
        for p in self.procs:
            try:
                rc = p.wait(timeout=max(0.1, deadline - time.time()))
                worst = rc if worst == 0 else worst
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        return worst

    def kill(self):
        """Every process of the job's sessions: mpirun's daemons and ranks make process groups of their own."""
        leaders = {p.pid for p in self.procs}
        for _ in range(3):
            for pid in [int(d) for d in os.listdir("/proc") if d.isdigit()]:
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        sid = int(f.read().rsplit(")", 1)[1].split()[3])  # state ppid pgrp session
                    if sid in leaders:
                        os.kill(pid, signal.SIGKILL)
                except (OSError, ValueError, IndexError):
                    pass
            time.sleep(0.2)
        for p in self.procs:
            p.wait()


def without_preload(env):
    """The launcher's own environment: only the ranks count their sockets."""
    return {k: v for k, v in env.items() if k != "LD_PRELOAD"}


def mpi_exports(env):
    return [a for k in ("SCALE_OUT", "LD_PRELOAD") if k in env for a in ("-x", f"{k}={env[k]}")]


def start_local(job, system, exe, n, env, build, python, log, roots=1):
    if system == "tutti":
        job.start([os.path.join(build, "tutti-run"), "-n", str(n), "--roots", str(min(roots, n)), exe], env, log)
    elif system == "mpi":
        job.start(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), "--mca", "btl", "self,vader"]
                  + mpi_exports(env) + [exe], without_preload(env), log)
    else:
        port = free_port()
        for r in range(n):
            job.start([python, exe], dict(env, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r),
                                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)), log)


class Hosts:
    """nhosts network namespaces joined by a bridge in a switch namespace,
    each link limited to rate_mbit by a token bucket."""

    def __init__(self, nhosts, rate_mbit, work):
        self.tag, self.nhosts, self.work = f"tts{os.getpid() % 100000}", nhosts, work
        self.names = []
        sw = self.switch = self.tag + "sw"
        self.ip("netns", "add", sw)
        self.names.append(sw)
        # `ip netns exec` remounts /sys, which fails where / is a plain folder
        # (a chroot): nsenter then enters the network namespace alone, which
        # is all the ranks need.
        self.nsenter = subprocess.run(["ip", "netns", "exec", sw, "true"], capture_output=True).returncode != 0
        self.ns(sw, "ip", "link", "add", "br0", "type", "bridge")
        for cmd in (["ip", "link", "set", "br0", "up"], ["ip", "link", "set", "lo", "up"]):
            self.ns(sw, *cmd)
        for h in range(nhosts):
            name, veth, port = self.host(h), f"h{h}", f"p{h}"
            self.ip("netns", "add", name)
            self.names.append(name)
            self.ip("link", "add", veth, "netns", name, "type", "veth", "peer", "name", port, "netns", sw)
            self.ns(name, "ip", "addr", "add", host_ip(h) + "/16", "dev", veth)
            for cmd in (["ip", "link", "set", veth, "up"], ["ip", "link", "set", "lo", "up"],
                        ["tc", "qdisc", "add", "dev", veth, "root", "tbf", "rate", f"{rate_mbit}mbit",
                         "burst", "512kb", "latency", "100ms"]):
                self.ns(name, *cmd)
            self.ns(sw, "ip", "link", "set", port, "master", "br0")
            self.ns(sw, "ip", "link", "set", port, "up")
        self.rsh = os.path.join(work, "netns-rsh")
        with open(self.rsh, "w") as f:  # mpirun's rsh: "HOST COMMAND..." runs COMMAND in HOST's namespace
            f.write("#!/bin/sh\nhost=$1; shift\ncase $host in\n")
            for h in range(nhosts):
                f.write(f"{host_ip(h)}) ns={self.host(h)} ;;\n")
            f.write('*) echo "netns-rsh: no host $host" >&2; exit 1 ;;\nesac\n'
                    f'exec {" ".join(self.inside("$ns"))} unshare --uts sh -c \'hostname "$0" && exec sh -c "$1"\' "$ns" "$*"\n')
        os.chmod(self.rsh, 0o755)

    def host(self, h):
        return f"{self.tag}h{h}"

    def inside(self, name):
        """The command words that run what follows in namespace name."""
        return ["nsenter", f"--net=/run/netns/{name}"] if self.nsenter else ["ip", "netns", "exec", name]

    @staticmethod
    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True)

    def ns(self, name, *cmd):
        subprocess.run([*self.inside(name), *cmd], check=True, capture_output=True)

    def close(self):
        for name in reversed(self.names):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


_runs = [0]


def start_hosts(job, system, exe, hosts, nhosts, per_host, env, python, log):
    _runs[0] += 1  # a port of its own for each job: the last one's may linger in TIME_WAIT
    n, port = nhosts * per_host, 20000 + (os.getpid() + 7 * _runs[0]) % 20000
    if system == "mpi":
        spec = ",".join(f"{host_ip(h)}:{per_host}" for h in range(nhosts))
        # Each host its own host name too: Open MPI's shared-memory files are named after it.
        job.start([*hosts.inside(hosts.host(0)), "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                   hosts.host(0), "mpirun", "--allow-run-as-root", "--oversubscribe",
                   "-np", str(n), "--host", spec, "--mca", "plm_rsh_agent", hosts.rsh, "--mca", "btl",
                   "self,vader,tcp", "--mca", "btl_tcp_if_include", SUBNET, "--mca", "oob_tcp_if_include", SUBNET]
                  + mpi_exports(env) + [exe], without_preload(env), log)
        return
    key = os.urandom(16).hex()
    for r in range(n):
        h, local = r // per_host, r % per_host
        if system == "tutti":
            more = dict(TUTTI_RANK=str(r), TUTTI_NRANKS=str(n), TUTTI_LOCAL_RANK=str(local), TUTTI_NODE_ID=str(h),
                        TUTTI_ROOT_ADDR=f"{host_ip(0)}:{port}", TUTTI_KEY=key)
            argv = [exe]
        else:
            more = dict(RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(local), MASTER_ADDR=host_ip(0),
                        MASTER_PORT=str(port), GLOO_SOCKET_IFNAME=f"h{h}")
            argv = [python, exe]
        job.start(hosts.inside(hosts.host(h)) + argv, dict(env, **more), log)
