#include "chat/jinja/strings.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "chat/jinja/value.h"

namespace fdpp::jinja {

std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  auto cps = decode_utf8(s);
  std::vector<char32_t> set;
  if (chars) set = decode_utf8(*chars);
  auto strip = [&](char32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_py_space(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip(cps[b])) ++b;
  if (right)
    while (e > b && strip(cps[e - 1])) --e;
  return encode_utf8(cps, b, e);
}

std::string py_upper(const std::string& s) {
  std::string out;
  for (char32_t c : decode_utf8(s)) {
    if (c == 0xdf) {  // ß has no one-letter capital: Python's str.upper() writes "SS"
      out += "SS";
      continue;
    }
    append_utf8(out, to_upper(c));
  }
  return out;
}
std::string py_lower(const std::string& s) {
  std::string out;
  for (char32_t c : decode_utf8(s)) append_utf8(out, to_lower(c));
  return out;
}
std::string py_capitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (char32_t c : decode_utf8(s)) {
    append_utf8(out, first ? to_upper(c) : to_lower(c));
    first = false;
  }
  return out;
}
std::string py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : decode_utf8(s)) {
    bool cased = to_upper(c) != c || to_lower(c) != c;
    append_utf8(out, cased ? (prev_cased ? to_lower(c) : to_upper(c)) : c);
    prev_cased = cased;
  }
  return out;
}
std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (char32_t c : decode_utf8(s)) {
    bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      append_utf8(out, c);
      word_start = true;
    } else {
      append_utf8(out, word_start ? to_upper(c) : to_lower(c));
      word_start = false;
    }
  }
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& with, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `with` between code points and at both ends.
    auto cps = decode_utf8(s);
    int64_t done = 0;
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      if (k < cps.size()) append_utf8(out, cps[k]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    out += with;
    pos = at + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        size_t at = s.find(*sep, pos);
        if (at == std::string::npos) break;
        parts.push_back(s.substr(pos, at - pos));
        pos = at + sep->size();
      }
      parts.push_back(s.substr(pos));
      return parts;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string::npos) break;
      parts.push_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  auto cps = decode_utf8(s);
  if (!from_right) {
    size_t k = 0;
    while (true) {
      while (k < cps.size() && is_py_space(cps[k])) ++k;
      if (k == cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t e = cps.size();
        while (e > k && is_py_space(cps[e - 1])) --e;
        parts.push_back(encode_utf8(cps, k, e));
        break;
      }
      size_t b = k;
      while (k < cps.size() && !is_py_space(cps[k])) ++k;
      parts.push_back(encode_utf8(cps, b, k));
    }
    return parts;
  }
  size_t k = cps.size();
  while (true) {
    while (k > 0 && is_py_space(cps[k - 1])) --k;
    if (k == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      size_t b = 0;
      while (b < k && is_py_space(cps[b])) ++b;
      parts.push_back(encode_utf8(cps, b, k));
      break;
    }
    size_t e = k;
    while (k > 0 && !is_py_space(cps[k - 1])) --k;
    parts.push_back(encode_utf8(cps, k, e));
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> split_lines_keep(const std::string& s) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(s.substr(pos));
      break;
    }
    lines.push_back(s.substr(pos, nl + 1 - pos));
    pos = nl + 1;
  }
  if (lines.empty()) lines.emplace_back();
  return lines;
}

std::optional<int64_t> parse_py_int(const std::string& s) {
  std::string t;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '_' && k > 0 && k + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[k - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[k + 1])))
      continue;
    t += s[k];
  }
  if (t.empty()) return std::nullopt;
  size_t start = (t[0] == '-' || t[0] == '+') ? 1 : 0;
  if (start == t.size()) return std::nullopt;
  for (size_t k = start; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k]))) return std::nullopt;
  errno = 0;
  long long v = std::strtoll(t.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return v;
}

std::optional<double> parse_py_float(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::string lower = py_lower(s);
  for (const char* special : {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}) {
    if (lower == special) return std::strtod(lower.c_str(), nullptr);
  }
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

}  // namespace fdpp::jinja
