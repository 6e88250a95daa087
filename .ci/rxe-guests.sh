# SPDX-License-Identifier: MIT
# Sourced by .ci/rxe: the two guests (a: 10.11.0.1, b: 10.11.0.2) and the
# jobs it gives them. Each guest runs the jobs left in its exchange folder
# ($rund/a, $rund/b, its /io) one after the other (.ci/rxe-init). A job
# that starts ranks gives them the variables tutti-run would: rank 0 is in
# guest a, the root listens there, every job has a fresh key and port.
# Ranks use shm and verbs only (no tcp to fall back on).
#
# The link: QEMU's stream network device over TCP (a listens, b connects),
# which loses nothing. (QEMU 7.2's older socket device in its TCP form now
# and then stopped sending a guest's frames for good under load, the guest
# saying "transmit queue 0 timed out".) TUTTI_RXE_LINK=udp joins them by
# the socket device's UDP form instead, which under emulation lost 10 to
# 16% of the packets; ranks then run at an ACK timeout of 67 ms, since at
# the default 1.07 s each loss stalls a message that long.
#
# Uses from .ci/rxe: repo, guest, keep, say, now.

guest_net=10.11.0
port=$((20000 + $$ % 20000)) # bootstrap roots; UDP ports of the link above them
rund=""

stop_guests() {
    status=$?
    trap - EXIT INT TERM HUP
    for g in a b; do
        eval "pid=\${pid_$g:-}"
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    if [ -n "$rund" ] && [ "$keep" = 1 ]; then
        say "kept $rund (consoles, jobs and their output)"
    elif [ -n "$rund" ]; then
        rm -rf "$rund"
    fi
    exit "$status"
}

# start_guest NAME IP NETDEV MAC. One CPU a guest (TUTTI_RXE_SMP sets
# another number): with two, Debian 12's rxe now and then completed RDMA
# writes with "remote invalid request" errors even on the lossless link,
# perftest's ib_write_bw as well as tutti's, which one CPU never showed.
start_guest() {
    setsid qemu-system-x86_64 $accel -smp ${TUTTI_RXE_SMP:-1} -m 2048 -nodefaults -display none -no-reboot \
        -kernel "$guest/vmlinux" -initrd "$rund/initrd" \
        -append "console=ttyS0 panic=-1 quiet tutti.name=rxe-$1 tutti.ip=$2 tutti.build=$repo" \
        -serial "file:$rund/$1.console" -monitor "unix:$rund/$1.monitor,server=on,wait=off" \
        -netdev "$3,id=n0" -device "virtio-net-pci,netdev=n0,mac=$4" \
        -fsdev "local,id=build,path=$repo,security_model=none,readonly=on" \
        -device virtio-9p-pci,fsdev=build,mount_tag=build \
        -fsdev "local,id=io,path=$rund/$1,security_model=none" -device virtio-9p-pci,fsdev=io,mount_tag=io \
        </dev/null >"$rund/$1.qemu" 2>&1 &
    eval "pid_$1=$!"
    eval "seq_$1=0"
}

guest_alive() {
    eval "kill -0 \"\$pid_$1\"" 2>/dev/null
}

# Says what guest $1 printed last, and QEMU's complaints.
guest_tail() {
    say "guest $1's console, last lines:"
    tail -n 15 "$rund/$1.console" 2>/dev/null | sed 's/^/    /'
    sed 's/^/    qemu: /' "$rund/$1.qemu" 2>/dev/null
}

boot_guests() {
    rund=$(mktemp -d /var/tmp/tutti-rxe.XXXXXX) || exit 1
    trap stop_guests EXIT
    trap 'exit 130' INT TERM HUP
    mkdir "$rund/init"
    cp "$repo/.ci/rxe-init" "$rund/init/init" && chmod 755 "$rund/init/init"
    # The kernel unpacks both archives, the second over the first.
    (cd "$rund/init" && echo init | cpio -o -H newc --quiet) >"$rund/init.cpio" &&
        cat "$guest/root.cpio" "$rund/init.cpio" >"$rund/initrd" || exit 1
    if grep -Eqw 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ]; then
        accel="-accel kvm -cpu host"
    else
        accel="-accel tcg,thread=multi -cpu max" # emulated: a functional test, no speed to read
    fi
    say "booting two guests ($accel, linked by ${TUTTI_RXE_LINK:-tcp}) in $rund"
    start_guests
}

# start_guests: both guests started, linked, and up (their exchange
# folders new).
start_guests() {
    mkdir "$rund/a" "$rund/b" || exit 1
    link_env=""
    if [ "${TUTTI_RXE_LINK:-tcp}" = udp ]; then
        start_guest a $guest_net.1 "socket,udp=127.0.0.1:$((port + 1)),localaddr=127.0.0.1:$port" 52:54:00:12:34:0a
        start_guest b $guest_net.2 "socket,udp=127.0.0.1:$port,localaddr=127.0.0.1:$((port + 1))" 52:54:00:12:34:0b
        link_env=TUTTI_IB_TIMEOUT=14
    else
        start_guest a $guest_net.1 "stream,server=on,addr.type=inet,addr.host=127.0.0.1,addr.port=$port" 52:54:00:12:34:0a
        # b connects once a listens.
        for i in $(seq 50); do
            sleep 0.2
            start_guest b $guest_net.2 "stream,server=off,addr.type=inet,addr.host=127.0.0.1,addr.port=$port" 52:54:00:12:34:0b
            sleep 0.5
            ! guest_alive b || break
        done
    fi
    port=$((port + 2))
    deadline=$(($(now) + 300))
    for g in a b; do
        while [ ! -s "$rund/$g/ready" ]; do
            if ! guest_alive $g || [ "$(now)" -ge "$deadline" ]; then
                guest_tail $g
                say "guest $g did not come up"
                exit 1
            fi
            sleep 0.5
        done
        sed "s/^/$ci_name: /" "$rund/$g/ready"
    done
    t_boot=$(now)
}

