# SPDX-License-Identifier: MIT
# Sourced by .ci/rxe: its checks, one function each (check_NAME for the
# check NAME). Each returns 0 when it passed and sets detail to one line of
# what it saw; on a failure it shows the jobs' output first.
#
# Uses .ci/rxe-guests.sh: both, job, wait_job, show_both, monitor, rund,
# guest_net; and say, now.

peer=$guest_net.2

# The form of the perftest-style table in file $1 (rank output's "[R] "
# dropped): "N rows: " and its header's columns.
table_form() {
    sed 's/^\[[0-9]*\] //' "$1" | awk '/#bytes/ { head = $0; gsub(/[ \t]+/, " ", head); sub(/^ /, "", head)
            sub(/ $/, "", head); rows = 0; next }
        head && $1 ~ /^[0-9]+$/ && NF >= 5 { rows++ }
        END { print rows + 0 " rows: " head }'
}

# table_value FILE BYTES COLUMN: that row's column.
table_value() {
    sed 's/^\[[0-9]*\] //' "$1" | awk -v s="$2" -v c="$3" '/#bytes/ { on = 1; next } on && $1 == s { print $c; exit }'
}

check_perftest() {
    # The server (b) answers one run of each, on a port of its own; the
    # client (a) dials again while the server does not listen yet, and keeps
    # each one's output in its /io.
    opts="-d rxe0 -x 1 -F -s 65536 -n 200"
    both 180 "st=0
for t in ib_write_bw:18515 ib_write_lat:18516; do
    for i in \$(seq 60); do
        timeout 60 \${t%:*} $opts -p \${t#*:} $peer >/io/\${t%:*}.out 2>&1 && break
        grep -q \"Couldn't connect\" /io/\${t%:*}.out || { st=1; break; }
        sleep 1
    done
    cat /io/\${t%:*}.out
done
exit \$st" "st=0
timeout 90 ib_write_bw $opts -p 18515 || st=1
timeout 90 ib_write_lat $opts -p 18516 || st=1
exit \$st" || {
        show_both
        return 1
    }
    perf_bw=$(table_form "$rund/a/ib_write_bw.out")
    perf_lat=$(table_form "$rund/a/ib_write_lat.out")
    bw=$(table_value "$rund/a/ib_write_bw.out" 65536 4)
    lat=$(table_value "$rund/a/ib_write_lat.out" 65536 5)
    detail="64 KiB between the guests: ib_write_bw $bw MB/s average, ib_write_lat $lat us typical"
    [ "${perf_bw%% *}" = 1 ] && [ "${perf_lat%% *}" = 1 ] || {
        show_both
        return 1
    }
}

