# SPDX-License-Identifier: MIT
# Sourced by .ci/fresh-debian and .ci/torch2: a throw-away minimal Debian in
# a temporary folder, with /proc, /sys, /dev, /dev/pts and /dev/shm bound
# into it and a clone of the repository's committed HEAD (or a release
# tarball, unpacked) in /root/tutti. On every way out of the sourcing
# script, what still runs inside is killed, everything is unmounted, and the
# folder deleted.
#
# The sourcing script sets, before calling anything here:
#   ci_name     its name, which starts every message
#   suite       the Debian suite to bootstrap (bookworm, trixie)
#   mirror      the Debian mirror, empty for the one this machine's apt
#               uses, and mirror_var the variable that sets it
#   keep        1 keeps the tree for inspection
#   repo        the repository's top folder
# and may set:
#   plain_root  1 leaves the new root a plain folder, as pbuilder's chroots
#               are, instead of a mount point of its own
#   tarball     a release tarball to unpack in /root/tutti instead of the clone
#   prepare_to  a file: this run only prepares the new system (ends with
#               chroot_prepared), leaves it on disk and writes its folder there
#   prepared    such a file from an earlier run: the system it names is used
#               instead of a new one (when it names none, one is made here)
# then calls chroot_checks (exits 77 saying why when it cannot run),
# chroot_start PREFIX PACKAGES, chroot_mount and chroot_fill, and runs commands
# inside with in_chroot (in /root/tutti) or in_new_system (in /).
#
# Preparing ahead is for CI (.ci/run): bootstrapping and downloading wait on
# the network and the disk, so they run in the background while the first
# steps build, instead of in line. A prepared system is a plain folder
# beside its log and a file saying how it was made (ROOT.ready); what
# prepared it has exited, so nothing in it runs or is mounted.

say() { echo "$ci_name: $*"; }
skip() {
    say "SKIP: $*"
    exit 77
}
now() { date +%s; }

# apt_site RELEASE: the site this machine's apt fetches RELEASE's packages
# from (its own sources: a site's or a user's mirror), or nothing.
apt_site() {
    apt-get indextargets --no-release-info --format '$(TARGET_OF) $(IDENTIFIER) $(RELEASE) $(SITE)' 2>/dev/null |
        awk -v r="$1" '$1 == "deb" && $2 == "Packages" && $3 == r { print $4; exit }'
}

# The mirror, when the sourcing script was given none, and the security
# suite's site (security, possibly empty): those this machine's apt uses for
# its own Debian release.
chroot_mirror() {
    codename=$(. /etc/os-release 2>/dev/null && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}")
    [ -n "$mirror" ] || [ -z "$codename" ] || mirror=$(apt_site "$codename")
    [ -n "$mirror" ] || skip "no Debian mirror in this machine's apt sources (set $mirror_var)"
    security=""
    [ -z "$codename" ] || security=$(apt_site "$codename-security")
}

# Root, debootstrap, the mirror, and git (or the tarball); sets rev, the
# commit to clone.
chroot_checks() {
    [ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot and mounts)"
    command -v debootstrap >/dev/null 2>&1 || skip "debootstrap is not installed (apt-get install debootstrap)"
    chroot_mirror
    # debootstrap depends on wget, so wget is here to ask the mirror first.
    wget -q -T 20 -t 2 -O /dev/null "$mirror/dists/$suite/Release" ||
        skip "the Debian mirror $mirror cannot be reached (set $mirror_var)"
    if [ -n "${tarball:-}" ]; then
        [ -f "$tarball" ] || skip "no tarball $tarball"
        return 0
    fi
    command -v git >/dev/null 2>&1 || skip "git is not installed (apt-get install git)"
    rev=$(git -C "$repo" rev-parse HEAD) || exit 1
    git -C "$repo" diff --quiet HEAD 2>/dev/null ||
        say "note: uncommitted changes in $repo are not tried; the clone has $rev"
}

# Runs a command in a process group of its own, in the background, so that
# a signal to this script is acted on at once (the wait returns) and the
# whole group can be stopped.
job=""
run() {
    setsid "$@" &
    job=$!
    wait "$job"
    st=$?
    job=""
    return "$st"
}

