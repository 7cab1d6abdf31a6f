// JSON <-> values: the conversation arrives as JSON, and `tojson` writes JSON the way
// transformers' override of it does: json.dumps(x, ensure_ascii=False, indent=...,
// separators=..., sort_keys=...), so non-ASCII text stays as written and '<', '>', '&'
// are not HTML-escaped as Jinja2's own tojson would.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja/value.h"

namespace fdpp::jinja {

Value from_json(const nlohmann::ordered_json& j);  // ordered: Python dicts keep the file's key order

struct JsonFormat {
  std::optional<std::string> indent;  // none: one line; else each level indented by this
  std::string item_sep;               // default ", " (one line) or "," (indented)
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Throws jinja::Error for a value JSON cannot hold (undefined, a macro).
std::string to_json(const Value& v, const JsonFormat& f);

}  // namespace fdpp::jinja
