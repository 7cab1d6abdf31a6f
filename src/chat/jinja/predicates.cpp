// Jinja2's tests (`x is defined`, jinja2/tests.py).
#include <cmath>
#include <map>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/strings.h"

namespace fdpp::jinja {
namespace {

using Test = bool (*)(Interpreter&, const Value&, CallArgs&);

const Value& need(Interpreter& in, CallArgs& a, const char* test) {
  if (a.pos.empty()) in.fail(std::string("the test '") + test + "' needs an argument");
  return a.pos[0];
}
int64_t int_of(Interpreter& in, const Value& v, const char* test) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  if (v.kind == Kind::kFloat && std::floor(v.f) == v.f && std::fabs(v.f) < 9e18) return static_cast<int64_t>(v.f);
  if (v.is_undefined()) in.fail_undefined(v);
  in.fail(std::string("the test '") + test + "' needs a number");
}
bool t_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool t_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool t_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool t_integer(Interpreter&, const Value& v, CallArgs&) { return v.kind == Kind::kInt; }
bool t_float(Interpreter&, const Value& v, CallArgs&) { return v.kind == Kind::kFloat; }
bool t_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool t_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs&) { return v.kind == Kind::kBool; }
bool t_true(Interpreter&, const Value& v, CallArgs&) { return v.kind == Kind::kBool && v.b; }
bool t_false(Interpreter&, const Value& v, CallArgs&) { return v.kind == Kind::kBool && !v.b; }
bool t_callable(Interpreter&, const Value& v, CallArgs&) { return v.kind == Kind::kCallable; }
bool t_eq(Interpreter& in, const Value& v, CallArgs& a) { return equal(v, need(in, a, "eq")); }
bool t_ne(Interpreter& in, const Value& v, CallArgs& a) { return !equal(v, need(in, a, "ne")); }
bool t_lt(Interpreter& in, const Value& v, CallArgs& a) { return less(v, need(in, a, "lt")); }
bool t_gt(Interpreter& in, const Value& v, CallArgs& a) { return less(need(in, a, "gt"), v); }
bool t_le(Interpreter& in, const Value& v, CallArgs& a) { return !less(need(in, a, "le"), v); }
bool t_ge(Interpreter& in, const Value& v, CallArgs& a) { return !less(v, need(in, a, "ge")); }
bool t_sameas(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& o = need(in, a, "sameas");
  if (v.kind != o.kind) return false;
  switch (v.kind) {
    case Kind::kNone: case Kind::kUndefined: return true;
    case Kind::kBool: return v.b == o.b;
    case Kind::kInt: return v.i == o.i;
    case Kind::kList: return v.list == o.list;
    case Kind::kDict: case Kind::kNamespace: return v.dict == o.dict;
    case Kind::kString: return v.s == o.s;
    default: return false;
  }
}
bool t_in(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& seq = need(in, a, "in");
  if (seq.is_string()) return v.is_string() && seq.str().find(v.str()) != std::string::npos;
  if (seq.is_dict()) return seq.dict->find(v) != nullptr;
  for (const Value& x : in.iterate(seq))
    if (equal(x, v)) return true;
  return false;
}
bool t_lower(Interpreter&, const Value& v, CallArgs&) {
  std::string s = to_str(v);
  return py_lower(s) == s && py_upper(s) != s;
}
bool t_upper(Interpreter&, const Value& v, CallArgs&) {
  std::string s = to_str(v);
  return py_upper(s) == s && py_lower(s) != s;
}
bool t_odd(Interpreter& in, const Value& v, CallArgs&) { return int_of(in, v, "odd") % 2 != 0; }
bool t_even(Interpreter& in, const Value& v, CallArgs&) { return int_of(in, v, "even") % 2 == 0; }
bool t_divisibleby(Interpreter& in, const Value& v, CallArgs& a) {
  int64_t d = int_of(in, need(in, a, "divisibleby"), "divisibleby");
  if (d == 0) in.fail("integer division or modulo by zero");
  return int_of(in, v, "divisibleby") % d == 0;
}

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> kTests = {
      {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined}, {"divisibleby", t_divisibleby},
      {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"even", t_even}, {"false", t_false},
      {"float", t_float}, {"ge", t_ge}, {">=", t_ge}, {"gt", t_gt}, {">", t_gt}, {"greaterthan", t_gt},
      {"in", t_in}, {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_le}, {"<=", t_le},
      {"lower", t_lower}, {"lt", t_lt}, {"<", t_lt}, {"lessthan", t_lt}, {"mapping", t_mapping},
      {"ne", t_ne}, {"!=", t_ne}, {"none", t_none}, {"number", t_number}, {"odd", t_odd},
      {"sameas", t_sameas}, {"sequence", t_sequence}, {"string", t_string}, {"true", t_true},
      {"undefined", t_undefined}, {"upper", t_upper},
  };
  return kTests;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) != 0; }

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) in.fail("no test named '" + name + "'");
  return it->second(in, v, args);
}

}  // namespace fdpp::jinja
