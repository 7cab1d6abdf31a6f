#include "tuning/score_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace fdpp {

double histogram_quantile(const std::vector<uint64_t>& histogram, double q, double min,
                          double max) {
  uint64_t total = 0;
  for (uint64_t c : histogram) total += c;
  if (total == 0) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double target = q * static_cast<double>(total);
  double below = 0;
  for (size_t i = 0; i < histogram.size(); ++i) {
    const double c = static_cast<double>(histogram[i]);
    if (c > 0 && below + c >= target) {
      const double lo = score_bin_lower(static_cast<int>(i));
      const double width = 1.0 / kScoreBinsPerUnit;
      const double x = lo + width * std::clamp((target - below) / c, 0.0, 1.0);
      return std::clamp(x, min, max);
    }
    below += c;
  }
  return max;
}

bool row_passes(const ScoreRow& r, float phi, UnifiedType type) {
  return unified_row_in_range(type, r.len, (r.m - phi) * kLog2e);
}

float fit_phi(const std::vector<ScoreRow>& rows, UnifiedType type) {
  // Events: +1 where a row's admissible interval of φ starts, -1 just after it ends. At equal
  // positions the starts go first: the intervals are closed.
  std::vector<std::pair<double, int>> ev;
  ev.reserve(2 * rows.size());
  for (const ScoreRow& r : rows) {
    if (!std::isfinite(r.m)) continue;
    const UnifiedRange range = unified_range(type, r.len);
    if (range.lo > range.hi) continue;
    ev.emplace_back(static_cast<double>(r.m) - range.hi * kLn2, +1);
    ev.emplace_back(static_cast<double>(r.m) - range.lo * kLn2, -1);
  }
  if (ev.empty()) return 0.f;
  std::sort(ev.begin(), ev.end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  });
  int count = 0, best = -1;
  double best_lo = 0, best_width = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    count += ev[i].second;
    // The stretch [ev[i], ev[i+1]] has `count` intervals over it (after all events at ev[i]).
    if (i + 1 < ev.size() && ev[i + 1].first == ev[i].first) continue;
    const double width = i + 1 < ev.size() ? ev[i + 1].first - ev[i].first : 0.0;
    if (count > best || (count == best && width > best_width)) {
      best = count;
      best_lo = ev[i].first;
      best_width = width;
    }
  }
  return static_cast<float>(best_lo + 0.5 * best_width);
}

double fallback_rate(const std::vector<ScoreRow>& rows, float phi, UnifiedType type) {
  if (rows.empty()) return 0.0;
  int64_t fails = 0;
  for (const ScoreRow& r : rows) fails += !row_passes(r, phi, type);
  return static_cast<double>(fails) / static_cast<double>(rows.size());
}

double follow_fallback_rate(const std::vector<std::vector<float>>& sequences, int n_heads,
                            UnifiedType type, int64_t* counted) {
  int64_t rows = 0, fails = 0;
  for (const std::vector<float>& seq : sequences) {
    const int len = n_heads > 0 ? static_cast<int>(seq.size() / n_heads) : 0;
    for (int t = 1; t < len; ++t)
      for (int h = 0; h < n_heads; ++h) {
        // The previous row's max, less the middle of the range (in s units), as the kernels do.
        const float phi = seq[static_cast<size_t>(t - 1) * n_heads + h] -
                          unified_range_center(type, t + 1) * kLn2;
        const ScoreRow r{seq[static_cast<size_t>(t) * n_heads + h], t + 1};
        ++rows;
        // A non-finite previous max gives way to calibrated φ in the kernels; here it fails.
        fails += !(std::isfinite(phi) && row_passes(r, phi, type));
      }
  }
  if (counted) *counted = rows;
  return rows ? static_cast<double>(fails) / static_cast<double>(rows) : 0.0;
}

}  // namespace fdpp