# job GUEST SCRIPT: queues SCRIPT in the guest, after a prelude with the
# job's variables and two helpers: `rank R N L PROGRAM ARGS...` starts rank
# R of N (local rank L) in the background, its output in $rund/GUEST/J.R
# (/io/J.R in the guest; J is the job's number), and `ranks_wait` waits for
# them, prints their output (each line after "[R] ") and fails if any
# failed. Each rank is killed after $limit seconds.
job() {
    eval "n=\$seq_$1"
    cat >"$rund/$1/job.$n.tmp" <<EOF
set -u
B=$repo J=$n
export TUTTI_ROOT_ADDR=$guest_net.1:$port TUTTI_KEY=$key TUTTI_SOCKET_IFNAME=eth0 TUTTI_TIMEOUT=30 \\
    TUTTI_TRANSPORTS=shm,verbs $link_env ${extra:-}
pids=""
rank() {
    r=\$1 p=\$2 l=\$3
    shift 3
    TUTTI_RANK=\$r TUTTI_NRANKS=\$p TUTTI_LOCAL_RANK=\$l timeout -s KILL ${limit:-300} "\$@" >/io/\$J.\$r 2>&1 &
    pids="\$pids \$!:\$r"
}
ranks_wait() {
    st=0
    for e in \$pids; do
        wait "\${e%%:*}"
        rc=\$?
        echo "exit \$rc" >>"/io/\$J.\${e#*:}"
        [ "\$rc" -eq 0 ] || st=1
    done
    for e in \$pids; do
        sed "s/^/[\${e#*:}] /" "/io/\$J.\${e#*:}"
    done
    pids=""
    return "\$st"
}
$2
EOF
    mv "$rund/$1/job.$n.tmp" "$rund/$1/job.$n"
    eval "seq_$1=$((n + 1))"
}

# wait_job GUEST SECONDS: the status of the guest's last job (124 when it
# did not end in time); its output is in $out.
wait_job() {
    eval "n=\$((seq_$1 - 1))"
    out=$rund/$1/out.$n
    deadline=$(($(now) + $2))
    while [ ! -e "$rund/$1/rc.$n" ]; do
        if ! guest_alive "$1" || [ "$(now)" -ge "$deadline" ]; then
            guest_alive "$1" || guest_tail "$1"
            return 124
        fi
        ! link_stalled >/dev/null || return 124 # nothing more will cross
        sleep 0.2
    done
    return "$(cat "$rund/$1/rc.$n")"
}

# both SECONDS SCRIPT-A SCRIPT-B: one job in each guest, with a new key and
# root port; fails unless both jobs pass. Their output: $out_a, $out_b.
both() {
    key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    port=$((port + 1))
    job a "$2"
    job b "$3"
    wait_job a "$1"
    st_a=$?
    out_a=$out
    wait_job b "$1"
    st_b=$?
    out_b=$out
    [ "$st_a" = 0 ] && [ "$st_b" = 0 ]
}

# Shows the end of both jobs' output (after a failure).
show_both() {
    for o in "$out_a" "$out_b"; do
        say "${o#$rund/}:"
        tail -n "${1:-30}" "$o" 2>/dev/null | sed 's/^/    /'
    done
}

# monitor GUEST COMMAND: a command to the guest's QEMU monitor.
monitor() {
    python3 - "$rund/$1.monitor" "$2" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
time.sleep(0.5)
s.close()
EOF
}

# link_stalled: says which guest's emulated network card stopped sending
# for good (its kernel's watchdog: "transmit queue 0 timed out"), and fails
# when neither did. QEMU's device then drops every frame the guest sends
# (seen about once in a few runs under TCG, with tutti's ranks and with
# nothing but ARP); no program in the guest can cause or clear it.
link_stalled() {
    for g in a b; do
        if grep -q 'transmit queue [0-9]* timed out' "$rund/$g.console" 2>/dev/null; then
            echo "guest $g's network card stopped sending (its kernel: $(grep -m 1 -o 'transmit queue [0-9]* timed out' \
                "$rund/$g.console"))"
            return 0
        fi
    done
    return 1
}

# restart_guests: both guests killed and booted again, the old ones'
# consoles and exchange folders kept beside as NAME.stalled-N.
restart_guests() {
    restarts=$((${restarts:-0} + 1))
    for g in a b; do
        eval "pid=\$pid_$g"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        mv "$rund/$g" "$rund/$g.stalled-$restarts" && mv "$rund/$g.console" "$rund/$g.console.stalled-$restarts"
    done
    say "booting both guests again"
    start_guests
}
