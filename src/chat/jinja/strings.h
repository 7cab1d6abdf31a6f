// Python's str methods on UTF-8 text, shared by the filters and the string methods.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fdpp::jinja {

// str.strip/lstrip/rstrip: whitespace (str.isspace) or, with `chars`, those code points.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);     // str.title(): a letter after a non-letter is upper
std::string jinja_title(const std::string& s);  // the title filter: words split at [-\s({[<]+
std::string py_replace(const std::string& s, const std::string& old, const std::string& with, int64_t count);
// str.split / str.rsplit: sep null splits at runs of whitespace and drops empty parts.
std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right);
std::vector<std::string> split_lines_keep(const std::string& s);  // lines with their '\n'
std::optional<int64_t> parse_py_int(const std::string& s);
std::optional<double> parse_py_float(const std::string& s);

}  // namespace fdpp::jinja
