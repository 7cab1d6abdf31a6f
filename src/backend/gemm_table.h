// The tuned GEMM dispatch table (design.md, Technique 3): per GPU and dtype, for
// each [N, K] shape a model multiplies by, which implementation (ImplA GEMV, an
// ImplB flat GEMM configuration with its split-K, or ImplC cuBLASLt) was fastest
// at each M. `fdpp tune` measures it (backend/cuda/bench/gemm_tune.h), this file
// turns measurements into a table, reports its inflection points and regret,
// and reads and writes it. CUDA-free, so CI tests all of it without a GPU.
//
// JSON (one file per GPU and dtype, holding every shape ever tuned on it):
//   {"format": "fdpp-gemm-table", "version": 1,
//    "gpu": {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0",
//            "cuda_runtime": 13000},
//    "dtype": "f16", "created": "2026-12-01 10:00 UTC", "models": ["…/Llama-2-7b"],
//    "shapes": [{"name": "qkv", "n": 12288, "k": 4096, "m1": 4, "m2": 64,
//                "entries": [{"m": 1, "impl": "gemv", "splits": 2, "us": 26.1},
//                            {"m": 5, "impl": "flat", "config": "n64k128s4m8", "splits": 3, …},
//                            {"m": 80, "impl": "cublas", "us": 61.0},
//                            {"m": 96, "impl": "default"}, …]}]}
// An entry covers the M values above the previous entry's up to its own "m". "default"
// defers to the built-in rule (backend/gemm_plan.h). "m1", "m2", "us", "created" and
// "models" document the run and are not trusted on load (m1/m2 are re-derived).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/gemm_plan.h"
#include "core/dtype.h"
#include "fdpp/status.h"

namespace fdpp {

inline constexpr const char* kGemmTableFormat = "fdpp-gemm-table";
inline constexpr int kGemmTableVersion = 1;

// What a table is keyed by: the same kernels run at different speeds on another
// GPU model, SM count (a MIG slice, a cut-down part) or cuBLASLt release.
struct GpuIdentity {
  std::string name;  // "NVIDIA H200"
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int cuda_runtime = 0;  // 13000 for CUDA 13.0
  bool operator==(const GpuIdentity&) const = default;
  // "NVIDIA H200 (sm_90, 132 SMs, CUDA 13.0)"
  std::string summary() const;
};

// One timed run of one implementation (backend/cuda/bench/gemm_bench.h's GemmMeasurement,
// without CUDA): y[m, n] = x[m, k] · W[n, k]ᵀ.
struct GemmTiming {
  std::string shape;  // "qkv"; names the table's shape (the first one seen wins)
  int64_t n = 0, k = 0;
  int m = 0;
  ImplChoice choice;     // as run: split-K resolved
  bool planned = true;   // the split the planner picks for this implementation
  double us = 0;         // per call; <= 0 or non-finite: not a measurement, ignored
  int timed_m = 0;       // the M the kernel ran at (a flat GEMM's timing serves its n8 tile)
};

// One step of a shape's table: `choice` for every M in (previous entry's m, m].
// nullopt: the built-in rule decides ("default" in the JSON).
struct GemmTableEntry {
  int m = 0;
  std::optional<ImplChoice> choice;
  double us = 0;  // the measured time of `choice` at m (0: not measured)
};

struct GemmTableShape {
  std::string name;  // "qkv", or "o,down" when two layers share [N, K]
  int64_t n = 0, k = 0;
  std::vector<GemmTableEntry> entries;  // m strictly ascending, >= 1
};

class TunedGemmTable final : public GemmTable {
 public:
  TunedGemmTable() = default;
  // Validates the shapes (positive [N, K] that fit 32 bits, no shape twice, entries
  // ascending from M >= 1, flat configurations that exist) and builds the index.
  static Result<TunedGemmTable> create(GpuIdentity gpu, DType dtype,
                                       std::vector<GemmTableShape> shapes);

