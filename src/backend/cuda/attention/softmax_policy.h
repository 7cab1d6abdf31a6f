// How an attention kernel finds the softmax normaliser: the template parameter
// that issue 4 turns (one definition for decode and prefill).
#pragma once

namespace fdpp::cuda {

// kSynchronized: the ordinary online softmax: a running max per row, the
//   accumulator rescaled by e^(m_old - m_new) whenever the max moves.
// kUnifiedMax (issue 4): e^(s - φ) with one φ, no running max and no rescale;
//   each split still reports its local max for the [a, b] range check, and a row
//   that fails it is recomputed with kSynchronized.
enum class SoftmaxPolicy { kSynchronized, kUnifiedMax };

}  // namespace fdpp::cuda
