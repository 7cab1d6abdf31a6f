// How an attention kernel finds the softmax normaliser: the template parameter that selects
// the synchronized or the unified-max kernels (one definition for decode and prefill), and
// an input of plan_decode / plan_prefill. CUDA-free. The safe range of the unified softmax
// and its derivation: dispatch/softmax_range.h.
#pragma once

namespace fdpp {

// kSynchronized: the ordinary online softmax: a running max per row, the accumulator
//   rescaled by 2^(m_old - m_new) whenever the max moves.
// kUnifiedMax: 2^(t - φ) with one φ per row, no running max and no rescale; each split (or
//   thread) tracks its local max in registers only for the [a, b] range check, and a row
//   that fails it is recomputed with kSynchronized, in the same launch.
enum class SoftmaxPolicy { kSynchronized, kUnifiedMax };

}  // namespace fdpp
