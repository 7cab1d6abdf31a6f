#include "tuning/gemm_table_derive.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace fdpp {
namespace {

constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();

// Tie order: the simpler kernel first (see derive_gemm_table).
bool simpler(const ImplChoice& a, const ImplChoice& b) {
  return std::make_tuple(gemm_impl_rank(a.impl), a.config, a.splits, a.algo) <
         std::make_tuple(gemm_impl_rank(b.impl), b.config, b.splits, b.algo);
}

bool usable(const GemmTiming& t) {
  if (!std::isfinite(t.us) || t.us <= 0 || t.m < 1 || t.m > kMaxGemmTableM) return false;
  if (t.n < 1 || t.k < 1 || t.n > kMax32 || t.k > kMax32) return false;
  return t.choice.impl != GemmImpl::kFlat ||
         (t.choice.config >= 0 && t.choice.config < kFlatConfigCount);
}

// Does measurement `t` time what `want` names? A split of 0 means the planner's.
bool times(const GemmTiming& t, const ImplChoice& want) {
  if (t.choice.impl != want.impl) return false;
  if (want.impl == GemmImpl::kCublas) return t.choice.algo == want.algo;
  if (want.impl == GemmImpl::kFlat && t.choice.config != want.config) return false;
  return want.splits > 0 ? t.choice.splits == want.splits : t.planned;
}

}  // namespace

// ---- derivation -------------------------------------------------------------------------

Result<TunedGemmTable> derive_gemm_table(const std::vector<GemmTiming>& timings,
                                         const GpuIdentity& gpu, DType dtype) {
  struct Acc {
    std::vector<std::string> names;
    std::map<int, const GemmTiming*> best;     // by M
    std::map<int, const GemmTiming*> library;  // by M: cuBLASLt's first heuristic answer
  };
  std::vector<std::pair<uint64_t, Acc>> shapes;  // first-seen order
  for (const GemmTiming& t : timings) {
    if (!usable(t)) continue;
    const uint64_t key = (static_cast<uint64_t>(t.n) << 32) | static_cast<uint64_t>(t.k);
    auto it = std::find_if(shapes.begin(), shapes.end(), [&](const auto& s) { return s.first == key; });
    if (it == shapes.end()) {
      shapes.emplace_back(key, Acc{});
      it = std::prev(shapes.end());
    }
    Acc& a = it->second;
    if (!t.shape.empty() && std::find(a.names.begin(), a.names.end(), t.shape) == a.names.end())
      a.names.push_back(t.shape);
    const GemmTiming*& b = a.best[t.m];
    if (b == nullptr || t.us < b->us || (t.us == b->us && simpler(t.choice, b->choice))) b = &t;
    if (t.choice.impl == GemmImpl::kCublas && t.choice.algo == 0) a.library[t.m] = &t;
  }
  if (shapes.empty()) return InvalidArgument("GEMM table: no usable measurement to derive it from");
  std::vector<GemmTableShape> out;
  for (const auto& [key, a] : shapes) {
    GemmTableShape s;
    for (const std::string& n : a.names) s.name += (s.name.empty() ? "" : ",") + n;
    s.n = a.best.begin()->second->n;
    s.k = a.best.begin()->second->k;
    for (auto [m, t] : a.best) {
      const auto lib = a.library.find(m);
      if (t->choice.impl == GemmImpl::kCublas && t->choice.algo > 0 && lib != a.library.end() &&
          lib->second->us <= t->us * (1.0 + kCublasAlgoMargin))
        t = lib->second;
      s.entries.push_back({m, t->choice, t->us});
    }
    out.push_back(std::move(s));
  }
  return TunedGemmTable::create(gpu, dtype, std::move(out));
}

std::optional<ImplChoice> fastest_measured(const std::vector<GemmTiming>& timings, int64_t n,
                                           int64_t k, int m, GemmImpl impl) {
  const GemmTiming* best = nullptr;
  for (const GemmTiming& t : timings)
    if (usable(t) && t.n == n && t.k == k && t.m == m && t.choice.impl == impl &&
        (best == nullptr || t.us < best->us || (t.us == best->us && simpler(t.choice, best->choice))))
      best = &t;
  if (best == nullptr) return std::nullopt;
  return best->choice;
}

std::optional<double> measured_us(const std::vector<GemmTiming>& timings, int64_t n, int64_t k,
                                  int m, const ImplChoice& choice) {
  std::optional<double> us;
  for (const GemmTiming& t : timings)
    if (usable(t) && t.n == n && t.k == k && t.m == m && times(t, choice) && (!us || t.us < *us))
      us = t.us;
  return us;
}

std::optional<GemmRegretPoint> gemm_regret_point(const std::vector<GemmTiming>& timings,
                                                 int64_t n, int64_t k, int m,
                                                 const ImplChoice& choice) {
  const std::optional<double> got = measured_us(timings, n, k, m, choice);
  if (!got) return std::nullopt;
  GemmRegretPoint p{choice, choice, *got, *got};
  for (const GemmTiming& t : timings)
    if (usable(t) && t.n == n && t.k == k && t.m == m && t.us < p.best_us)
      p.best = t.choice, p.best_us = t.us;
  return p;
}

