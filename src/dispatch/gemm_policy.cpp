#include "dispatch/gemm_policy.h"

namespace fdpp {

const char* gemm_policy_name(GemmPolicy p) {
  switch (p) {
    case GemmPolicy::kAuto: return "auto";
    case GemmPolicy::kGemv: return "gemv";
    case GemmPolicy::kFlat: return "flat";
    case GemmPolicy::kCublas: return "cublas";
  }
  return "?";
}

bool parse_gemm_policy(std::string_view s, GemmPolicy* out) {
  GemmPolicy p;
  if (s == "auto") {
    p = GemmPolicy::kAuto;
  } else if (s == "gemv") {
    p = GemmPolicy::kGemv;
  } else if (s == "flat") {
    p = GemmPolicy::kFlat;
  } else if (s == "cublas" || s == "cublaslt") {
    p = GemmPolicy::kCublas;
  } else {
    return false;
  }
  *out = p;
  return true;
}

}  // namespace fdpp