check_bw_verbs() {
    ok=1
    for mode in "" --lat; do
        both 200 "rank 0 2 0 \$B/tutti-bw-verbs -b 4K -e 1M -f 16 --duration 1 $mode; ranks_wait" \
            "rank 1 2 0 \$B/tutti-bw-verbs -b 4K -e 1M -f 16 --duration 1 $mode; ranks_wait" || {
            show_both
            ok=0
        }
        if [ -z "$mode" ]; then bw_out=$out_a; else lat_out=$out_a; fi
    done
    [ "$ok" = 1 ] || return 1
    bw_form=$(table_form "$bw_out")
    lat_form=$(table_form "$lat_out")
    detail="64 KiB: tutti-bw-verbs $(table_value "$bw_out" 65536 4) MB/s average, $(table_value "$lat_out" 65536 5) us typical; ${bw_form%% *} and ${lat_form%% *} rows (4 KiB to 1 MiB)"
    # Three sizes each, in the columns ib_write_bw and ib_write_lat printed
    # in this run.
    for f in "$bw_form|${perf_bw:-}" "$lat_form|${perf_lat:-}"; do
        mine=${f%%|*} theirs=${f#*|}
        if [ "${mine%% *}" != 3 ] || { [ -n "$theirs" ] && [ "${mine#*rows: }" != "${theirs#*rows: }" ]; }; then
            say "tutti-bw-verbs printed $mine; perftest printed ${theirs:-nothing (not run)}"
            cat "$bw_out" "$lat_out"
            return 1
        fi
    done
}

check_tutti_bw() {
    args="-t verbs -s 256K -l 8 -b 4K -e 1M -f 16 --budget 1 --json"
    both 200 "rank 0 2 0 \$B/tutti-bw $args; ranks_wait" "rank 1 2 0 \$B/tutti-bw $args; ranks_wait" || {
        show_both
        return 1
    }
    detail=$(sed -n 's/^\[0\] //p' "$out_a" | sed '/^exit /d' | python3 -c '
import json, sys
d = json.load(sys.stdin)
tp = [t for t in d["transports"] if t["name"] == "verbs"][0]
assert tp["status"] == "measured", tp["status"]
cells = tp["matrices"]["uni"]["cells"]
assert len(cells) == 2 and all(c["class"] == "NET" and c["median"] > 0 for c in cells), cells
rows = tp["sweeps"][0]["rows"]
assert [r["bytes"] for r in rows] == [4096, 65536, 1048576], rows
print("tutti-bw -t verbs: one-way %.3f and %.3f GB/s at 256 KiB between the guests, %d sweep rows"
      % (cells[0]["median"], cells[1]["median"], len(rows)))') || {
        show_both 60
        return 1
    }
}

# sweep RANKS-PER-GUEST MODE MAXCOUNT: host-rank on 2 x RANKS-PER-GUEST ranks.
sweep() {
    p=$((2 * $1))
    ja="" jb=""
    for l in $(seq 0 $(($1 - 1))); do
        ja="${ja}rank $l $p $l \$B/tests/lib/host-rank $2 $3
"
        jb="${jb}rank $(($1 + l)) $p $l \$B/tests/lib/host-rank $2 $3
"
    done
    both 400 "${ja}ranks_wait" "${jb}ranks_wait"
}

# Rank 0's lines of a sweep, and whether each rank's cache was hit.
sweep_verdict() {
    algos=$(grep -c '^\[0\] sweep: ' "$out_a")
    hits=$(cat "$out_a" "$out_b" | sed -n 's/.*registration cache: \([0-9]*\) hits.*/\1/p' | sort -n | head -n 1)
    detail="$algos algorithm runs (tuner + forced) of every collective; fewest cache hits of a rank: ${hits:-none}"
    [ "$algos" -ge "$1" ] && [ "${hits:-0}" -gt 0 ]
}

check_sweep_2() {
    sweep 1 sweep 1048576 && sweep_verdict 15 || {
        show_both
        return 1
    }
}

check_sweep_4() {
    sweep 2 sweep 524288 && sweep_verdict 15 || {
        show_both
        return 1
    }
}

check_multi_device() {
    # Two more devices in each guest, on a veth pair: they reach nothing
    # outside the guest, and local rank 1 prefers one of them (the three
    # are equally near: none is on a PCI bus). The ranks must still meet
    # over rxe0, each connection off a rank's nearest port saying so. Then
    # two ranks allowed rxe1 alone (TUTTI_IB_HCA), which reach each other
    # through no port: their first call must fail within TUTTI_TIMEOUT, naming both
    # ports with their GIDs and what to set.
    devs="ip link add vx0 type veth peer name vx1
ip addr add 10.2\$N.0.1/24 dev vx0 && ip addr add 10.2\$N.0.2/24 dev vx1
ip link set vx0 up && ip link set vx1 up
rdma link add rxe1 type rxe netdev vx0 && rdma link add rxe2 type rxe netdev vx1 && ibv_devices"
    both 60 "N=1; $devs" "N=2; $devs" || {
        show_both
        return 1
    }
    extra="TUTTI_LOG=info TUTTI_LOG_SUBSYS=net" sweep 2 tuner 65536
    st=$?
    cp "$out_a" "$rund/multi-a" && cp "$out_b" "$rund/multi-b"
    t_none=$(now)
    extra="TUTTI_IB_HCA=rxe1"
    both 90 "rank 0 2 0 \$B/tests/lib/host-rank tuner 1000; ranks_wait" "rank 1 2 0 \$B/tests/lib/host-rank tuner 1000; ranks_wait"
    none_st=$? none_took=$(($(now) - t_none))
    extra=""
    cat "$out_a" "$out_b" >"$rund/multi-none"
    both 60 "rdma link delete rxe1; rdma link delete rxe2; ip link delete vx0" \
        "rdma link delete rxe1; rdma link delete rxe2; ip link delete vx0"
    out_a=$rund/multi-a out_b=$rund/multi-b
    moved=$(cat "$out_a" "$out_b" | grep -c 'verbs: rank [0-9]* reaches rank ')
    none=$(grep -o -m1 "rank 0 and rank 1 reach each other through none of their ports: rank 0's rxe1 port 1 (GID index [0-9]*, ::ffff:10.21.0.1) to rank 1's rxe1 port 1 (GID index [0-9]*, ::ffff:10.22.0.1): [^;]*; set TUTTI_IB_HCA" "$rund/multi-none")
    detail="4 ranks, rxe0..rxe2 in each guest: $moved connections not on a rank's nearest port, e.g. $(grep -h -m1 -o 'rank [0-9]* reaches .*' "$out_a" "$out_b" | head -n 1 | cut -c1-150)...; rxe1 alone: the first call failed in $none_took s: ${none:-no message naming both ports}"
    [ "$st" = 0 ] && [ "$moved" -gt 0 ] || {
        show_both
        return 1
    }
    [ "$none_st" != 0 ] && [ -n "$none" ] && [ "$none_took" -le 35 ] || {
        say "two ranks on rxe1 alone (TUTTI_IB_HCA):"
        tail -n 20 "$rund/multi-none" | sed 's/^/    /'
        return 1
    }
}

# 4 ranks loop on all-reduces; rank 3 (guest b) is killed once it loops.
check_rank_killed() {
    both 120 "rank 0 4 0 \$B/tests/lib/host-rank loop; rank 1 4 1 \$B/tests/lib/host-rank loop; ranks_wait" \
        "rank 2 4 0 \$B/tests/lib/host-rank loop; rank 3 4 1 \$B/tests/lib/host-rank loop
while ! grep -q looping /io/\$J.3 2>/dev/null; do sleep 0.2; done
sleep 1
kill -KILL \$(sed -n 's/.*pid \([0-9]*\).*looping/\1/p' /io/\$J.3)
ranks_wait"
    ok=1
    for r in 0 1 2; do
        o=$out_a
        [ "$r" = 2 ] && o=$out_b
        line=$(sed -n "s/^\[$r\] rank $r: \([A-Z_]*\) after \([0-9]*\) ms: \(.*\)/\1 \2 \3/p" "$o")
        case $line in
        "TUTTI_ERR_PEER_FAILED "*) ;;
        *) ok=0 ;;
        esac
        ms=$(echo "$line" | cut -d' ' -f2)
        echo "$line" | grep -Eq 'rank(s)? ([0-9]+, )*3[ ,].*died|rank 3 .*died' || ok=0
        [ "${ms:-99999}" -lt 30000 ] || ok=0
        grep -q "^\[$r\] rank $r: the next call: TUTTI_ERR_ABORTED" "$o" || ok=0
    done
    grep -q '^\[3\] exit 137' "$out_b" || ok=0
    detail="rank 3 (guest b) killed: $(sed -n 's/^\[0\] rank 0: \([A-Z_]*\) after \([0-9]*\) ms.*/rank 0 (guest a): \1 after \2 ms/p' "$out_a")"
    [ "$ok" = 1 ] || {
        show_both
        return 1
    }
}