GemmRegret gemm_regret(const std::vector<GemmTiming>& timings, int64_t n, int64_t k,
                       const GemmChooser& choose) {
  std::set<int> ms;  // every M measured for the shape
  for (const GemmTiming& t : timings)
    if (usable(t) && t.n == n && t.k == k) ms.insert(t.m);
  GemmRegret r;
  double sum = 0;
  for (const int m : ms) {
    const std::optional<ImplChoice> c = choose ? choose(m) : std::nullopt;
    // The choice's fastest run (should a pass repeat it) against the fastest of all.
    const std::optional<GemmRegretPoint> p =
        c ? gemm_regret_point(timings, n, k, m, *c) : std::nullopt;
    if (!p) {
      ++r.unmeasured;
      continue;
    }
    const double regret = p->choice_us / p->best_us - 1.0;
    sum += regret;
    ++r.points;
    if (r.worst_m == 0 || regret > r.max) r.max = regret, r.worst_m = m;
  }
  if (r.points > 0) r.mean = sum / r.points;
  return r;
}

std::vector<GemmShapeReport> report_gemm_table(const TunedGemmTable& table,
                                               const std::vector<GemmTiming>& timings) {
  std::vector<GemmShapeReport> out;
  for (const GemmTableShape& s : table.shapes()) {
    GemmShapeReport r;
    r.name = s.name;
    r.n = s.n;
    r.k = s.k;
    r.thresholds = gemm_thresholds(table, s);
    r.table = gemm_regret(timings, s.n, s.k, [&](int m) {
      return table.lookup(m, s.n, s.k, table.dtype());
    });
    const GemmThresholds th = r.thresholds;
    r.two_point = gemm_regret(timings, s.n, s.k, [&](int m) -> std::optional<ImplChoice> {
      if (m <= th.m1) return fastest_measured(timings, s.n, s.k, m, GemmImpl::kGemv);
      if (m <= th.m2) return fastest_measured(timings, s.n, s.k, m, GemmImpl::kFlat);
      return ImplChoice{GemmImpl::kCublas, -1, 0};
    });
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<GemmStepTie> gemm_step_ties(const std::vector<GemmTiming>& timings, int m,
                                        double margin) {
  struct Best {
    std::string shape;
    int64_t n = 0, k = 0;
    std::vector<GemmTimedChoice> per_impl;  // the fastest of each implementation
  };
  std::vector<Best> shapes;  // first-seen order
  for (const GemmTiming& t : timings) {
    if (!usable(t) || t.m != m) continue;
    auto it = std::find_if(shapes.begin(), shapes.end(),
                           [&](const Best& b) { return b.n == t.n && b.k == t.k; });
    if (it == shapes.end()) it = shapes.insert(shapes.end(), Best{t.shape, t.n, t.k, {}});
    auto same = std::find_if(it->per_impl.begin(), it->per_impl.end(),
                             [&](const GemmTimedChoice& c) { return c.choice.impl == t.choice.impl; });
    if (same == it->per_impl.end())
      it->per_impl.push_back({t.choice, t.us});
    else if (t.us < same->us || (t.us == same->us && simpler(t.choice, same->choice)))
      *same = {t.choice, t.us};
  }
  std::vector<GemmStepTie> out;
  for (Best& b : shapes) {
    std::sort(b.per_impl.begin(), b.per_impl.end(),
              [](const GemmTimedChoice& x, const GemmTimedChoice& y) {
                return x.us < y.us || (x.us == y.us && simpler(x.choice, y.choice));
              });
    GemmStepTie tie{b.shape, b.n, b.k, m, {}};
    for (const GemmTimedChoice& c : b.per_impl)
      if (c.us <= b.per_impl.front().us * (1.0 + margin)) tie.options.push_back(c);
    if (tie.options.size() >= 2) out.push_back(std::move(tie));
  }
  return out;
}

Result<TunedGemmTable> with_gemm_choice(const TunedGemmTable& table, int64_t n, int64_t k, int m,
                                        const ImplChoice& choice, double us) {
  std::vector<GemmTableShape> shapes = table.shapes();
  auto s = std::find_if(shapes.begin(), shapes.end(),
                        [&](const GemmTableShape& x) { return x.n == n && x.k == k; });
  if (s == shapes.end())
    return InvalidArgument(fmt::format("GEMM table: no shape [{}, {}] to change", n, k));
  auto at = std::find_if(s->entries.begin(), s->entries.end(),
                         [&](const GemmTableEntry& e) { return e.m >= m; });
  if (at != s->entries.end() && at->m == m) {
    at->choice = choice;
    at->us = us;
  } else if (m == 1 || (at != s->entries.begin() && std::prev(at)->m == m - 1)) {
    s->entries.insert(at, GemmTableEntry{m, choice, us});
  } else {
    return InvalidArgument(fmt::format(
        "GEMM table: [{}, {}] has no entry at M {} or {}: setting M {} alone would change others",
        n, k, m, m - 1, m));
  }
  FDPP_ASSIGN_OR_RETURN(TunedGemmTable out, TunedGemmTable::create(table.gpu(), table.dtype(),
                                                                   std::move(shapes)));
  out.created = table.created;
  out.models = table.models;
  return out;
}

TunedGemmTable merge_gemm_tables(const TunedGemmTable& old, const TunedGemmTable& fresh) {
  std::vector<GemmTableShape> shapes;
  for (const GemmTableShape& s : old.shapes())
    shapes.push_back(fresh.find(s.n, s.k) ? *fresh.find(s.n, s.k) : s);
  for (const GemmTableShape& s : fresh.shapes())
    if (old.find(s.n, s.k) == nullptr) shapes.push_back(s);
  auto merged = TunedGemmTable::create(fresh.gpu(), fresh.dtype(), std::move(shapes));
  if (!merged.ok()) return fresh;  // both were valid and keys are distinct: cannot happen
  TunedGemmTable t = std::move(merged).value();
  t.created = fresh.created;
  t.models = old.models;
  for (const std::string& m : fresh.models)
    if (std::find(t.models.begin(), t.models.end(), m) == t.models.end()) t.models.push_back(m);
  return t;
}

}  // namespace fdpp
