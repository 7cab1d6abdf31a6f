#include "chat/jinja/json_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja/error.h"

namespace fdpp::jinja {

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      return u <= static_cast<uint64_t>(INT64_MAX) ? Value::integer(static_cast<int64_t>(u)) : Value::number(double(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::make_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.items.emplace_back(Value::string(it.key()), from_json(it.value()));
      return Value::make_dict(std::move(d));
    }
    default: return Value::none();
  }
}

namespace {

void write_string(std::string& out, const std::string& s, bool ascii) {
  out += '"';
  for (char32_t c : decode_utf8(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: {
        char buf[16];
        if (c < 0x20 || (ascii && c >= 0x7f)) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (unsigned)(v >> 10), 0xDC00 + (unsigned)(v & 0x3ff));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          }
          out += buf;
        } else {
          append_utf8(out, c);
        }
      }
    }
  }
  out += '"';
}

void write(std::string& out, const Value& v, const JsonFormat& f, int level) {
  auto newline = [&](int lvl) {
    if (!f.indent) return;
    out += '\n';
    for (int k = 0; k < lvl; ++k) out += *f.indent;
  };
  const std::string& sep = f.item_sep;
  switch (v.kind) {
    case Kind::kNone: out += "null"; return;
    case Kind::kBool: out += v.b ? "true" : "false"; return;
    case Kind::kInt: out += std::to_string(v.i); return;
    case Kind::kFloat:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
      else out += format_float(v.f);
      return;
    case Kind::kString: write_string(out, v.str(), f.ensure_ascii); return;
    case Kind::kList: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += sep;
        newline(level + 1);
        write(out, (*v.list)[k], f, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Kind::kDict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (f.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return less(a->first, b->first); });
      }
      out += '{';
      bool first = true;
      for (const auto* kv : items) {
        if (!first) out += sep;
        first = false;
        newline(level + 1);
        const Value& k = kv->first;
        if (k.is_string()) write_string(out, k.str(), f.ensure_ascii);
        else if (k.is_none()) out += "\"null\"";
        else if (k.kind == Kind::kBool) out += k.b ? "\"true\"" : "\"false\"";
        else if (k.kind == Kind::kInt || k.kind == Kind::kFloat) out += "\"" + to_str(k) + "\"";
        else throw Error(std::string("keys must be str, int, float, bool or None, not ") + type_name(k));
        out += f.key_sep;
        write(out, kv->second, f, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: throw Error(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonFormat& f) {
  std::string out;
  write(out, v, f, 0);
  return out;
}

}  // namespace fdpp::jinja
