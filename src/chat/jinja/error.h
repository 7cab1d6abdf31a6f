// How the interpreter's parts report a template error: an exception that the entry points
// (parse_template, render) turn into a Status carrying the template's line and column.
// Exceptions, not Result<T>, because an error unwinds arbitrarily deep expression and
// statement recursion in one step.
#pragma once

#include <string>
#include <utility>

namespace fdpp::jinja {

struct Error {
  std::string message;
  int line = 0;  // 0: the position of the node being evaluated when it was thrown
  int column = 0;
  explicit Error(std::string m, int l = 0, int c = 0) : message(std::move(m)), line(l), column(c) {}
};

}  // namespace fdpp::jinja
