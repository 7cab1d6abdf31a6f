// Methods of str, dict and list that chat templates call (`content.strip()`,
// `message.get('x')`), and the global functions of transformers' environment.
#include <chrono>
#include <ctime>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/strings.h"

namespace fdpp::jinja {
namespace {

Value bind(Value self, Value (*fn)(Interpreter&, const Value&, CallArgs&)) {
  return Value::callable([self = std::move(self), fn](Interpreter& in, CallArgs& a) { return fn(in, self, a); });
}

const std::string* opt_str(Interpreter& in, CallArgs& a, size_t i, const char* name) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string()) in.fail(std::string("argument '") + name + "' must be a string");
  return &v->str();
}
const std::string& req_str(Interpreter& in, CallArgs& a, size_t i, const char* name) {
  const std::string* s = opt_str(in, a, i, name);
  if (!s) in.fail(std::string("missing argument '") + name + "'");
  return *s;
}
int64_t opt_int(Interpreter& in, CallArgs& a, size_t i, const char* name, int64_t dflt) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return dflt;
  if (v->kind == Kind::kInt) return v->i;
  if (v->kind == Kind::kBool) return v->b;
  in.fail(std::string("argument '") + name + "' must be an integer");
}

Value s_strip(Interpreter& in, const Value& s, CallArgs& a) { return Value::string(py_strip(s.str(), opt_str(in, a, 0, "chars"), true, true)); }
Value s_lstrip(Interpreter& in, const Value& s, CallArgs& a) { return Value::string(py_strip(s.str(), opt_str(in, a, 0, "chars"), true, false)); }
Value s_rstrip(Interpreter& in, const Value& s, CallArgs& a) { return Value::string(py_strip(s.str(), opt_str(in, a, 0, "chars"), false, true)); }
Value s_upper(Interpreter&, const Value& s, CallArgs&) { return Value::string(py_upper(s.str())); }
Value s_lower(Interpreter&, const Value& s, CallArgs&) { return Value::string(py_lower(s.str())); }
Value s_title(Interpreter&, const Value& s, CallArgs&) { return Value::string(py_title(s.str())); }
Value s_capitalize(Interpreter&, const Value& s, CallArgs&) { return Value::string(py_capitalize(s.str())); }
Value affix(Interpreter& in, const Value& s, CallArgs& a, bool start) {
  const Value* p = a.get(0, "prefix");
  if (!p) in.fail("startswith/endswith need an argument");
  auto match = [&](const Value& x) {
    if (!x.is_string()) in.fail("startswith/endswith take a string or a tuple of strings");
    const std::string& t = x.str();
    if (t.size() > s.str().size()) return false;
    return start ? s.str().compare(0, t.size(), t) == 0 : s.str().compare(s.str().size() - t.size(), t.size(), t) == 0;
  };
  if (p->is_list()) {
    for (const Value& x : *p->list)
      if (match(x)) return Value::boolean(true);
    return Value::boolean(false);
  }
  return Value::boolean(match(*p));
}
Value s_startswith(Interpreter& in, const Value& s, CallArgs& a) { return affix(in, s, a, true); }
Value s_endswith(Interpreter& in, const Value& s, CallArgs& a) { return affix(in, s, a, false); }
Value split(Interpreter& in, const Value& s, CallArgs& a, bool right) {
  const std::string* sep = opt_str(in, a, 0, "sep");
  if (sep && sep->empty()) in.fail("empty separator");
  List out;
  for (auto& p : py_split(s.str(), sep, opt_int(in, a, 1, "maxsplit", -1), right)) out.push_back(Value::string(std::move(p)));
  in.charge(static_cast<int64_t>(out.size()));
  return Value::make_list(std::move(out));
}
Value s_split(Interpreter& in, const Value& s, CallArgs& a) { return split(in, s, a, false); }
Value s_rsplit(Interpreter& in, const Value& s, CallArgs& a) { return split(in, s, a, true); }
Value s_splitlines(Interpreter& in, const Value& s, CallArgs&) {
  List out;
  for (auto& line : split_lines_keep(s.str())) {
    if (!line.empty() && line.back() == '\n') line.pop_back();
    out.push_back(Value::string(line));
  }
  if (s.str().empty()) out.clear();
  return Value::make_list(std::move(out));
}
Value s_replace(Interpreter& in, const Value& s, CallArgs& a) {
  std::string out = py_replace(s.str(), req_str(in, a, 0, "old"), req_str(in, a, 1, "new"), opt_int(in, a, 2, "count", -1));
  in.check_size(out.size());
  return Value::string(std::move(out));
}
// find/count work on bytes and convert to code points: the same answer as Python's for UTF-8.
Value s_find(Interpreter& in, const Value& s, CallArgs& a) {
  size_t at = s.str().find(req_str(in, a, 0, "sub"));
  if (at == std::string::npos) return Value::integer(-1);
  return Value::integer(static_cast<int64_t>(count_code_points(std::string_view(s.str()).substr(0, at))));
}
Value s_rfind(Interpreter& in, const Value& s, CallArgs& a) {
  size_t at = s.str().rfind(req_str(in, a, 0, "sub"));
  if (at == std::string::npos) return Value::integer(-1);
  return Value::integer(static_cast<int64_t>(count_code_points(std::string_view(s.str()).substr(0, at))));
}
Value s_count(Interpreter& in, const Value& s, CallArgs& a) {
  const std::string& sub = req_str(in, a, 0, "sub");
  if (sub.empty()) return Value::integer(static_cast<int64_t>(count_code_points(s.str()) + 1));
  int64_t n = 0;
  for (size_t at = s.str().find(sub); at != std::string::npos; at = s.str().find(sub, at + sub.size())) ++n;
  return Value::integer(n);
}
Value s_join(Interpreter& in, const Value& s, CallArgs& a) {
  if (a.pos.empty()) in.fail("join() takes exactly one argument");
  std::string out;
  bool first = true;
  for (const Value& x : in.iterate(a.pos[0])) {
    if (!x.is_string()) in.fail(std::string("sequence item: expected str instance, ") + type_name(x) + " found");
    if (!first) out += s.str();
    first = false;
    out += x.str();
    in.check_size(out.size());
  }
  return Value::string(std::move(out));
}
Value s_isdigit(Interpreter&, const Value& s, CallArgs&) {
  bool ok = !s.str().empty();
  for (char c : s.str()) ok = ok && c >= '0' && c <= '9';
  return Value::boolean(ok);
}
Value s_isspace(Interpreter&, const Value& s, CallArgs&) {
  auto cps = decode_utf8(s.str());
  bool ok = !cps.empty();
  for (char32_t c : cps) ok = ok && is_py_space(c);
  return Value::boolean(ok);
}

