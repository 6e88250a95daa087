#!/bin/sh
# SPDX-License-Identifier: MIT
# configure counts a feature only once a program using it compiles and
# links: on a copy of the configure script, an mpicc that exists without
# mpi.h (Debian's openmpi-bin without libopenmpi-dev) gives "MPI reference
# no (mpi.h not found; install libopenmpi-dev)", one whose library does not
# link gives no as well, and --with-mpi=yes then stops naming the package.
# A CUDA toolkit whose runtime does not link is no, and cuda_ipc is then
# not in the transports; rdma-core's headers make verbs one; an interpreter
# without numpy and torch is named with the packages to install. Needs the
# generated configure (any build has it).
set -u
S=${TT_SRCDIR:-.}
[ -x "$S/configure" ] || { echo "SKIP: no generated configure in $S (run ./autogen.sh)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}

# What configure needs of the source tree, copied: the tree itself may be
# configured already (configure refuses a second build in it).
mkdir -p "$WORK/tree/src/include" "$WORK/empty" "$WORK/pc" "$WORK/bin"
cp -r "$S/configure" "$S/Makefile.in" "$S/config.h.in" "$S/build-aux" "$S/tutti.pc.in" "$WORK/tree/" || exit 1
cp "$S/src/include/tutti.h" "$S/src/include/tutti_version.h.in" "$WORK/tree/src/include/" || exit 1

# mpicc's answers as openmpi-bin gives them; MPI_LINK is what it says to link.
cat >"$WORK/bin/mpicc" <<EOF
#!/bin/sh
case "\$1" in
--showme:compile) echo "-I$WORK/empty -pthread" ;;
--showme:link) echo "\$MPI_LINK" ;;
*) exit 1 ;;
esac
EOF
chmod +x "$WORK/bin/mpicc"

# run_configure LOG ARGS...: pkg-config sees nothing (so the MPI flags come
# from mpicc), and no CUDA unless asked.
# The compiler's and libtool's checks give the same answers every run, so
# the first run's cache serves the others; the probes under test are never
# cached, and the cached paths of mpicc and nvcc and the saved variables
# (CUDA_HOME, PYTHON) are dropped, so each run looks for them again.
run_configure() {
    log=$1
    shift
    [ ! -f "$WORK/config.cache" ] ||
        grep -v -e '^ac_cv_env_' -e '^ac_cv_path_' -e '^pkg_cv_' "$WORK/config.cache" >"$WORK/tree/config.cache"
    (cd "$WORK/tree" && env PATH="$WORK/bin:$PATH" PKG_CONFIG_LIBDIR="$WORK/pc" MPICC= \
        ./configure --no-create --cache-file=config.cache --without-verbs "$@") >"$WORK/$log" 2>&1
    status=$?
    [ -f "$WORK/config.cache" ] || cp "$WORK/tree/config.cache" "$WORK/config.cache" 2>/dev/null
    return $status
}

# Each run checks more than one thing, for speed: this first one also has an
# interpreter without numpy or torch, whose summary says the Python suites
# will skip and what to install.
export MPI_LINK="-lm"
run_configure no-header.log --without-cuda PYTHON=/bin/false || fail "configure failed: $(tail -5 "$WORK/no-header.log")"
grep -q '^  MPI reference      no (mpi.h not found; install libopenmpi-dev)$' "$WORK/no-header.log" ||
    fail "mpicc without mpi.h: $(grep 'MPI reference' "$WORK/no-header.log")"
grep -q 'S\["TT_HAVE_MPI_TRUE"\]="#"' "$WORK/tree/config.status" || fail "the MPI benchmark would still be built"
echo "mpicc without mpi.h: $(grep 'MPI reference' "$WORK/no-header.log")"
grep -q '^  Python package     .* use /bin/false, numpy no (install python3-numpy), torch no (install python3-torch)$' \
    "$WORK/no-header.log" || fail "python: $(grep '  Python' "$WORK/no-header.log")"

