// The arithmetic of fdpp calibrate, on host data only (CPU-testable): quantiles of a score
// histogram, the φ that keeps the most rows inside the unified softmax's safe range, and
// the fallback rates φ sources would have on recorded rows (design.md, Technique 1).
//
// A row is (m, len): the max scaled score s = q·k/√d of one (query, head) row, in s units,
// and the number of keys it attends. The safe range of dispatch/softmax_range.h is in log2
// units: the row passes iff lo ≤ (m − φ)·log2(e) ≤ hi.
#pragma once

#include <cstdint>
#include <vector>

#include "dispatch/softmax_range.h"

namespace fdpp {

struct ScoreRow {
  float m = 0.f;  // row max, s units
  int len = 0;    // keys attended
};

// The q-quantile (0 ≤ q ≤ 1) of the scores a histogram of dispatch/softmax_range.h's bins
// counted, interpolated linearly inside the bin and clamped to [min, max] (the exact extremes,
// which the edge bins cannot tell). NaN for an empty histogram.
double histogram_quantile(const std::vector<uint64_t>& histogram, double q, double min,
                          double max);

// Whether φ keeps row r inside the range of `type`.
bool row_passes(const ScoreRow& r, float phi, UnifiedType type);

// The φ (s units) that keeps the most rows in range: each row admits the interval
// [m − hi·ln2, m − lo·ln2] of φ, and the point covered by the most intervals is found by a
// sweep over their ends; among equally good points the middle of the widest stretch. 0 for
// no rows.
float fit_phi(const std::vector<ScoreRow>& rows, UnifiedType type);

// The share of rows outside the range with one φ.
double fallback_rate(const std::vector<ScoreRow>& rows, float phi, UnifiedType type);

// Row-following φ over recorded sequences: row t of a sequence (decode step t, a query that
// sees t + 1 keys) gets φ = the max of row t − 1 of the same head, less the middle of the
// range (unified_range_center), as the decode kernels compute it. `sequences` holds, per
// sequence, the row maxes (len, n_heads) row-major; rows t = 0 (the prompt's first token,
// never a decode step) are not counted. Returns the share of the counted rows that fail.
double follow_fallback_rate(const std::vector<std::vector<float>>& sequences, int n_heads,
                            UnifiedType type, int64_t* counted = nullptr);

}  // namespace fdpp
