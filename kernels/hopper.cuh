#pragma once
// Hopper's asynchronous pipeline, as PTX wrappers: the tensor memory accelerator (TMA: one thread
// copies a whole tile from global to shared memory, swizzled, zero-filling outside the tensor),
// mbarriers (the copy signals completion by bytes; consumers release a stage by arriving), and
// warpgroup MMA (wgmma: 4 warps multiply tiles straight out of shared memory, asynchronously).
// The wgmma and setmaxnreg instructions need the sm_90a target; include this header only from
// files built for it (kernels/wgmma.cu). Internal to kernels/.
#include <cstdint>

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "kernels/hopper.cuh: wgmma and setmaxnreg need the sm_90a target (compute_90a)"
#endif

namespace tessera::kernels::hopper {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -----------------------------------------------------------------------------------

// A barrier that completes a phase when `count` threads have arrived and every byte announced
// with arrive_expect_tx has landed.
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the other threads and to the TMA unit.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Arrives and announces `bytes` more to come from TMA copies in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Waits until the phase with this parity has completed. Waiting on the parity of the phase
// before the current one returns at once, which is how a producer passes its first round of
// "empty" barriers that nobody has arrived at yet. A wait of more than ~2^35 cycles (~17 s: a
// copy that never lands, a count that is never reached) traps, so that a pipeline bug fails the
// launch instead of hanging the GPU.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  const long long start = clock64();
  while (true) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    if (done) return;
    if (clock64() - start > (1ll << 35)) __trap();
  }
}

// ---- TMA ----------------------------------------------------------------------------------------

// Copies the box of the 2-D tensor `map` (a CUtensorMap kernel parameter) whose first element is
// at (c0 innermost, c1) into shared memory at dst, completing `bytes` on `bar`. Elements outside
// the tensor are written as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, std::int32_t c0, std::int32_t c1,
                                            std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar))
      : "memory");
}

// ---- registers ----------------------------------------------------------------------------------

// Gives registers back (producer warpgroup) or takes them (consumer warpgroups): needs a
// register cap at kernel entry (__launch_bounds__(threads, 1)) and one branch per role.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// ---- wgmma --------------------------------------------------------------------------------------

// Shared-memory matrix descriptor of a K-major tile written by TMA with 128-byte swizzling: rows
// of 128 bytes, 8-row groups 1024 bytes apart (the stride byte offset); the leading byte offset
// is unused for this layout. The tile must start on a 1024-byte boundary; a step of k inside the
// 128-byte row is a plain offset of the start address (the swizzle is applied to the address).
__device__ __forceinline__ std::uint64_t desc_k_major_sw128(const void* tile) {
  const std::uint64_t addr = smem_addr(tile);
  return ((addr & 0x3FFFF) >> 4)             // start address, 16-byte units
         | (std::uint64_t{1} << 16)          // leading byte offset (unused)
         | (std::uint64_t{1024 >> 4} << 32)  // stride byte offset
         | (std::uint64_t{1} << 62);         // layout: 128-byte swizzle
}

// Orders this thread's register accesses to the accumulators before the next wgmma.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the group of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses to the accumulators across the asynchronous wgmma
// (it does not know they are written later than the instruction that names them).
template <int N>
__device__ __forceinline__ void fence_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// wgmma's accumulator operands: the registers "{%0, ..., %N-1}" of the instruction text and the
// matching "+f"(d[i]) constraints, for 64 and 128 accumulators (the second half extends the first).
#define TESSERA_WGMMA_REGS_0_63                                                      \
  " %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"           \
  " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
  " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TESSERA_WGMMA_REGS_64_127                                                                \
  " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"             \
  " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"             \
  " %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
  " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TESSERA_WGMMA_REGS64 "{" TESSERA_WGMMA_REGS_0_63 "}"
#define TESSERA_WGMMA_REGS128 "{" TESSERA_WGMMA_REGS_0_63 ", " TESSERA_WGMMA_REGS_64_127 "}"
#define TESSERA_WGMMA_OUTS8(d, i)                                                                                 \
  "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define TESSERA_WGMMA_OUTS_0_63(d)                                                                              \
  TESSERA_WGMMA_OUTS8(d, 0), TESSERA_WGMMA_OUTS8(d, 8), TESSERA_WGMMA_OUTS8(d, 16), TESSERA_WGMMA_OUTS8(d, 24), \
      TESSERA_WGMMA_OUTS8(d, 32), TESSERA_WGMMA_OUTS8(d, 40), TESSERA_WGMMA_OUTS8(d, 48), TESSERA_WGMMA_OUTS8(d, 56)
