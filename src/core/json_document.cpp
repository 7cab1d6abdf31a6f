#include "core/json_document.h"

#include <fmt/format.h>

namespace fdpp {

Status JsonDocument::bad(const std::string& what) const {
  return InvalidArgument(fmt::format("{} {}: {}", kind, where, what));
}

Status JsonDocument::read_int(const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi,
                              int64_t* out) const {
  if (!obj.contains(key) || !obj[key].is_number_integer())
    return bad(fmt::format("\"{}\" must be an integer", key));
  const int64_t v = obj[key].get<int64_t>();
  if (v < lo || v > hi) return bad(fmt::format("\"{}\" = {} outside [{}, {}]", key, v, lo, hi));
  *out = v;
  return Status::Ok();
}

Result<nlohmann::json> parse_json_document(const JsonDocument& doc, const std::string& text,
                                           const char* format, int64_t version,
                                           const std::string& version_hint) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return doc.bad(fmt::format("not JSON ({})", e.what()));
  }
  if (!j.is_object()) return doc.bad("not a JSON object");
  if (!j.contains("format") || j["format"] != format)
    return doc.bad(fmt::format("\"format\" is not \"{}\"", format));
  int64_t v = 0;
  FDPP_RETURN_IF_ERROR(doc.read_int(j, "version", 1, 1 << 20, &v));
  if (v != version)
    return doc.bad(fmt::format("version {} (this fdpp reads version {}{})", v, version,
                               version_hint.empty() ? "" : ": " + version_hint));
  return j;
}

}  // namespace fdpp
