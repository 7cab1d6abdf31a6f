// Walks the syntax tree and writes the output. Bounded: every node evaluated costs a
// step, builtins that make big things (range, string repetition, joins) pay for their size
// up front, output and strings have a size cap, and macro calls a depth cap, so a hostile
// template stops with an error instead of hanging, exhausting memory or the stack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/error.h"
#include "chat/jinja/value.h"

namespace fdpp::jinja {

struct Limits {
  int64_t max_steps = 5'000'000;       // nodes evaluated plus builtins' element counts
  int max_call_depth = 100;            // nested macro / caller() calls
  size_t max_output = 16u << 20;       // bytes of output, and of any one string or list
};

class Interpreter {
 public:
  Interpreter(const Limits& limits, Dict globals);

  // Renders top-level statements; throws jinja::Error.
  std::string render(const std::vector<NodePtr>& body);

  // ---- for the builtins -----------------------------------------------------------
  void charge(int64_t steps);                 // throws past max_steps
  void check_size(size_t bytes_or_items) const;  // throws past max_output
  Value call(const Value& callee, CallArgs& args);
  [[noreturn]] void fail(const std::string& message) const;
  // Throws the UndefinedError an undefined value carries ("'x' is undefined").
  [[noreturn]] void fail_undefined(const Value& v) const;
  // Python's iter(): list items, dict keys, string characters; undefined is empty.
  List iterate(const Value& v);
  // Jinja2's environment.getattr (obj.name) and getitem (obj[key]).
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using Frame = std::vector<std::pair<std::string, Value>>;

  Flow exec_body(const std::vector<NodePtr>& body, std::string& out);
  Flow exec(const Node& n, std::string& out);
  Flow exec_for(const Node& n, std::string& out);
  void exec_set(const Node& n);
  Value eval(const Node& n);
  Value eval_binary(const Node& n);
  Value eval_compare(const Node& n);
  Value eval_call(const Node& n);
  Value eval_filter(const Node& n, const Value* input);
  Value eval_slice(const Node& n);
  void eval_args(const Node& n, size_t first, CallArgs& args);
  Value make_macro(const Node& n);
  Value call_macro(const Node& n, const std::vector<Frame>& closure, CallArgs& args);
  Value make_caller(const Node& call_block);

  const Value* lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  void append(std::string& out, std::string_view s) const;

  Limits limits_;
  std::vector<Frame> frames_;  // [0]: globals, [1]: the template's top level, then loops/macros
  int64_t steps_ = 0;
  int call_depth_ = 0;
  const Node* current_ = nullptr;  // the node being evaluated: errors report its position
};

// Builtins (filters.cpp, predicates.cpp, methods.cpp). Each throws jinja::Error (via
// Interpreter::fail) on a wrong argument, as Jinja2 raises.
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
bool has_filter(const std::string& name);
bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
bool has_test(const std::string& name);
// A bound method (`s.strip`, `d.items`), or an undefined value when the type has none.
Value get_method(Interpreter& in, const Value& obj, const std::string& name);
// range, namespace, dict, raise_exception, strftime_now (the caller adds the variables).
void add_global_functions(Dict& globals);

}  // namespace fdpp::jinja
