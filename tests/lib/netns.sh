# SPDX-License-Identifier: MIT
# Sourced by the two-host scripts: two network namespaces, "hosts" A
# (10.77.0.1) and B (10.77.0.2), joined by a veth pair limited to RATE_MBIT
# by tc (netem, or a token bucket where the kernel has no netem), and a
# launcher that runs a job's ranks in them. Skips (exit 77), naming what is
# missing, where that cannot be made: not root, no ip or tc, or a kernel or
# container that refuses namespaces, veth pairs or both queueing
# disciplines. Where `ip netns exec` cannot run (it remounts /, which fails
# in a chroot whose / is no mount point), the namespaces are entered
# with nsenter instead: the ranks need their network, not its view of /sys.
# Needs RATE_MBIT; gives WORK (a temporary folder), netns_run.
skip() { echo "SKIP: $*"; exit 77; }
command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 || skip "ip or tc is missing (apt-get install iproute2)"
[ "$(id -u)" = 0 ] || skip "network namespaces need root (run make check as root)"
NSA=tutti$$a NSB=tutti$$b VA=tta$$ VB=ttb$$
WORK=$(mktemp -d)
netns_cleanup() {
    ip netns del "$NSA" 2>/dev/null
    ip netns del "$NSB" 2>/dev/null
    rm -rf "$WORK"
}
trap netns_cleanup EXIT INT TERM
# why COMMAND...: runs it, keeping the first line it wrote to stderr in $why.
why() {
    "$@" 2>"$WORK/why"
    st=$?
    why=$(head -n 1 "$WORK/why")
    return $st
}
why ip netns add "$NSA" && why ip netns add "$NSB" ||
    skip "cannot create network namespaces ($why; a container needs CAP_SYS_ADMIN)"
# netns_enter NS: the command that runs a program in namespace NS.
if why ip netns exec "$NSA" true; then
    netns_enter() { echo "ip netns exec $1"; }
elif command -v nsenter >/dev/null 2>&1 && nsenter --net="/run/netns/$NSA" true 2>/dev/null; then
    echo "ip netns exec cannot run here ($why): entering the namespaces with nsenter"
    netns_enter() { echo "nsenter --net=/run/netns/$1"; }
else
    skip "ip netns exec cannot run here ($why), nor nsenter (apt-get install util-linux)"
fi
in_a=$(netns_enter "$NSA") in_b=$(netns_enter "$NSB")
why ip link add "$VA" netns "$NSA" type veth peer name "$VB" netns "$NSB" ||
    skip "cannot create a veth pair ($why; the kernel's veth module, or CAP_NET_ADMIN in a container)"
$in_a ip addr add 10.77.0.1/24 dev "$VA" && $in_b ip addr add 10.77.0.2/24 dev "$VB" || exit 1
$in_a ip link set lo up && $in_b ip link set lo up || exit 1
$in_a ip link set "$VA" up && $in_b ip link set "$VB" up || exit 1
# limit NS-COMMAND DEV: the link's rate on DEV.
netns_limit() {
    $1 tc qdisc add dev "$2" root netem rate ${RATE_MBIT}mbit limit 10000 2>/dev/null ||
        $1 tc qdisc add dev "$2" root tbf rate ${RATE_MBIT}mbit burst 512kb latency 100ms 2>/dev/null
}
netns_limit "$in_a" "$VA" && netns_limit "$in_b" "$VB" ||
    skip "tc can set neither netem nor tbf on a veth (the kernel's sch_netem or sch_tbf module)"
echo "link: $($in_a tc qdisc show dev "$VA" | head -1)"
NETNS_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
NETNS_PORT=$((20000 + $$ % 20000))

# netns_run NAME NRANKS PROGRAM ARGS...: ranks below NRANKS/2 on host A, the
# rest on host B, at a raised priority (other tests may share the CPUs);
# rank r's output goes to $WORK/NAME.out.r and $WORK/NAME.err.r.
netns_run() {
    name=$1 n=$2
    shift 2
    for r in $(seq 0 $((n - 1))); do
        if [ $r -lt $((n / 2)) ]; then ns=$NSA; else ns=$NSB; fi
        nice -n -19 $(netns_enter "$ns") env TUTTI_RANK=$r TUTTI_NRANKS=$n TUTTI_LOCAL_RANK=$((r % (n / 2))) \
            TUTTI_NODE_ID=$((r / (n / 2))) TUTTI_KEY="$NETNS_KEY" TUTTI_ROOT_ADDR=10.77.0.1:$NETNS_PORT \
            TUTTI_TIMEOUT=120 timeout 300 "$@" >"$WORK/$name.out.$r" 2>"$WORK/$name.err.$r" &
    done
    wait
    NETNS_PORT=$((NETNS_PORT + 1))
}