if run_configure with-yes.log --without-cuda --with-mpi=yes; then
    fail "--with-mpi=yes went on without mpi.h"
fi
grep -q 'error: --with-mpi=yes .*mpi.h not found; install libopenmpi-dev' "$WORK/with-yes.log" ||
    fail "--with-mpi=yes: $(tail -1 "$WORK/with-yes.log")"
echo "--with-mpi=yes: $(tail -1 "$WORK/with-yes.log")"

# A header that compiles, and a library that is not there.
cat >"$WORK/empty/mpi.h" <<'EOF'
int MPI_Init(int *argc, char ***argv);
EOF
# The verbs transport needs rdma-core's headers only (libibverbs is opened at
# run time): where they are, it is a transport of the build and said so.
verbs=""
[ -f /usr/include/infiniband/verbs.h ] && verbs=--with-verbs=yes
export MPI_LINK="-L$WORK/empty -ltutti_no_such_mpi"
run_configure no-lib.log --without-cuda $verbs || fail "configure failed: $(tail -5 "$WORK/no-lib.log")"
grep -q "^  MPI reference      no (MPI_Init does not link with '-L$WORK/empty -ltutti_no_such_mpi'; install libopenmpi-dev)$" \
    "$WORK/no-lib.log" || fail "mpi.h without the library: $(grep 'MPI reference' "$WORK/no-lib.log")"
echo "mpi.h without the library: $(grep 'MPI reference' "$WORK/no-lib.log")"
if [ -n "$verbs" ]; then
    grep -q '^  transports         shm tcp verbs$' "$WORK/no-lib.log" ||
        fail "with verbs: $(grep '  transports' "$WORK/no-lib.log")"
    grep -q '^  verbs              yes (the verbs transport is built; libibverbs.so.1 is opened at run time)$' \
        "$WORK/no-lib.log" || fail "with verbs: $(grep '  verbs' "$WORK/no-lib.log")"
    echo "with rdma-core's headers: $(grep '  transports' "$WORK/no-lib.log")"
fi

# A CUDA toolkit with nvcc and the header but no runtime library.
mkdir -p "$WORK/cuda/bin" "$WORK/cuda/include"
printf '#!/bin/sh\nexit 0\n' >"$WORK/cuda/bin/nvcc"
chmod +x "$WORK/cuda/bin/nvcc"
cat >"$WORK/cuda/include/cuda_runtime_api.h" <<'EOF'
typedef int cudaError_t;
enum { cudaSuccess = 0 };
cudaError_t cudaGetDeviceCount(int *count);
EOF
run_configure no-cudart.log --without-mpi CUDA_HOME="$WORK/cuda" ||
    fail "configure failed: $(tail -5 "$WORK/no-cudart.log")"
grep -q '^  CUDA               no (cudaGetDeviceCount does not link with' "$WORK/no-cudart.log" ||
    fail "CUDA without its runtime: $(grep '  CUDA' "$WORK/no-cudart.log")"
grep -q '^  transports         shm tcp$' "$WORK/no-cudart.log" ||
    fail "transports: $(grep '  transports' "$WORK/no-cudart.log")"
grep -q '^  MPI reference      no (--without-mpi)$' "$WORK/no-cudart.log" ||
    fail "--without-mpi: $(grep 'MPI reference' "$WORK/no-cudart.log")"
echo "CUDA without its runtime: $(grep '  CUDA' "$WORK/no-cudart.log")"

# The real toolkit, where there is one: cuda_ipc is then a transport.
real_cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$real_cuda/include/cuda_runtime_api.h" ] && [ -x "$real_cuda/bin/nvcc" ]; then
    run_configure cuda.log --without-mpi CUDA_HOME="$real_cuda" || fail "configure failed with $real_cuda"
    grep -q '^  transports         shm tcp cuda_ipc$' "$WORK/cuda.log" ||
        fail "with CUDA: $(grep -e '  transports' -e '  CUDA' "$WORK/cuda.log")"
    echo "with $real_cuda: $(grep '  transports' "$WORK/cuda.log")"
fi
echo "PASS"
