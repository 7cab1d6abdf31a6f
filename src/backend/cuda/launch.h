// Kernel launches with programmatic dependent launch (PDL, sm_90+).
//
// Why: a decode step is ~330 back-to-back kernels, most of them streaming a few
// MB to a few hundred MB. Between two stream-ordered kernels the GPU drains the
// first (its last CTAs run on a nearly idle chip), flushes, then launches and
// ramps up the second: a few µs per boundary in which HBM idles. With PDL the
// second kernel's CTAs are scheduled while the first is still running; they
// issue what does not depend on it (weight loads, which nothing writes) and then
// block in griddepcontrol.wait until the first grid has completed and its
// writes are visible. The overlap hides the ramp-down / launch / ramp-up.
//
// The contract, for every kernel launched through launch_kernel():
//   * it calls pdl_wait() before it reads anything an earlier kernel writes, and
//     before it writes anything (an earlier kernel may still read it). Before the
//     wait it may only read what no kernel in flight writes: weights, which the
//     loader (and bench-gemm's random fill) finishes with a synchronize, and the
//     step's inputs the host uploads before the graph runs (slots, lengths: the
//     decode attention kernels read them through L2 before their wait);
//   * it calls pdl_launch_dependents() right after the wait: the next kernel may
//     then be scheduled as soon as every CTA of this grid has passed it. Its CTAs
//     only take free slots, issue their weight loads and wait, so this grid's own
//     CTAs are never held back. Triggering before the wait instead (so that two
//     kernels ahead could be resident and waiting) measured slower
//     (docs/experiments/log.md, "launch.h: the trigger before the wait"): the
//     waiting CTAs hold slots the running kernel's tail could use.
// A grid that passed pdl_wait() knows its predecessor completed, which had passed
// its own wait: every earlier kernel has completed. pdl_wait() returns at once
// when the kernel was launched without PDL, so the kernels are correct either
// way. Kernels launched with <<< >>> (and library calls such as cuBLASLt) keep
// full stream ordering on both sides.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#ifdef __CUDACC__
#include "backend/cuda/ptx.cuh"
#endif

namespace fdpp::cuda {

// A stream and whether kernels launched on it may overlap their predecessor
// (CudaBackend: on for compute capability 9.0+ unless --pdl off). Converts from
// a plain stream (no PDL), so tests and tools can keep passing cudaStream_t.
struct KernelStream {
  cudaStream_t stream = nullptr;
  bool pdl = false;
  KernelStream(cudaStream_t s = nullptr, bool pdl_allowed = false)  // NOLINT: implicit on purpose
      : stream(s), pdl(pdl_allowed) {}
};

// True when the kernels of this build were compiled for sm_90 or newer (and so wait in
// pdl_wait()); the backend launches with PDL only then, and only on such a device.
bool kernels_support_pdl();

#ifdef __CUDACC__

// pdl_wait() and pdl_launch_dependents() are in ptx.cuh (the inline-PTX wrappers).

// kernel<<<grid, block, smem, s.stream>>>(args...), with the PDL attribute when
// s.pdl. The kernel must follow the contract above.
template <class... KernelArgs, class... Args>
cudaError_t launch_kernel(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                          KernelStream s, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = s.stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = s.pdl ? attribute : nullptr;
  config.numAttrs = s.pdl ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) (void)cudaGetLastError();  // reported here, not by a later check
  return err;
}

#endif  // __CUDACC__

}  // namespace fdpp::cuda
