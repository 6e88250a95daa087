/* SPDX-License-Identifier: MIT */
/*
 * The kernel stand-in's launches (kcpu.h): a grid run block after block on
 * the calling thread, a block's threads as fibers, device memory with
 * guards. One launch at a time in a process.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include <vector>

#include "cuda_runtime.h"

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

#if defined(__SANITIZE_ADDRESS__)
#define TT_KCPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_KCPU_ASAN 1
#endif
#endif

#ifdef TT_KCPU_ASAN
/* AddressSanitizer must be told of every switch between stacks. */
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
extern "C" void __asan_poison_memory_region(void const volatile *addr, size_t size);
extern "C" void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif

/* The switch between fibers: on x86-64 a few instructions (swapcontext
 * makes a system call each time, which costs microseconds where system
 * calls are slow), elsewhere swapcontext. */
#if defined(__x86_64__)
extern "C" void tt_kcpu_swap(void **save, void *resume) __attribute__((visibility("hidden")));
/* Saves the callee-saved registers on this stack and its pointer in *save,
 * then pops those of the stack at resume and returns there. */
asm(".text\n"
    ".globl tt_kcpu_swap\n"
    ".hidden tt_kcpu_swap\n"
    ".type tt_kcpu_swap, @function\n"
    "tt_kcpu_swap:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size tt_kcpu_swap, .-tt_kcpu_swap\n");
#endif

extern "C" char __start_tt_kcpu_shared[] __attribute__((weak));
extern "C" char __stop_tt_kcpu_shared[] __attribute__((weak));

