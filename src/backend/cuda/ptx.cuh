// The inline-PTX wrappers every kernel shares, each written once: shared-memory addressing,
// cp.async, ldmatrix, mma.sync m16n8k16, the MUFU exp2, mbarrier + TMA (sm_90) and the
// programmatic-dependent-launch controls. Only what CUDA's intrinsics do not offer (or offer
// only through a generic pointer the kernels would convert on every use) lives here.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace fdpp::cuda {

// The 32-bit shared-window address the .shared instructions take. Kernels keep it in a
// register across a tile instead of converting a generic pointer per instruction.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- cp.async (sm_80) ---------------------------------------------------------------------
// 16-byte global -> shared copy that bypasses L1 (.cg: streamed data is read once).
// src_bytes = 0 reads nothing and writes 16 zero bytes: how rows past the end of a tensor or
// of the valid keys are filled (never stale data, which may be NaN, and 0·NaN = NaN).
__device__ __forceinline__ void cp_async_16_shared(uint32_t dst, const void* src,
                                                   int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
// The same from a generic shared pointer; fill == false zeroes the 16 bytes.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool fill) {
  cp_async_16_shared(smem_u32(smem), gmem, fill ? 16 : 0);
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most kPending of this thread's committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// ---- plain shared-memory accesses through a 32-bit address ----------------------------------
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
// 16 bytes of v repeated (v = 0: zeroing a chunk).
__device__ __forceinline__ void st_shared_fill_v4(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4_b32(uint32_t addr) {
  uint4 r;
  asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "r"(addr)
               : "memory");
  return r;
}

// ---- ldmatrix ---------------------------------------------------------------------------------
// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, and lane l gets
// row l/4, columns 2(l%4), 2(l%4)+1 of matrix i in r[i] (.trans: rows 2(l%4)+{0,1} of column
// l/4, i.e. the transpose) — exactly the mma.m16n8k16 A/B fragment pieces.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  ldmatrix_x4(r, smem_u32(smem));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// ---- mma.sync m16n8k16, fp32 accumulation -----------------------------------------------------
// d (16x8 fp32) += a (16x16, row-major) · b (16x8, column-major), per PTX's fragments
// (g = lane/4, t = lane%4):
//   a0 = A[g][2t..2t+1]     a1 = A[g+8][2t..2t+1]   a2 = A[g][2t+8..]   a3 = A[g+8][2t+8..]
//   b0 = B[2t..2t+1][g]     b1 = B[2t+8..2t+9][g]
//   d0,d1 = D[g][2t, 2t+1]  d2,d3 = D[g+8][2t, 2t+1]
// T is __half or __nv_bfloat16 (the operand type; both operands share it).
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], uint32_t a0, uint32_t a1,
                                             uint32_t a2, uint32_t a3, uint32_t b0,
                                             uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
  mma_m16n8k16<T>(d, a[0], a[1], a[2], a[3], b0, b1);
}

// ---- exp2 on the MUFU unit ----------------------------------------------------------------------
// ≈2 ulp, subnormal results flushed as dispatch/softmax_range.h assumes; ex2.approx(-inf) = +0,
// which is what masked keys need. Not volatile: a pure function the compiler may schedule.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// ---- mbarrier + TMA (sm_90) ---------------------------------------------------------------------
// Hopper features: kernels built for every architecture of the build test FDPP_PTX_HAS_TMA
// and trap below sm_90 (the host never launches them there). The host pass sees the wrappers
// too, so that host-side code naming the kernels compiles.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FDPP_PTX_HAS_TMA 0
#else
#define FDPP_PTX_HAS_TMA 1
#endif

#if FDPP_PTX_HAS_TMA
// The protocol of one ring stage: a thread arrives with the byte count the stage's copies
// will deliver (expect_tx), the TMA completes those bytes, and the phase flips when both are
// done; readers wait for the parity of the stage's use.
__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// The initialised barriers must be visible to the TMA unit (the async proxy) before a copy
// signals them.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::
                   : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait_parity(uint32_t bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// One box of `map` at (column x, row y) into shared memory `dst` (aligned as the map's
// swizzle requires: 1024 bytes for the 128-byte one), completing on mbarrier `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap& map, int x, int y,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
#endif  // FDPP_PTX_HAS_TMA

// ---- programmatic dependent launch (launch.h has the contract) ------------------------------
// Blocks until every grid this one depends on has completed and its memory writes are
// visible (a no-op when launched without PDL, or below sm_90).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// Lets the next kernel in the stream be scheduled once every CTA of this grid has called
// this (or exited).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace fdpp::cuda
