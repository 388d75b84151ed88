// A CUDA emulator for the tests of generated kernels on machines without a GPU: the
// generated source is built for the host with this prelude in front. Each GPU thread
// is a fiber (ucontext); blocks run one after another; __syncthreads and warp shuffles
// are barriers that switch fibers, so the kernels' index math, grid-stride loops,
// shuffles and shared memory run as written. Deterministic and slow: small shapes only.
// A barrier no thread can pass (divergent __syncthreads or shuffles) is reported as a
// deadlock instead of hanging.
#pragma once

namespace opscope::compiler::testing {

// Put in front of the generated CUDA source; the library exports
//   int ofs_emu_launch(void* kernel, int nargs, void** args, unsigned grid, unsigned block)
// returning 0, -1 on a deadlock, -2 for a bad launch.
inline const char* kCudaEmulatorPrelude = R"(// opscope tests: CUDA emulated on the host
#include <math.h>
#include <stdlib.h>
#include <ucontext.h>
#define __global__
#define __device__ static
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(n)
struct ofs_dim3 { unsigned x, y, z; };
struct ofs_thread { ucontext_t ctx; ofs_dim3 idx; int done; };
static ofs_thread* ofs_cur;
static ofs_dim3 ofs_block_idx, ofs_block_dim, ofs_grid_dim;
#define threadIdx (ofs_cur->idx)
#define blockIdx ofs_block_idx
#define blockDim ofs_block_dim
#define gridDim ofs_grid_dim
static ucontext_t ofs_sched;
static long ofs_progress;  // barrier arrivals and exits: a round without any is a deadlock
static int ofs_block_arrived;
static unsigned ofs_block_gen;
static int ofs_warp_arrived[32];
static unsigned ofs_warp_gen[32];
static float ofs_slot[1024];
static void ofs_barrier(int* arrived, unsigned* gen, int count) {
  unsigned g = *gen;
  ++ofs_progress;
  if (++*arrived == count) {
    *arrived = 0;
    ++*gen;
    return;
  }
  while (*gen == g) swapcontext(&ofs_cur->ctx, &ofs_sched);
}
static void __syncthreads() { ofs_barrier(&ofs_block_arrived, &ofs_block_gen, (int)ofs_block_dim.x); }
static float __shfl_xor_sync(unsigned mask, float v, int o) {
  if (mask != 0xffffffffu) abort();
  unsigned t = ofs_cur->idx.x, w = t >> 5;
  ofs_slot[t] = v;
  ofs_barrier(&ofs_warp_arrived[w], &ofs_warp_gen[w], 32);
  float r = ofs_slot[(t & ~31u) | ((t & 31u) ^ (unsigned)o)];
  ofs_barrier(&ofs_warp_arrived[w], &ofs_warp_gen[w], 32);  // slots are free again
  return r;
}
static float __uint_as_float(unsigned u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; __builtin_memcpy(&u, &f, 4); return u; }
static float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static void __trap() { abort(); }

static void* ofs_kernel;
static int ofs_nargs;
static void** ofs_args;
static void ofs_entry() {
  void** a = ofs_args;
  typedef void* P;
  switch (ofs_nargs) {
    case 1: ((void (*)(P))ofs_kernel)(a[0]); break;
    case 2: ((void (*)(P, P))ofs_kernel)(a[0], a[1]); break;
    case 3: ((void (*)(P, P, P))ofs_kernel)(a[0], a[1], a[2]); break;
    case 4: ((void (*)(P, P, P, P))ofs_kernel)(a[0], a[1], a[2], a[3]); break;
    case 5: ((void (*)(P, P, P, P, P))ofs_kernel)(a[0], a[1], a[2], a[3], a[4]); break;
    case 6: ((void (*)(P, P, P, P, P, P))ofs_kernel)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: ((void (*)(P, P, P, P, P, P, P))ofs_kernel)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 8: ((void (*)(P, P, P, P, P, P, P, P))ofs_kernel)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
    default: abort();
  }
  ofs_cur->done = 1;
  ++ofs_progress;
}  // returns to ofs_sched (uc_link)

extern "C" int ofs_emu_launch(void* kernel, int nargs, void** args, unsigned grid, unsigned block) {
  static ofs_thread* threads;
  static char* stacks;
  static unsigned cap;
  const unsigned long kStack = 64 * 1024;
  if (block == 0 || block > 1024 || block % 32 || grid == 0 || nargs < 1 || nargs > 8) return -2;
  if (block > cap) {
    free(threads);
    free(stacks);
    threads = (ofs_thread*)calloc(block, sizeof(ofs_thread));
    stacks = (char*)malloc(block * kStack);
    cap = block;
  }
  ofs_kernel = kernel;
  ofs_nargs = nargs;
  ofs_args = args;
  ofs_grid_dim.x = grid; ofs_grid_dim.y = ofs_grid_dim.z = 1;
  ofs_block_dim.x = block; ofs_block_dim.y = ofs_block_dim.z = 1;
  for (unsigned b = 0; b < grid; ++b) {
    ofs_block_idx.x = b; ofs_block_idx.y = ofs_block_idx.z = 0;
    ofs_block_arrived = 0;
    for (int w = 0; w < 32; ++w) ofs_warp_arrived[w] = 0;
    for (unsigned t = 0; t < block; ++t) {
      ofs_thread& th = threads[t];
      getcontext(&th.ctx);
      th.ctx.uc_stack.ss_sp = stacks + t * kStack;
      th.ctx.uc_stack.ss_size = kStack;
      th.ctx.uc_link = &ofs_sched;
      makecontext(&th.ctx, ofs_entry, 0);
      th.idx.x = t; th.idx.y = th.idx.z = 0;
      th.done = 0;
    }
    unsigned live = block;
    while (live) {
      long before = ofs_progress;
      for (unsigned t = 0; t < block; ++t) {
        if (threads[t].done) continue;
        ofs_cur = &threads[t];
        swapcontext(&ofs_sched, &threads[t].ctx);
        if (threads[t].done) --live;
      }
      if (live && ofs_progress == before) return -1;
    }
  }
  return 0;
}
)";

using EmuLaunch = int (*)(void* kernel, int nargs, void** args, unsigned grid, unsigned block);

}  // namespace opscope::compiler::testing