  // O(1): a hash of [N, K], then an array indexed by M. nullopt (the built-in rule)
  // for another dtype, a shape the table lacks, M < 1, a "default" entry, and M above
  // the largest tuned M unless the last entry is cuBLASLt: cuBLASLt winning at the
  // largest M says the GEMM is compute-bound there, which only grows with M, whereas
  // a GEMV or flat entry names a kernel that may not even hold a larger M.
  // An untuned M between two tuned ones takes the entry of the next tuned M above:
  // whatever ran that larger M also runs this one (a flat tile holding M_hi holds
  // M < M_hi, a GEMV compiled up to M_hi covers M), and each kernel's time only grows
  // with M, so the choice costs at most its measured time at M_hi. The entry below
  // may name a kernel that cannot run M at all (the m64 tile past M = 64).
  std::optional<ImplChoice> lookup(int64_t m, int64_t n, int64_t k, DType dtype) const override;

  const GpuIdentity& gpu() const { return gpu_; }
  DType dtype() const { return dtype_; }
  const std::vector<GemmTableShape>& shapes() const { return shapes_; }
  const GemmTableShape* find(int64_t n, int64_t k) const;

  // Documentation of the run, kept through a save/load round trip.
  std::string created;              // "2026-12-01 10:00 UTC"
  std::vector<std::string> models;  // model folders whose shapes were tuned