# Kills the running job's group and what still runs inside the new system
# (a command cut short).
kill_inside() {
    if [ -n "$job" ]; then
        env kill -KILL -- "-$job" 2>/dev/null # the group: dash's kill takes no -PGID
        wait "$job" 2>/dev/null
        for i in 1 2 3 4 5 6 7 8 9 10; do
            env kill -0 -- "-$job" 2>/dev/null || break
            sleep 1
        done
        job=""
    fi
    for pass in 1 2 3 4 5; do
        pids=""
        for p in /proc/[0-9]*; do
            case $(readlink "$p/root" 2>/dev/null) in
            "$root" | "$root"/*) pids="$pids ${p#/proc/}" ;;
            esac
        done
        [ -z "$pids" ] && return 0
        kill -KILL $pids 2>/dev/null
        sleep 1
    done
}

# chroot_unmount: unmounts what is mounted under $root, deepest first;
# fails when something stays mounted.
chroot_unmount() {
    for pass in 1 2 3; do
        mounts=$(awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
        [ -z "$mounts" ] && break
        for m in $mounts; do umount "$m" 2>/dev/null || [ "$pass" -lt 3 ] || umount -l "$m"; done
    done
    ! awk -v r="$root" '$2 == r || index($2, r "/") == 1 { found = 1 } END { exit !found }' /proc/self/mounts
}

# Stops what runs inside, unmounts what is mounted under $root, then
# deletes it. Never deletes while anything is still mounted there: that
# would reach into the host's /dev or /proc.
cleanup() {
    status=$?
    trap - EXIT INT TERM HUP
    kill_inside
    if ! chroot_unmount; then
        say "could not unmount everything under $root; not deleting it"
        [ "$status" -ne 0 ] || status=1
    elif [ "$keep" = 1 ]; then
        say "kept $root (log: $log)"
    else
        rm -rf --one-file-system "$root" "$log" "$root.ready" 2>/dev/null || {
            kill_inside
            rm -rf --one-file-system "$root" "$log" "$root.ready"
        }
    fi
    exit "$status"
}

# chroot_create PREFIX: the temporary folder (root) and its log beside it;
# from here on, every way out cleans up.
chroot_create() {
    root=$(mktemp -d "$1.XXXXXX") || exit 1
    chmod 755 "$root" # it becomes /, which every user must be able to enter
    chroot_own
}

# chroot_own: $root is this run's to clean up on every way out.
chroot_own() {
    log=$root.log
    trap cleanup EXIT
    trap 'exit 130' INT TERM HUP
}

# chroot_start PREFIX [PACKAGES]: the new system: the one $prepared names,
# when it is ready (adopted=1), else a new one bootstrapped here with
# PACKAGES (chroot_create, chroot_bootstrap; adopted=0).
chroot_start() {
    adopted=0
    dir=""
    [ -z "${prepared:-}" ] || dir=$(cat "$prepared" 2>/dev/null)
    if [ -n "$dir" ] && [ -f "$dir.ready" ]; then
        root=$dir
        chroot_own
        adopted=1
        t0=$(now)
        t1=$t0
        say "$(cat "$root.ready"), in $root"
        rm -f "$root.ready" "$prepared"
        return 0
    fi
    [ -z "${prepared:-}" ] || say "no system was prepared beforehand ($prepared names none ready); making one here"
    chroot_create "$1"
    chroot_bootstrap "${2:-}"
}

# chroot_prepared WHAT: ends a run that only prepares: unmounts, writes
# WHAT (how the system was made) beside it and its folder to $prepare_to,
# and exits 0 leaving it on disk.
chroot_prepared() {
    kill_inside
    chroot_unmount || {
        say "could not unmount everything under $root"
        exit 1
    }
    echo "$1" >"$root.ready" && echo "$root" >"$prepare_to" || exit 1
    trap - EXIT INT TERM HUP
    say "prepared $root: $1"
    exit 0
}

# chroot_bootstrap [PACKAGES]: debootstrap's minbase with the comma-separated
# PACKAGES added, and the suite's updates and security suites in apt's
# sources, as on an installed system. Sets t0 and t1 (its start and end).
chroot_bootstrap() {
    t0=$(now)
    say "bootstrapping Debian $suite (minbase) from $mirror into $root"
    if ! run debootstrap --variant=minbase ${1:+--include="$1"} "$suite" "$root" "$mirror" >"$log" 2>&1; then
        tail -n 20 "$log"
        say "debootstrap failed (log above)"
        exit 1
    fi
    {
        echo "deb $mirror $suite main"
        echo "deb $mirror $suite-updates main"
        [ -z "$security" ] || echo "deb $security $suite-security main"
    } >"$root/etc/apt/sources.list"
    [ -n "$security" ] || say "note: this machine's apt has no security suite, so the new system has none"
    # An installed system (and any container) has /etc/hosts, which names
    # localhost; debootstrap writes none, and the Slurm tests run on
    # localhost. IPv4 only, as CI's machines have it: test-slurm holds
    # a port on 127.0.0.1 and expects localhost to mean that address.
    [ -e "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n' >"$root/etc/hosts"
    t1=$(now)
    say "bootstrap took $((t1 - t0)) s"
}

# chroot_mount: /proc, /sys, /dev, /dev/pts and /dev/shm bound into the new system.
chroot_mount() {
    # The new root is made a mount point of its own (ip netns exec remounts /
    # there), private so nothing mounted in it reaches the host; or left a
    # plain folder, where the test suite must get by without that.
    if [ "${plain_root:-0}" != 1 ]; then
        mount --bind "$root" "$root" && mount --make-private "$root" || exit 1
    fi
    for fs in proc sys dev dev/pts dev/shm; do
        mount --bind "/$fs" "$root/$fs" || exit 1
    done
}

# chroot_fill: the clone of $rev (or the tarball's tree) in /root/tutti.
chroot_fill() {
    if [ -n "${tarball:-}" ]; then
        mkdir "$root/root/tutti" && tar -xzf "$tarball" -C "$root/root/tutti" --strip-components=1 || exit 1
        return 0
    fi
    git clone -q --no-checkout "$repo" "$root/root/tutti" && git -C "$root/root/tutti" checkout -q --detach "$rev" ||
        exit 1
}

# in_new_system COMMAND: runs COMMAND in the new system as a new user's root
# shell would, in /, except that make uses every core (MAKEFLAGS): the
# README's plain `make check` would otherwise run the suites one at a time,
# which on CI's two cores costs several minutes for nothing the commands
# prove.
in_new_system() {
    run chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 MAKEFLAGS="-j$(nproc)" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "$1" </dev/null
}

# in_chroot COMMAND: the same, in /root/tutti.
in_chroot() {
    in_new_system "cd /root/tutti && $1"
}
