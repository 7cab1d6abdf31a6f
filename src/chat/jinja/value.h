// The value model of the Jinja2 subset: Python's objects as chat templates see them.
// Strings, lists and dicts are shared, never copied, when a value is passed around: the
// environment transformers uses is Jinja2's ImmutableSandboxedEnvironment, where a
// template cannot mutate a list or dict (`append` is a SecurityError there), so sharing is
// safe. The one mutable object is a namespace(), whose attributes `set ns.x = ...` assigns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fdpp::jinja {

enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

struct Value;
struct Dict;
struct CallArgs;
class Interpreter;
using List = std::vector<Value>;
using NativeFn = std::function<Value(Interpreter&, CallArgs&)>;

struct Value {
  Kind kind = Kind::kUndefined;
  bool is_tuple = false;  // a list that Python would print as (a, b)
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;  // kString; kUndefined: the name, for error messages
  std::shared_ptr<const List> list;
  std::shared_ptr<Dict> dict;  // kDict, kNamespace
  std::shared_ptr<const NativeFn> fn;

  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List v, bool tuple = false);
  static Value make_dict(Dict d);
  static Value make_namespace(Dict d);
  static Value callable(NativeFn f);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  bool is_number() const { return kind == Kind::kBool || kind == Kind::kInt || kind == Kind::kFloat; }
  const std::string& str() const { return *s; }
  double as_double() const { return kind == Kind::kFloat ? f : kind == Kind::kBool ? double(b) : double(i); }
};

// Insertion-ordered, as Python's dict. Lookups are linear: chat messages have a handful
// of keys, and a hash would have to follow Python's 1 == 1.0 == True key identity.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The keyword `name`, else positional `index`, else nullptr.
  const Value* get(size_t index, std::string_view name) const;
};

// Python's truth value (undefined is false).
bool truthy(const Value& v);
// Python's ==, with Jinja2's undefined == undefined.
bool equal(const Value& a, const Value& b);
// Python's <: numbers with numbers, strings by code point, lists lexicographically;
// anything else throws (TypeError in Python).
bool less(const Value& a, const Value& b);
// str(v) as Jinja2 prints it: None, True, 1.0, ['a', 1]; undefined prints nothing.
std::string to_str(const Value& v);
// repr(v): strings quoted as Python quotes them.
std::string to_repr(const Value& v);
// float.__repr__: the shortest text that reads back to the same double (1.0, 1e-05, 1e+16).
std::string format_float(double d);
// The Python type name, for error messages ('dict object').
const char* type_name(const Value& v);

// ---- UTF-8: Python indexes strings by code point ---------------------------------
std::vector<char32_t> decode_utf8(std::string_view s);
std::string encode_utf8(const std::vector<char32_t>& cps, size_t begin = 0, size_t end = SIZE_MAX);
void append_utf8(std::string& out, char32_t cp);
size_t count_code_points(std::string_view s);
bool is_py_space(char32_t c);  // str.isspace()
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
bool is_alpha(char32_t c);
bool is_word(char32_t c);  // \w

}  // namespace fdpp::jinja
