# SPDX-License-Identifier: MIT
# Sourced by the two-host scripts: two network namespaces, "hosts" A
# (10.77.0.1) and B (10.77.0.2), joined by a veth pair limited to RATE_MBIT
# by tc (netem, or a token bucket where the kernel has no netem), and a
# launcher that runs a job's ranks in them. Skips (exit 77) where that
# cannot be made: not root, no ip or tc, or a kernel that refuses.
# Needs RATE_MBIT; gives WORK (a temporary folder), netns_run.
skip() { echo "SKIP: $*"; exit 77; }
command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 || skip "ip or tc missing (iproute2)"
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
NSA=tutti$$a NSB=tutti$$b VA=tta$$ VB=ttb$$
WORK=$(mktemp -d)
netns_cleanup() {
    ip netns del "$NSA" 2>/dev/null
    ip netns del "$NSB" 2>/dev/null
    rm -rf "$WORK"
}
trap netns_cleanup EXIT INT TERM
ip netns add "$NSA" 2>/dev/null && ip netns add "$NSB" 2>/dev/null || skip "cannot create network namespaces"
ip link add "$VA" netns "$NSA" type veth peer name "$VB" netns "$NSB" 2>/dev/null || skip "cannot create a veth pair"
ip -n "$NSA" addr add 10.77.0.1/24 dev "$VA" && ip -n "$NSB" addr add 10.77.0.2/24 dev "$VB" || exit 1
for ns in "$NSA" "$NSB"; do ip -n "$ns" link set lo up || exit 1; done
ip -n "$NSA" link set "$VA" up && ip -n "$NSB" link set "$VB" up || exit 1
netns_limit() {
    tc -n "$1" qdisc add dev "$2" root netem rate ${RATE_MBIT}mbit limit 10000 2>/dev/null ||
        tc -n "$1" qdisc add dev "$2" root tbf rate ${RATE_MBIT}mbit burst 512kb latency 100ms 2>/dev/null
}
netns_limit "$NSA" "$VA" && netns_limit "$NSB" "$VB" || skip "neither tc netem nor tbf is available"
echo "link: $(tc -n "$NSA" qdisc show dev "$VA" | head -1)"
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
        nice -n -19 ip netns exec "$ns" env TUTTI_RANK=$r TUTTI_NRANKS=$n TUTTI_LOCAL_RANK=$((r % (n / 2))) \
            TUTTI_NODE_ID=$((r / (n / 2))) TUTTI_KEY="$NETNS_KEY" TUTTI_ROOT_ADDR=10.77.0.1:$NETNS_PORT \
            TUTTI_TIMEOUT=120 timeout 300 "$@" >"$WORK/$name.out.$r" 2>"$WORK/$name.err.$r" &
    done
    wait
    NETNS_PORT=$((NETNS_PORT + 1))
}