 private:
  static uint64_t key(int64_t n, int64_t k) {
    return (static_cast<uint64_t>(n) << 32) | static_cast<uint64_t>(k);
  }
  GpuIdentity gpu_;
  DType dtype_ = DType::kF16;
  std::vector<GemmTableShape> shapes_;
  std::unordered_map<uint64_t, size_t> index_;  // key(n, k) → shapes_ / by_m_ index
  // Per shape: index M - 1 → the resolved choice, for M = 1..the last entry's m.
  std::vector<std::vector<std::optional<ImplChoice>>> by_m_;
  std::vector<std::optional<ImplChoice>> beyond_;  // per shape: for M past the last entry
};

// ---- derivation from measurements -------------------------------------------------

// The choice of every M in 1..last tuned M, as lookup() resolves it.
// Where the table is non-monotone (GEMV winning again after a flat win), M1 and M2
// summarize the last win of each side; the per-M choice is what runs.
struct GemmThresholds {
  int m1 = 0;  // the last M where ImplA serves (0: never); M1 + 1 is the first flat/cuBLASLt M
  int m2 = 0;  // the last M where ImplA or ImplB serves (0: never): cuBLASLt above
  bool monotone = true;  // gemv, then flat, then cuBLASLt, with no switch back
};
// "default" entries count as the built-in rule would serve them (GEMV up to
// kDefaultGemvMaxM, flat up to kDefaultFlatMaxM).
GemmThresholds gemm_thresholds(const TunedGemmTable& table, const GemmTableShape& shape);

// A cuBLASLt answer other than the heuristic's first must beat the first by more than
// this to be chosen: the first few answers are often within a percent of each other, and
// picking among them by one noisy pass made the table flicker from one M to the next
// (fdpp tune --cublas-algos 4 on the H200, 2026-11-30: gate_up alternated between two
// answers every few M).
inline constexpr double kCublasAlgoMargin = 0.02;

// The fastest measured choice per (shape, M): one shape per distinct [N, K], one
// entry per measured M. Ties go to the simpler kernel, in the order GEMV, flat by
// configuration index, cuBLASLt, then fewer splits, so the same measurements always
// give the same table; a cuBLASLt answer past the first needs kCublasAlgoMargin.
// InvalidArgument when no timing is usable.
Result<TunedGemmTable> derive_gemm_table(const std::vector<GemmTiming>& timings,
                                         const GpuIdentity& gpu, DType dtype);

// How much slower a rule is than the best measured choice: at each measured M of
// [n, k], us(chosen) / us(best) - 1. An M where the rule names nothing or something
// not measured there is counted in `unmeasured`, not in the regret.
struct GemmRegret {
  double max = 0;
  int worst_m = 0;  // 0 when no M was compared
  double mean = 0;
  int points = 0;
  int unmeasured = 0;
};
using GemmChooser = std::function<std::optional<ImplChoice>(int m)>;
GemmRegret gemm_regret(const std::vector<GemmTiming>& timings, int64_t n, int64_t k,
                       const GemmChooser& choose);

// The fastest measured variant of `impl` at (n, k, m) (any configuration and split).
std::optional<ImplChoice> fastest_measured(const std::vector<GemmTiming>& timings, int64_t n,
                                           int64_t k, int m, GemmImpl impl);

// The two sides of one regret point at (n, k, m): the fastest measurement of exactly
// `choice` (a split of 0: the planner's) and the fastest measurement of anything. nullopt
// when `choice` was not measured there. With measured_us, a verification pass's worst
// point can be read against the pass the table was derived from: did the choice slow
// down, or did its rival speed up?
struct GemmRegretPoint {
  ImplChoice choice;
  ImplChoice best;  // as measured: its split resolved
  double choice_us = 0, best_us = 0;
};
std::optional<GemmRegretPoint> gemm_regret_point(const std::vector<GemmTiming>& timings,
                                                 int64_t n, int64_t k, int m,
                                                 const ImplChoice& choice);
// The fastest measurement of exactly `choice` at (n, k, m); nullopt when none.
std::optional<double> measured_us(const std::vector<GemmTiming>& timings, int64_t n, int64_t k,
                                  int m, const ImplChoice& choice);

// What `fdpp tune` prints per shape. `timings` should come from a pass other than the
// one the table was derived from: on its own measurements a table's regret is 0 by
// construction, and only a second pass shows what timing noise made it pick.
struct GemmShapeReport {
  std::string name;
  int64_t n = 0, k = 0;
  GemmThresholds thresholds;
  GemmRegret table;      // the table's lookups
  GemmRegret two_point;  // just M1 / M2: the fastest GEMV up to M1, the fastest flat up to M2
};
std::vector<GemmShapeReport> report_gemm_table(const TunedGemmTable& table,
                                               const std::vector<GemmTiming>& timings);

// ---- near ties that only the decode step settles ----------------------------------------

// Timed alone, two implementations of a shape can come within a few percent of each other at
// M = 1 and still differ by much more inside the decode step: there the GEMV runs the RMSNorm
// or SiLU gate fused and overlaps its neighbours under PDL, while cuBLASLt pays the prologue's
// own kernel and a full boundary on each side. Measured on the H200 (2026-11-30, Llama-2-7B
// down at M 1): cuBLASLt after the gate kernel 29.2 µs alone, the fused GEMV within a few
// percent of it on either side from one pass to the next, and 4.3 µs per layer apart in the
// step (3.5-4% of the batch-1 step). `--autotune` settles such ties by timing decode steps
// with each choice (runtime/gemm_table_setup.h). The margin covers the alone-timing's gap.
inline constexpr double kStepTieMargin = 0.10;

struct GemmTimedChoice {
  ImplChoice choice;
  double us = 0;  // its time alone (µs per call)
};

struct GemmStepTie {
  std::string shape;
  int64_t n = 0, k = 0;
  int m = 0;
  std::vector<GemmTimedChoice> options;  // the fastest alone first, each within the margin of it
};

// Per [N, K] measured at M = m: the fastest measured variant of each implementation (GEMV,
// flat GEMM, cuBLASLt) whose time is within `margin` of the fastest of all; a shape where
// only one implementation is that close is no tie and is left out.
std::vector<GemmStepTie> gemm_step_ties(const std::vector<GemmTiming>& timings, int m,
                                        double margin = kStepTieMargin);

// `table` with exactly M = m of [n, k] served by `choice` (measured at `us` alone; 0: not
// measured): the entry at m is replaced, or one is inserted when m is 1 or the table has an
// entry at m - 1 (so no other M changes hands). InvalidArgument otherwise, and for a shape
// the table lacks.
Result<TunedGemmTable> with_gemm_choice(const TunedGemmTable& table, int64_t n, int64_t k, int m,
                                        const ImplChoice& choice, double us);

// ---- files --------------------------------------------------------------------------

std::string serialize_gemm_table(const TunedGemmTable& table);
// Errors (InvalidArgument) name `where` and the field at fault.
Result<TunedGemmTable> parse_gemm_table(const std::string& text, const std::string& where);
// NotFound when the file does not exist; otherwise IoError or parse_gemm_table's errors.
Result<TunedGemmTable> load_gemm_table(const std::filesystem::path& path);
// Writes through a temporary file and a rename, so an engine starting meanwhile reads
// the old table or the new one, never half of one. Creates the directory.
Status save_gemm_table(const TunedGemmTable& table, const std::filesystem::path& path);

// InvalidArgument naming both GPUs (or dtypes) when `table` was not measured on `gpu`
// for `dtype`: the caller then uses the built-in defaults, with one warning.
Status check_gemm_table_matches(const TunedGemmTable& table, const GpuIdentity& gpu,
                                DType dtype);

// `fresh`'s shapes replace `old`'s of the same [N, K]; the others of `old` stay (one
// file per GPU accumulates every model tuned on it). Identity and dtype: `fresh`'s.
TunedGemmTable merge_gemm_tables(const TunedGemmTable& old, const TunedGemmTable& fresh);

// $FDPP_CACHE_DIR, else $XDG_CACHE_HOME/fdpp, else $HOME/.cache/fdpp (else the
// temporary directory's fdpp/).
std::filesystem::path fdpp_cache_dir();
// "nvidia-h200_sm90_132sm_cuda13.0_f16.json"
std::string gemm_table_file_name(const GpuIdentity& gpu, DType dtype);
// <cache_dir>/gemm/<gemm_table_file_name>; cache_dir empty: fdpp_cache_dir().
std::filesystem::path gemm_table_path(const GpuIdentity& gpu, DType dtype,
                                      const std::filesystem::path& cache_dir = {});

// ---- built-in defaults (backend/gemm_table_h200.cpp, written by `fdpp tune --emit-cpp`) ----

// One row per run of equal choices: the choice for M in (previous row's m, m] of its shape.
struct BuiltinGemmRow {
  const char* shape;
  int64_t n, k;
  int m;
  const char* impl;    // "gemv", "flat", "cublas" or "default"
  const char* config;  // flat: the configuration's name; otherwise ""
  int splits;          // 0: the planner's split-K
  int algo;            // cublas: cuBLASLt's heuristic answer (0: its first)
  double us;           // measured time at m (0: not measured)
};
struct BuiltinGemmTable {
  const char* gpu_name;
  int sm_count, cc_major, cc_minor, cuda_runtime;
  const char* dtype;
  const char* created;
  const BuiltinGemmRow* rows;
  int row_count;
};
const BuiltinGemmTable& builtin_gemm_table_data();

// The built-in table for `dtype`: measured in one dtype, stamped with the one asked
// for, since the f16 and bf16 kernels stream the same bytes. Its identity is the GPU
// it was measured on; use it on any GPU (it is the fallback), not only that one.
Result<TunedGemmTable> builtin_gemm_table(DType dtype);
// The C++ source of backend/gemm_table_h200.cpp holding `table` (runs of equal
// choices collapsed into one row); `command` is quoted in its header comment.
// InvalidArgument for a table without shapes (C++ has no empty arrays).
Result<std::string> emit_builtin_gemm_table_cpp(const TunedGemmTable& table,
                                                const std::string& command);

}  // namespace fdpp