#define TESSERA_WGMMA_OUTS_64_127(d)                                                                              \
  TESSERA_WGMMA_OUTS8(d, 64), TESSERA_WGMMA_OUTS8(d, 72), TESSERA_WGMMA_OUTS8(d, 80), TESSERA_WGMMA_OUTS8(d, 88), \
      TESSERA_WGMMA_OUTS8(d, 96), TESSERA_WGMMA_OUTS8(d, 104), TESSERA_WGMMA_OUTS8(d, 112),                       \
      TESSERA_WGMMA_OUTS8(d, 120)
#define TESSERA_WGMMA_OUTS64(d) TESSERA_WGMMA_OUTS_0_63(d)
#define TESSERA_WGMMA_OUTS128(d) TESSERA_WGMMA_OUTS_0_63(d), TESSERA_WGMMA_OUTS_64_127(d)

// The input formats of wgmma with FP32 accumulation from shared memory (both operands K-major).
enum class WgmmaInput { kTf32, kBf16 };

// D (64 x N, FP32, in the warpgroup's registers: N / 2 per thread) = A (64 x K) * B (K x N) +
// (accumulate ? D : 0), A and B from shared memory through descriptors; K = 8 (tf32) or 16
// (bf16): 32 bytes of k. Thread (warp w, lane l) holds, for each 8 columns j: d[4j + 0, 1] =
// D(16w + l/4, 8j + 2(l%4) + 0, 1) and d[4j + 2, 3] the same 8 rows lower.
template <WgmmaInput IN, int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b, bool accumulate) {
  static_assert(N == 128 || N == 256, "wgmma: N of 128 or 256 wrapped");
  const int scale_d = accumulate ? 1 : 0;
  // One wgmma.mma_async: SHAPE its shape and types, D in the N / 2 registers REGS (OUTS), the
  // descriptors and scale-d the operands DA, DB and SD after them; BF16 adds the transpose flags.
#define TESSERA_WGMMA_ASYNC(SHAPE, REGS, OUTS, DA, DB, SD, TAIL)                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SD                                                     \
               ", 0;\n"                                                                                     \
               "wgmma.mma_async.sync.aligned." SHAPE " " REGS ", %" #DA ", %" #DB ", p, 1, 1" TAIL ";\n}\n" \
               : OUTS(d)                                                                                    \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
  if constexpr (IN == WgmmaInput::kTf32 && N == 128) {
    TESSERA_WGMMA_ASYNC("m64n128k8.f32.tf32.tf32", TESSERA_WGMMA_REGS64, TESSERA_WGMMA_OUTS64, 64, 65, 66, "");
  } else if constexpr (IN == WgmmaInput::kTf32 && N == 256) {
    TESSERA_WGMMA_ASYNC("m64n256k8.f32.tf32.tf32", TESSERA_WGMMA_REGS128, TESSERA_WGMMA_OUTS128, 128, 129, 130, "");
  } else if constexpr (IN == WgmmaInput::kBf16 && N == 128) {
    TESSERA_WGMMA_ASYNC("m64n128k16.f32.bf16.bf16", TESSERA_WGMMA_REGS64, TESSERA_WGMMA_OUTS64, 64, 65, 66, ", 0, 0");
  } else {
    TESSERA_WGMMA_ASYNC("m64n256k16.f32.bf16.bf16", TESSERA_WGMMA_REGS128, TESSERA_WGMMA_OUTS128, 128, 129, 130,
                        ", 0, 0");
  }
#undef TESSERA_WGMMA_ASYNC
}

#undef TESSERA_WGMMA_REGS64
#undef TESSERA_WGMMA_OUTS64
#undef TESSERA_WGMMA_REGS128
#undef TESSERA_WGMMA_OUTS128
#undef TESSERA_WGMMA_REGS_0_63
#undef TESSERA_WGMMA_REGS_64_127
#undef TESSERA_WGMMA_OUTS_0_63
#undef TESSERA_WGMMA_OUTS_64_127
#undef TESSERA_WGMMA_OUTS8

// A persistent kernel's tile order: the row and column of tile number `t` when the tiles are
// walked GROUP tile rows at a time, down each group's columns (blocks running at once then share
// rows of A and columns of B in L2).
template <int GROUP>
__device__ __forceinline__ void tile_of(std::int64_t t, std::int64_t tiles_m, std::int64_t tiles_n, std::int64_t& tm,
                                        std::int64_t& tn) {
  const std::int64_t per_group = GROUP * tiles_n;
  const std::int64_t first = t / per_group * GROUP;
  const std::int64_t rows = tiles_m - first < GROUP ? tiles_m - first : GROUP;
  const std::int64_t in_group = t % per_group;
  tm = first + in_group % rows;
  tn = in_group / rows;
}

}  // namespace tessera::kernels::hopper