namespace
{

enum { STACK = 256 << 10, GUARD = 256, MAX_THREADS = 1024 };
enum { IDLE, RUNNING, AT_BARRIER, DONE };

struct context {
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t uc;
#endif
};

struct fiber {
    context ctx;
    char *stack;
    unsigned tid; /* the thread it runs, linear in the block */
    int state;
#ifdef TT_KCPU_ASAN
    void *fake;
#endif
};

struct alloc {
    char *base;
    size_t size, span; /* span: size rounded up to GUARD */
    int host;
};

struct launch_state {
    const tt_kcpu_grid *l;
    void (*thread)(void *);
    void *arg;
    unsigned nthreads;
    fiber *current;    /* NULL: a thread run as a call */
    unsigned returned; /* a thread that returned without a barrier, in call mode */
    uint64_t slept_ns;
};

context sched;
#ifdef TT_KCPU_ASAN
const void *sched_bottom; /* the scheduler's stack */
size_t sched_size;
#endif
fiber *pool[MAX_THREADS];
fiber *starting;
launch_state *active;
std::vector<alloc> allocs;
std::vector<const void *> loaded;
tt_kcpu_order_t order_mode = TT_KCPU_FORWARD;
uint64_t rng_state = 1, launches, unloaded;
char label[160] = "(none)";

[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kernel stand-in: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  while: %s\n", label);
    if (active) {
        const char *sig = active->l->signature, *with = strstr(sig, "[with");
        fprintf(stderr, "  kernel: %s, block (%u,%u,%u), thread (%u,%u,%u)\n", with ? with : sig, blockIdx.x,
                blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
    }
    fflush(stderr);
    abort();
}

uint64_t next_random()
{
    uint64_t z = rng_state += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- fibers ---- */

void switch_to(context *from, context *to, const void *bottom, size_t size, void **fake)
{
#ifdef TT_KCPU_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)bottom;
    (void)size;
    (void)fake;
#endif
#if defined(__x86_64__)
    tt_kcpu_swap(&from->sp, to->sp);
#else
    swapcontext(&from->uc, &to->uc);
#endif
}

/* Back in a fiber (from the scheduler, whose stack it then notes to go
 * back to) or in the scheduler after a switch. */
void arrived(void *fake, int in_fiber)
{
#ifdef TT_KCPU_ASAN
    const void *bottom;
    size_t size;
    __sanitizer_finish_switch_fiber(fake, &bottom, &size);
    if (in_fiber) {
        sched_bottom = bottom;
        sched_size = size;
    }
#else
    (void)fake;
    (void)in_fiber;
#endif
}

/* From fiber f to the scheduler, and back when it resumes f. */
void yield(fiber *f)
{
#ifdef TT_KCPU_ASAN
    switch_to(&f->ctx, &sched, sched_bottom, sched_size, &f->fake);
    arrived(f->fake, 1);
#else
    switch_to(&f->ctx, &sched, NULL, 0, NULL);
#endif
}

/* Runs thread after thread, each time the scheduler hands it one. */
[[noreturn]] void fiber_main()
{
    fiber *f = starting;
    arrived(NULL, 1);
    for (;;) {
        active->current = f;
        active->thread(active->arg);
        f->state = DONE;
        yield(f);
    }
}

fiber *fiber_get(unsigned i)
{
    if (pool[i])
        return pool[i];
    fiber *f = new fiber();
    void *m = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        fatal("no memory for a thread's stack");
    f->stack = static_cast<char *>(m);
    mprotect(f->stack, 4096, PROT_NONE); /* a thread that overflows its stack faults */
#if defined(__x86_64__)
    /* As if tt_kcpu_swap had saved six registers here and fiber_main had
     * called it: the return address on a 16-byte boundary, minus 8. */
    void **top = reinterpret_cast<void **>(f->stack + STACK);
    top[-1] = NULL;
    top[-2] = reinterpret_cast<void *>(fiber_main);
    f->ctx.sp = top - 8;
#else
    getcontext(&f->ctx.uc);
    f->ctx.uc.uc_stack.ss_sp = f->stack;
    f->ctx.uc.uc_stack.ss_size = STACK;
    f->ctx.uc.uc_link = NULL;
    makecontext(&f->ctx.uc, fiber_main, 0);
#endif
    pool[i] = f;
    return f;
}

void set_thread(unsigned tid)
{
    threadIdx.x = tid % blockDim.x;
    threadIdx.y = tid / blockDim.x % blockDim.y;
    threadIdx.z = tid / (blockDim.x * blockDim.y);
}

/* Runs f's thread until it reaches a barrier or returns. */
void resume(fiber *f)
{
    set_thread(f->tid);
    f->state = RUNNING;
    starting = f;
    void *fake = NULL;
    switch_to(&sched, &f->ctx, f->stack, STACK, &fake);
    arrived(fake, 0);
    active->current = NULL;
}

/* ---- orders ---- */

void order_threads(unsigned *ord, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        ord[i] = order_mode == TT_KCPU_REVERSED ? n - 1 - i : i;
    if (order_mode == TT_KCPU_SHUFFLED)
        for (unsigned i = n; i > 1; i--) {
            unsigned j = (unsigned)(next_random() % i), t = ord[i - 1];
            ord[i - 1] = ord[j];
            ord[j] = t;
        }
}

uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Blocks may be too many to list: shuffled, block i is (a i + c) mod n for
 * a random a prime to n, which visits each once. */
struct block_order {
    uint64_t n, a, c;
    void init(uint64_t count)
    {
        n = count;
        a = 1;
        c = 0;
        if (order_mode != TT_KCPU_SHUFFLED || n < 2)
            return;
        do
            a = 1 + next_random() % (n - 1);
        while (gcd(a, n) != 1);
        c = next_random() % n;
    }
    uint64_t at(uint64_t i) const
    {
        if (order_mode == TT_KCPU_REVERSED)
            return n - 1 - i;
        return (uint64_t)(((unsigned __int128)a * i + c) % n);
    }
};

/* ---- blocks ---- */

void run_in_fibers(const unsigned *ord, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        fiber *f = fiber_get(i);
        f->tid = ord[i];
        resume(f);
    }
    unsigned phase[MAX_THREADS];
    for (;;) {
        unsigned waiting = 0, done = 0, waiter = 0, quitter = 0;
        for (unsigned i = 0; i < n; i++) {
            if (pool[i]->state == AT_BARRIER)
                waiting++, waiter = pool[i]->tid;
            else
                done++, quitter = pool[i]->tid;
        }
        if (!waiting)
            return;
        if (done) {
            set_thread(waiter);
            fatal("__syncthreads reached by thread %u while thread %u of the block has returned (a barrier "
                  "that not every thread reaches)",
                  waiter, quitter);
        }
        order_threads(phase, n);
        for (unsigned i = 0; i < n; i++)
            resume(pool[phase[i]]);
    }
}

void run_block(launch_state *s)
{
    char *lo = __start_tt_kcpu_shared, *hi = __stop_tt_kcpu_shared;
    if (lo != hi)
        memset(lo, 0xff, (size_t)(hi - lo));
    unsigned ord[MAX_THREADS];
    order_threads(ord, s->nthreads);
    fiber *first = fiber_get(0);
    first->tid = ord[0];
    resume(first);
    if (first->state == AT_BARRIER) {
        run_in_fibers(ord, s->nthreads);
        return;
    }
    /* No barrier in the first thread: none may be in the others either. */
    s->returned = ord[0];
    for (unsigned i = 1; i < s->nthreads; i++) {
        set_thread(ord[i]);
        s->thread(s->arg);
    }
}

/* ---- memory ---- */

const alloc *find(const void *p)
{
    const char *c = static_cast<const char *>(p);
    for (const alloc &a : allocs)
        if (c >= a.base && c <= a.base + a.size)
            return &a;
    return NULL;
}

void check_guards()
{
#ifndef TT_KCPU_ASAN /* there the guards are poisoned: ASan reports any touch */
    for (const alloc &a : allocs) {
        for (size_t i = 0; i < GUARD; i++)
            if ((unsigned char)a.base[-(ptrdiff_t)GUARD + (ptrdiff_t)i] != 0xa5)
                fatal("the %zu bytes before the allocation of %zu bytes at %p were written", GUARD - i,
                      a.size, (void *)a.base);
        for (size_t i = a.size; i < a.span + GUARD; i++)
            if ((unsigned char)a.base[i] != 0xa5)
                fatal("byte %zu past the end of the allocation of %zu bytes at %p was written", i - a.size,
                      a.size, (void *)a.base);
    }
#endif
}

void *allocate(size_t bytes, int host)
{
    size_t span = (bytes + GUARD - 1) / GUARD * GUARD;
    char *raw = static_cast<char *>(aligned_alloc(GUARD, span + 2 * GUARD));
    if (!raw)
        fatal("no memory for %zu bytes of device memory", bytes);
    memset(raw, 0xa5, span + 2 * GUARD);
    alloc a = {raw + GUARD, bytes, span, host};
    memset(a.base, 0xff, bytes);
#ifdef TT_KCPU_ASAN
    __asan_poison_memory_region(raw, GUARD);
    __asan_poison_memory_region(a.base + bytes, span - bytes + GUARD);
#endif
    allocs.push_back(a);
    return a.base;
}

/* The device side of a copy or set: inside one allocation. */
void device_range(const void *p, size_t bytes, const char *what)
{
    const alloc *a = find(p);
    if (!a)
        fatal("%s: %p is not device memory", what, p);
    if (static_cast<const char *>(p) + bytes > a->base + a->size)
        fatal("%s: %zu bytes at %p run %zu bytes past the end of the allocation of %zu bytes at %p", what,
              bytes, p, (size_t)(static_cast<const char *>(p) + bytes - (a->base + a->size)), a->size,
              (void *)a->base);
}

} // namespace

extern "C" {

void tt_kcpu_set_order(tt_kcpu_order_t order, uint64_t seed)
{
    order_mode = order;
    rng_state = seed;
}

void *tt_kcpu_malloc(size_t bytes)
{
    return allocate(bytes, 0);
}

void *tt_kcpu_host_alloc(size_t bytes)
{
    return allocate(bytes, 1);
}

void tt_kcpu_free(void *p)
{
    if (!p)
        return;
    check_guards();
    for (size_t i = 0; i < allocs.size(); i++)
        if (allocs[i].base == p) {
            char *raw = allocs[i].base - GUARD;
#ifdef TT_KCPU_ASAN
            __asan_unpoison_memory_region(raw, allocs[i].span + 2 * GUARD);
#endif
            free(raw);
            allocs.erase(allocs.begin() + (ptrdiff_t)i);
            return;
        }
    fatal("free of %p, which is no allocation", p);
}

void tt_kcpu_label(const char *what)
{
    snprintf(label, sizeof label, "%s", what);
}

uint64_t tt_kcpu_launches(void)
{
    return launches;
}

uint64_t tt_kcpu_unloaded_launches(void)
{
    return unloaded;
}

void tt_kcpu_loaded(const void *kernel)
{
    for (const void *k : loaded)
        if (k == kernel)
            return;
    loaded.push_back(kernel);
}

int tt_kcpu_copy(void *dst, const void *src, size_t bytes, int kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (bytes && (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
                  (kind == cudaMemcpyDefault && find(src))))
        device_range(src, bytes, "a copy's source");
    if (bytes && (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice ||
                  (kind == cudaMemcpyDefault && find(dst))))
        device_range(dst, bytes, "a copy's destination");
    memmove(dst, src, bytes);
    check_guards();
    return cudaSuccess;
}

int tt_kcpu_set(void *dst, int value, size_t bytes)
{
    if (bytes)
        device_range(dst, bytes, "a set");
    memset(dst, value, bytes);
    check_guards();
    return cudaSuccess;
}

void tt_kcpu_barrier(void)
{
    if (!active)
        fatal("__syncthreads outside a kernel");
    fiber *f = active->current;
    if (!f)
        fatal(
            "__syncthreads reached by a thread after thread %u of the block returned without one (a barrier "
            "that not every thread reaches)",
            active->returned);
    f->state = AT_BARRIER;
    yield(f);
    active->current = f;
}

void tt_kcpu_nanosleep(unsigned ns)
{
    if (!active)
        fatal("__nanosleep outside a kernel");
    active->slept_ns += ns;
    if (active->slept_ns > 10000000000ull)
        fatal("a thread has slept 10 s: it waits for what never comes");
    struct timespec t = {0, (long)ns};
    nanosleep(&t, NULL);
}

int tt_kcpu_launch(const struct tt_kcpu_grid *l, void (*thread)(void *), void *arg)
{
    if (active)
        fatal("a launch from inside a kernel");
    const unsigned *g = l->grid, *b = l->block;
    uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
    if (!g[0] || !g[1] || !g[2] || g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535 || !threads ||
        threads > MAX_THREADS || b[2] > 64 || l->shared_bytes > 48 * 1024)
        return cudaErrorInvalidConfiguration;
    launch_state s = {l, thread, arg, (unsigned)threads, NULL, 0, 0};
    active = &s;
    for (int i = 0; i < l->nargs; i++) {
        const void *p = l->pointers[i];
        if (p && p != (const void *)(intptr_t)-1 && !find(p))
            fatal("parameter %d, %p, is neither device memory nor mapped host memory", i + 1, p);
    }
    launches++;
    int known = 0;
    for (const void *k : loaded)
        known |= k == l->kernel;
    unloaded += !known;
    gridDim = dim3(g[0], g[1], g[2]);
    blockDim = dim3(b[0], b[1], b[2]);
    block_order order;
    order.init((uint64_t)g[0] * g[1] * g[2]);
    for (uint64_t i = 0; i < order.n; i++) {
        uint64_t at = order.at(i);
        blockIdx.x = (unsigned)(at % g[0]);
        blockIdx.y = (unsigned)(at / g[0] % g[1]);
        blockIdx.z = (unsigned)(at / ((uint64_t)g[0] * g[1]));
        run_block(&s);
    }
    active = NULL;
    check_guards();
    return cudaSuccess;
}

} // extern "C"
