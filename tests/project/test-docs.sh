#!/bin/sh
# SPDX-License-Identifier: MIT
# Every command of README.md's sh blocks and of the section-1 man pages'
# EXAMPLES, run as written, as a newcomer would: the README's from the top
# of this tree (a view of it, so that what they write lands elsewhere), the
# man pages' with the build tree on PATH, as the pages say to put it there,
# and again from a staged `make install` (DESTDIR) with only the installed
# tools on PATH (a heavy command from the staged install only). A page's
# commands run in order in a folder of their own. The first python3 on
# PATH here is not Debian's and fails when run, and the network is
# unreachable, so a command that leans on either fails.
#
# A command that needs what this machine lacks (Slurm, root, two hosts with
# RDMA NICs, torch 2.x, jq) is skipped, saying why; one that takes minutes
# (a benchmark over 64 MiB, DDP training, tutti-bw --fit) runs only with
# TT_DOCS_HEAVY=1 (.ci/docs). Neither counts as passed. The table below
# names them; a command it does not name runs, and a line of the table that
# names no command of the documents fails the test.
set -u
B=$(cd "${TT_BUILDDIR:-.}" && pwd) || exit 1
S=$(cd "${TT_SRCDIR:-.}" && pwd) || exit 1
HEAVY=${TT_DOCS_HEAVY:-0}
MAKE=${MAKE:-make}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
passed=0 skipped=0 failed=0
: >"$WORK/hits"