check_link_down() {
    key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    port=$((port + 1))
    rm -f "$rund/a/looping"
    job a "rank 0 2 0 \$B/tests/lib/host-rank loop
while ! grep -q looping /io/\$J.0 2>/dev/null; do sleep 0.2; done
touch /io/looping
ranks_wait"
    job b "rank 1 2 0 \$B/tests/lib/host-rank loop; ranks_wait"
    t_down=$(now)
    while [ ! -e "$rund/a/looping" ] && [ $(($(now) - t_down)) -lt 120 ]; do sleep 0.2; done
    sleep 1
    monitor b "set_link n0 off"
    t_down=$(now)
    wait_job a 120
    out_a=$out
    wait_job b 120
    out_b=$out
    took=$(($(now) - t_down))
    monitor b "set_link n0 on"
    # Both ranks' calls fail with an error that says why, and both ranks
    # have exited (3: host-rank's loop saw the error) within TUTTI_TIMEOUT
    # (30 s) of the link going down, and the few seconds an all-reduce on
    # the emulated link had run before.
    ok=1
    [ "$took" -le 45 ] || ok=0
    for r in 0 1; do
        o=$out_a
        [ "$r" = 1 ] && o=$out_b
        grep -Eq "^\[$r\] rank $r: TUTTI_ERR_[A-Z_]+ after [0-9]+ ms: .{20}" "$o" || ok=0
        grep -q "^\[$r\] exit 3" "$o" || ok=0
    done
    detail="guest b's link down: both ranks failed within $took s: $(sed -n 's/^\[0\] rank 0: \([A-Z_]*\) after \([0-9]*\) ms: \(.\{0,70\}\).*/rank 0: \1 after \2 ms (\3...)/p' "$out_a"), $(sed -n 's/^\[1\] rank 1: \([A-Z_]*\) after \([0-9]*\) ms: \(.\{0,70\}\).*/rank 1: \1 after \2 ms (\3...)/p' "$out_b")"
    [ "$ok" = 1 ] || {
        show_both
        return 1
    }
}
