#include "chat/jinja/template.h"

#include <new>

#include "chat/jinja/lexer.h"
#include "chat/jinja/parser.h"

namespace fdpp::jinja {
namespace {

Status to_status(const char* stage, const Error& e) {
  std::string where = e.line > 0 ? "line " + std::to_string(e.line) + ", column " + std::to_string(e.column) + ": " : "";
  return InvalidArgument(std::string("chat template ") + stage + " error: " + where + e.message);
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    Template t;
    t.body_ = std::make_shared<const std::vector<NodePtr>>(jinja::parse(lex(source)));
    return t;
  } catch (const Error& e) {
    return to_status("syntax", e);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("chat template syntax error: out of memory");
  }
}

Result<std::string> Template::render(const Dict& variables, const Limits& limits) const {
  Dict globals;
  add_global_functions(globals);
  for (const auto& [k, v] : variables.items) globals.set(k, v);
  try {
    Interpreter in(limits, std::move(globals));
    return in.render(*body_);
  } catch (const Error& e) {
    return to_status("render", e);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("chat template render error: out of memory");
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("chat template render error: ") + e.what());
  }
}

}  // namespace fdpp::jinja
