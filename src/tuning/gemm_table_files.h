// Where tuned GEMM tables live and how one becomes the built-in table: the cache path
// of a GPU's table (`fdpp tune` writes it, the engine reads it: tuning/gemm_table_setup.h)
// and the C++ source of dispatch/gemm_table_h200.cpp (`fdpp tune --emit-cpp`).
#pragma once

#include <filesystem>
#include <string>

#include "core/dtype.h"
#include "dispatch/gemm_table.h"
#include "fdpp/status.h"

namespace fdpp {

// $FDPP_CACHE_DIR, else $XDG_CACHE_HOME/fdpp, else $HOME/.cache/fdpp (else the
// temporary directory's fdpp/).
std::filesystem::path fdpp_cache_dir();
// "nvidia-h200_sm90_132sm_cuda13.0_f16.json"
std::string gemm_table_file_name(const GpuIdentity& gpu, DType dtype);
// <cache_dir>/gemm/<gemm_table_file_name>; cache_dir empty: fdpp_cache_dir().
std::filesystem::path gemm_table_path(const GpuIdentity& gpu, DType dtype,
                                      const std::filesystem::path& cache_dir = {});

// The C++ source of dispatch/gemm_table_h200.cpp holding `table` (runs of equal
// choices collapsed into one row); `command` is quoted in its header comment.
// InvalidArgument for a table without shapes (C++ has no empty arrays).
Result<std::string> emit_builtin_gemm_table_cpp(const TunedGemmTable& table,
                                                const std::string& command);

}  // namespace fdpp
