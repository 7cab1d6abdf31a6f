// Which captured decode graph serves a step. A graph freezes the attention
// split grid, which is sized from an upper bound on the sequences' lengths; one
// graph per (batch size, power-of-two length bucket) keeps the grid near the
// real lengths (short contexts don't pay for a long-context grid) while a
// generation re-captures only O(log context) times.
#pragma once

#include <algorithm>

namespace fdpp {

constexpr int kMinLengthBucket = 256;

// The smallest power of two >= max(length, kMinLengthBucket), capped at context.
inline int decode_length_bucket(int length, int context) {
  int b = kMinLengthBucket;
  while (b < length) b *= 2;
  return std::min(b, context);
}

}  // namespace fdpp
