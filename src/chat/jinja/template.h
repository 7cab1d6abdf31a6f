// The interpreter's entry point: parse once, render many times.
//
//   auto t = jinja::Template::parse(source);           // Result: errors name line:column
//   auto text = t->render(variables, jinja::Limits{});  // variables: a Dict of the globals
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/interpreter.h"
#include "fdpp/status.h"

namespace fdpp::jinja {

class Template {
 public:
  static Result<Template> parse(std::string_view source);
  // `variables` are added over the global functions (range, namespace, dict,
  // raise_exception, strftime_now). Any error, raise_exception's included, is an
  // InvalidArgument "line L, column C: message".
  Result<std::string> render(const Dict& variables, const Limits& limits = {}) const;

 private:
  std::shared_ptr<const std::vector<NodePtr>> body_;
};

}  // namespace fdpp::jinja