# commands FILE: the commands of a document, one a line, continued lines joined.
commands() {
    case $1 in
    */README.md) awk '/^```sh$/ { on = 1; next } /^```/ { on = 0 } on' "$1" ;;
    *) awk '/^# EXAMPLES?$/ { on = 1; next } /^# / { on = 0 }
            on && /^```/ { fenced = !fenced; next }
            on && (fenced || /^    [^ ]/) { sub(/^    /, ""); sub(/^[A-Z]?\$ /, ""); print }' "$1" ;;
    esac | awk '{ line = line $0 } /\\$/ { sub(/\\$/, "", line); next } { if (line ~ /[^ ]/) print line; line = "" }'
}

# plan DOC COMMAND: where it runs (build, prefix or both), whether it is
# heavy, and why a command cannot run here (then skip is set).
plan() {
    where=both heavy="" skip="" probe=""
    case $1:$2 in
    README.md:".ci/setup && make check"*)
        hit setup-check; skip="this is make check itself (CI runs it from a release tarball on a new Debian, .ci/fresh-debian)" ;;
    README.md:".ci/setup && ./tutti-run "*)
        hit setup-bench; skip="installs, builds and benchmarks: .ci/fresh-debian runs it as written on a new Debian" ;;
    README.md:"./autogen.sh && ./configure && make && make check && sudo make install"*)
        hit by-hand; skip="rebuilds the tree, runs the whole suite and installs as root (CI: .ci/tarball, .ci/fresh-debian)" ;;
    README.md:"sudo apt-get install "*)
        hit apt; where=build probe=packages ;;
    README.md:"cc hello.c "* | README.md:"tutti-run -n 4 ./hello"*)
        hit hello; where=prefix ;;
    README.md:*perf/ddp/ddp-train.py*torch.distributed.run* | README.md:*torch.distributed.run*perf/ddp/ddp-train.py*)
        case $2 in
        *store_type=file*) hit torchrun2; probe=torch2 ;;
        *) hit torchrun; probe=torch ;;
        esac
        where=build heavy="DDP training on 4 ranks under torchrun" ;;
    README.md:*perf/ddp/ddp-train.py*)
        hit quickstart; skip="the README's Python section as written: .ci/fresh-debian runs it on a new Debian" ;;
    README.md:"srun "* | README.md:"salloc "* | README.md:"sbatch "*)
        hit slurm; skip="needs a Slurm cluster (.ci/slurm runs these under a real Slurm, as root)" ;;
    README.md:*) where=build ;;
    tutti-bw-verbs.1.md:*)
        hit verbs; skip="needs two hosts, A and B, with RDMA NICs (mlx5_0); .ci/rxe runs tutti-bw-verbs on soft-RoCE" ;;
    tutti-bw.1.md:"tutti-run -n 4 tutti-bw" | tutti-bw.1.md:*--fit* | tutti-bw.1.md:*--matrix* | tutti-bw.1.md:*--sweep*)
        hit bw; heavy="tutti-bw's tables, sweeps and fit take minutes" ;;
    tutti-bw.1.md:"tutti-report tcp.json"*)
        hit bw-report; heavy="reads tcp.json, which the sweep above writes" ;;
    tutti-explain.1.md:*--fit*)
        hit explain-fit; heavy="tutti-bw --fit, then a sweep to 16 MiB" ;;
    tutti-perf.1.md:* | tutti-run.1.md:"tutti-run -n 4 tutti-perf"*)
        hit perf; heavy="benchmarks up to 64 or 128 MiB" ;;
    tutti-topo.1.md:*"| jq "*)
        hit jq; probe=jq ;;
    esac
}
TAGS="setup-check setup-bench by-hand apt hello torchrun torchrun2 quickstart slurm verbs bw bw-report explain-fit perf jq"
hit() { echo "$1" >>"$WORK/hits"; }

# probe: why the machine cannot run the command, or nothing.
probe_says() {
    case $probe in
    packages)
        missing=$(for p in ${cmd#sudo apt-get install }; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || printf ' %s' "$p"
        done)
        [ -n "$missing" ] && echo "installs packages as root, and these are missing:$missing" ||
            echo "installs packages as root; all of them are installed here" ;;
    torch | torch2)
        v=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
            { echo "Debian's python3 has no torch (apt-get install python3-torch)"; return; }
        if [ "$probe" = torch2 ] && [ "${v%%.*}" -lt 2 ]; then
            echo "the command of Debian 13's torch 2.x; torch $v here (.ci/torch2 trains this way)"
        fi ;;
    jq) command -v jq >/dev/null || echo "jq is not installed (apt-get install jq)" ;;
    esac
}

# The places: a view of the tree (its entries linked into a fresh folder),
# and a staged install.
view() {
    d=$(mktemp -d -p "$WORK")
    for f in "$S"/* "$S"/.[!.]* "$B"/* "$B"/.[!.]*; do
        case ${f##*/} in .venv | .git | python) continue ;; esac
        [ -e "$f" ] && ln -sfn "$f" "$d/${f##*/}"
    done
    # a copy: pip builds in the package's folder, which may be read-only (make distcheck)
    cp -R "$S/python" "$d/python" && rm -rf "$d/python/build" "$d/python/"*.egg-info
    echo "$d"
}
$MAKE -s -C "$B" install DESTDIR="$WORK/stage" >"$WORK/install.log" 2>&1 || {
    tail -n 20 "$WORK/install.log"
    echo "FAIL: make install DESTDIR"
    exit 1
}
prefix=$(dirname "$(find "$WORK/stage" -path '*/bin/tutti-run')")
prefix=${prefix%/bin}
# A python3 that is not Debian's comes first on PATH.
mkdir -p "$WORK/other-python"
printf '#!/bin/sh\necho "python3 from PATH ($0) is not the one to use: $*" >&2\nexit 1\n' >"$WORK/other-python/python3"
chmod +x "$WORK/other-python/python3"
hello() { awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' "$S/README.md" >"$1/hello.c"; }

# PATH without any tutti installed on this machine, which would hide a
# command that works only where tutti is installed.
clean_path=$(echo "$PATH" | tr ':' '\n' | while IFS= read -r d; do
    [ -n "$d" ] && [ ! -e "$d/tutti-run" ] && printf '%s:' "$d"
done)
clean_path=${clean_path%:}

# run PLACE DIR DOC COMMAND: the README from the tree as it is (a python3
# that is not Debian's first on PATH), a man page with the build tree on
# PATH, or either with the staged install's tools, library and pkg-config.
run() {
    place=$1 dir=$2 doc=$3 text=$4
    start=$(date +%s)
    (
        cd "$dir" || exit 1
        case $place:$doc in
        build:README.md) PATH="$WORK/other-python:$clean_path" ;;
        build:*) PATH="$B:$clean_path" ;;
        prefix:*)
            PATH="$prefix/bin:$clean_path"
            export LD_LIBRARY_PATH="$prefix/lib" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$WORK/stage" ;;
        esac
        # no network: a proxy that answers nothing, which pip gives up on at once
        export PATH http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
            HTTPS_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= PIP_DEFAULT_TIMEOUT=3 PIP_RETRIES=0
        exec timeout 900 sh -c "$text"
    ) >"$WORK/out" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    if [ $rc -eq 0 ] && check_output "$text"; then
        passed=$((passed + 1))
        printf "PASS [%s, %s s] %s: %s\n" "$place" "$took" "$doc" "$text"
    else
        failed=$((failed + 1))
        printf "FAIL [%s, %s s, status %s] %s: %s\n" "$place" "$took" "$rc" "$doc" "$text"
        tail -n 25 "$WORK/out" | sed 's/^/    /'
    fi
}

# What some commands must show beside their status.
check_output() {
    case $1 in
    *perf/ddp/ddp-train.py*)
        # the ranks' own lines reach the terminal, progress first
        grep -Eq 'step +[0-9]+/[0-9]+ +tutti loss' "$WORK/out" && grep -Eq 'tutti +[0-9.]+ +[0-9.]+' "$WORK/out" || {
            echo "no progress or no table from the training in:"
            return 1
        } ;;
    *"pip install"*) grep -q "Successfully installed tutti" "$WORK/out" ;;
    esac
}

for doc in "$S/README.md" "$S"/man/*.1.md; do
    name=${doc##*/}
    cmds=$(commands "$doc")
    [ -n "$cmds" ] || continue
    build_dir=$([ "$name" = README.md ] && view || mktemp -d -p "$WORK")
    prefix_dir=$(mktemp -d -p "$WORK")
    hello "$prefix_dir"
    cp "$S/tests/fixtures/dgx2-nvswitch.xml" "$build_dir/dgx.xml" # the hwloc XML of tutti-topo's example
    cp "$S/tests/fixtures/dgx2-nvswitch.xml" "$prefix_dir/dgx.xml"
    while IFS= read -r cmd; do
        plan "$name" "$cmd"
        [ -z "$skip" ] && [ -n "$probe" ] && skip=$(probe_says)
        [ -z "$skip" ] && [ -n "$heavy" ] && [ "$HEAVY" != 1 ] && skip="heavy, run by .ci/docs (TT_DOCS_HEAVY=1): $heavy"
        if [ -n "$skip" ]; then
            skipped=$((skipped + 1))
            printf "SKIP %s: %s: %s\n" "$name" "$cmd" "$skip"
            continue
        fi
        # A heavy command runs once, as an installed user runs it: the build
        # tree holds the same programs, and the light commands show that
        # each place finds its own.
        [ -n "$heavy" ] && [ "$where" = both ] && where=prefix
        [ "$where" = prefix ] || run build "$build_dir" "$name" "$cmd"
        [ "$where" = build ] || run prefix "$prefix_dir" "$name" "$cmd"
    done <<EOF
$cmds
EOF
done

# The roff users read is pandoc's rendering of the Markdown this test read.
if command -v pandoc >/dev/null; then
    for md in "$S"/man/*.md; do
        pandoc -s -f markdown-smart -t man "$md" -o "$WORK/page" && cmp -s "$WORK/page" "${md%.md}" || {
            failed=$((failed + 1))
            echo "FAIL: ${md%.md} is not the rendering of ${md##*/}: run make man-render"
        }
    done
    echo "PASS: every man page's roff is rendered from its Markdown"
else
    skipped=$((skipped + 1))
    echo "SKIP: whether the man pages' roff is rendered from their Markdown: no pandoc (apt-get install pandoc)"
fi

for tag in $TAGS; do
    grep -qx "$tag" "$WORK/hits" || {
        failed=$((failed + 1))
        echo "FAIL: the table's line '$tag' names no command of the documents any more"
    }
done
echo "$passed passed, $skipped skipped, $failed failed"
[ $failed -eq 0 ]