Value d_items(Interpreter&, const Value& d, CallArgs&) {
  List out;
  for (const auto& [k, v] : d.dict->items) out.push_back(Value::make_list({k, v}, true));
  return Value::make_list(std::move(out));
}
Value d_keys(Interpreter&, const Value& d, CallArgs&) {
  List out;
  for (const auto& kv : d.dict->items) out.push_back(kv.first);
  return Value::make_list(std::move(out));
}
Value d_values(Interpreter&, const Value& d, CallArgs&) {
  List out;
  for (const auto& kv : d.dict->items) out.push_back(kv.second);
  return Value::make_list(std::move(out));
}
Value d_get(Interpreter& in, const Value& d, CallArgs& a) {
  if (a.pos.empty()) in.fail("get expected at least 1 argument");
  const Value* v = d.dict->find(a.pos[0]);
  if (v) return *v;
  return a.pos.size() > 1 ? a.pos[1] : Value::none();
}

Value unsafe(const Value& obj, const std::string& name) {
  // ImmutableSandboxedEnvironment refuses methods that modify a list or dict.
  return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
}

}  // namespace

Value get_method(Interpreter&, const Value& obj, const std::string& name) {
  using Fn = Value (*)(Interpreter&, const Value&, CallArgs&);
  static const std::pair<const char*, Fn> kStr[] = {
      {"strip", s_strip}, {"lstrip", s_lstrip}, {"rstrip", s_rstrip}, {"upper", s_upper}, {"lower", s_lower},
      {"title", s_title}, {"capitalize", s_capitalize}, {"startswith", s_startswith}, {"endswith", s_endswith},
      {"split", s_split}, {"rsplit", s_rsplit}, {"splitlines", s_splitlines}, {"replace", s_replace},
      {"find", s_find}, {"rfind", s_rfind}, {"count", s_count}, {"join", s_join}, {"isdigit", s_isdigit},
      {"isspace", s_isspace}};
  static const std::pair<const char*, Fn> kDict[] = {
      {"items", d_items}, {"keys", d_keys}, {"values", d_values}, {"get", d_get}};
  if (obj.is_string()) {
    for (const auto& [n, f] : kStr)
      if (name == n) return bind(obj, f);
  } else if (obj.is_dict()) {
    for (const auto& [n, f] : kDict)
      if (name == n) return bind(obj, f);
    for (const char* m : {"clear", "pop", "popitem", "setdefault", "update"})
      if (name == m) return unsafe(obj, name);
  } else if (obj.is_list() && !obj.is_tuple) {
    for (const char* m : {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"})
      if (name == m) return unsafe(obj, name);
  }
  return Value::undefined();
}

void add_global_functions(Dict& g) {
  g.set(Value::string("range"), Value::callable([](Interpreter& in, CallArgs& a) {
          int64_t start = 0, stop = 0, step = 1;
          auto num = [&](size_t i) {
            const Value& v = a.pos[i];
            if (v.kind == Kind::kInt) return v.i;
            if (v.kind == Kind::kBool) return static_cast<int64_t>(v.b);
            in.fail(std::string("'") + type_name(v) + "' object cannot be interpreted as an integer");
          };
          if (a.pos.size() == 1) {
            stop = num(0);
          } else if (a.pos.size() == 2 || a.pos.size() == 3) {
            start = num(0);
            stop = num(1);
            if (a.pos.size() == 3) step = num(2);
          } else {
            in.fail("range expected 1 to 3 arguments");
          }
          if (step == 0) in.fail("range() arg 3 must not be zero");
          long double count = step > 0 ? (static_cast<long double>(stop) - start + step - 1) / step
                                       : (static_cast<long double>(start) - stop - step - 1) / -step;
          int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
          // Pay for every element before making any, so range(10**9) fails at once.
          in.charge(n);
          in.check_size(static_cast<size_t>(n));
          List out;
          out.reserve(static_cast<size_t>(n));
          for (int64_t k = 0; k < n; ++k) out.push_back(Value::integer(start + k * step));
          return Value::make_list(std::move(out));
        }));
  g.set(Value::string("namespace"), Value::callable([](Interpreter& in, CallArgs& a) {
          Dict d;
          for (const Value& p : a.pos) {
            if (!p.is_dict()) in.fail("namespace() takes a mapping as positional argument");
            for (const auto& kv : p.dict->items) d.set(kv.first, kv.second);
          }
          for (auto& [k, v] : a.kw) d.set(Value::string(k), v);
          return Value::make_namespace(std::move(d));
        }));
  g.set(Value::string("dict"), Value::callable([](Interpreter& in, CallArgs& a) {
          Dict d;
          for (const Value& p : a.pos) {
            if (!p.is_dict()) in.fail("dict() takes a mapping as positional argument");
            for (const auto& kv : p.dict->items) d.set(kv.first, kv.second);
          }
          for (auto& [k, v] : a.kw) d.set(Value::string(k), v);
          return Value::make_dict(std::move(d));
        }));
  g.set(Value::string("raise_exception"), Value::callable([](Interpreter& in, CallArgs& a) -> Value {
          in.fail(a.pos.empty() ? std::string() : to_str(a.pos[0]));
        }));
  g.set(Value::string("strftime_now"), Value::callable([](Interpreter& in, CallArgs& a) {
          if (a.pos.empty() || !a.pos[0].is_string()) in.fail("strftime_now takes a format string");
          std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
          std::tm tm{};
          localtime_r(&now, &tm);
          char buf[512];
          size_t n = std::strftime(buf, sizeof buf, a.pos[0].str().c_str(), &tm);
          return Value::string(std::string(buf, n));
        }));
}

}  // namespace fdpp::jinja
