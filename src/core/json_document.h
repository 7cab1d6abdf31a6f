// The JSON files fdpp writes for itself (GEMM dispatch tables, φ calibrations) share one
// envelope, {"format": F, "version": V, ...}, and one style of error: "<kind> <where>: <what>",
// e.g. `GEMM table /root/.cache/fdpp/gemm/x.json: "version" = 0 outside [1, 1048576]`.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fdpp/status.h"

namespace fdpp {

struct JsonDocument {
  const char* kind;   // "GEMM table", "calibration"
  std::string where;  // the file (or a part of it) being read

  // InvalidArgument "<kind> <where>: <what>".
  Status bad(const std::string& what) const;
  // The same document, a part of it: where + suffix.
  JsonDocument at(const std::string& suffix) const { return {kind, where + suffix}; }
  // A required integer field of `obj` within [lo, hi].
  Status read_int(const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi,
                  int64_t* out) const;
};

// Parses `text` as a JSON object whose "format" is `format` and "version" is `version`;
// `version_hint` ends the wrong-version message (what the user should do), or is empty.
Result<nlohmann::json> parse_json_document(const JsonDocument& doc, const std::string& text,
                                           const char* format, int64_t version,
                                           const std::string& version_hint = "");

}  // namespace fdpp
