// Jinja2's filters that chat templates use (jinja2/filters.py), plus transformers' tojson.
#include <algorithm>
#include <cmath>
#include <map>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/json_value.h"
#include "chat/jinja/strings.h"

namespace fdpp::jinja {
namespace {

using Filter = Value (*)(Interpreter&, const Value&, CallArgs&);

const Value* arg(CallArgs& a, size_t i, const char* name) { return a.get(i, name); }
bool arg_bool(CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = arg(a, i, name);
  return v ? truthy(*v) : dflt;
}
int64_t arg_int(Interpreter& in, CallArgs& a, size_t i, const char* name, int64_t dflt) {
  const Value* v = arg(a, i, name);
  if (!v || v->is_none()) return dflt;
  if (v->kind == Kind::kInt) return v->i;
  if (v->kind == Kind::kBool) return v->b;
  in.fail(std::string("argument '") + name + "' must be an integer");
}
std::string text(const Value& v) { return to_str(v); }

// `attribute="a.b"` or an integer index, as Jinja2's make_attrgetter resolves it.
Value attribute_of(Interpreter& in, const Value& item, const Value& attr) {
  if (attr.kind == Kind::kInt) return in.get_item(item, attr);
  Value v = item;
  std::string path = to_str(attr);
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = digits ? in.get_item(v, Value::integer(std::stoll(part))) : in.get_item(v, Value::string(part));
    if (dot == std::string::npos) return v;
    pos = dot + 1;
  }
}

Value f_length(Interpreter&, const Value& v, CallArgs&) {
  switch (v.kind) {
    case Kind::kString: return Value::integer(static_cast<int64_t>(count_code_points(v.str())));
    case Kind::kList: return Value::integer(static_cast<int64_t>(v.list->size()));
    case Kind::kDict: case Kind::kNamespace: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
    case Kind::kUndefined: return Value::integer(0);
    default: return Value::integer(0);
  }
}
Value f_length_checked(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_string() && !v.is_list() && !v.is_dict() && !v.is_undefined() && v.kind != Kind::kNamespace)
    in.fail(std::string("object of type '") + type_name(v) + "' has no len()");
  return f_length(in, v, a);
}
Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  const Value* chars = arg(a, 0, "chars");
  return Value::string(py_strip(text(v), chars && !chars->is_none() ? &chars->str() : nullptr, true, true));
}
Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  const Value* d = arg(a, 0, "default_value");
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !truthy(v))) return d ? *d : Value::string("");
  return v;
}
Value f_upper(Interpreter&, const Value& v, CallArgs&) { return Value::string(py_upper(text(v))); }
Value f_lower(Interpreter&, const Value& v, CallArgs&) { return Value::string(py_lower(text(v))); }
Value f_title(Interpreter&, const Value& v, CallArgs&) { return Value::string(jinja_title(text(v))); }
Value f_capitalize(Interpreter&, const Value& v, CallArgs&) { return Value::string(py_capitalize(text(v))); }
Value f_replace(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* o = arg(a, 0, "old");
  const Value* n = arg(a, 1, "new");
  if (!o || !n) in.fail("replace() needs the old and the new string");
  std::string out = py_replace(text(v), text(*o), text(*n), arg_int(in, a, 2, "count", -1));
  in.check_size(out.size());
  return Value::string(std::move(out));
}
Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* sep = arg(a, 0, "d");
  const Value* attr = arg(a, 1, "attribute");
  std::string out, s = sep ? text(*sep) : "";
  bool first = true;
  for (const Value& item : in.iterate(v)) {
    if (!first) out += s;
    first = false;
    out += text(attr ? attribute_of(in, item, *attr) : item);
    in.check_size(out.size());
  }
  return Value::string(std::move(out));
}
Value f_first(Interpreter& in, const Value& v, CallArgs&) {
  List items = in.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}
Value f_last(Interpreter& in, const Value& v, CallArgs&) {
  List items = in.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}
Value f_list(Interpreter& in, const Value& v, CallArgs&) { return Value::make_list(in.iterate(v)); }
Value f_reverse(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    auto cps = decode_utf8(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value::string(encode_utf8(cps));
  }
  List items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}
Value f_items(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::make_list({});
  if (!v.is_dict()) in.fail("items filter: can only get item pairs from a mapping");
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_list({k, x}, true));
  return Value::make_list(std::move(out));
}
// Sorting key: strings compare case-insensitively unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value::string(py_lower(v.str())) : v;
}
Value f_dictsort(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_dict()) in.fail("dictsort: a mapping is required");
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* by = arg(a, 1, "by");
  bool rev = arg_bool(a, 2, "reverse", false);
  int pos = by && to_str(*by) == "value" ? 1 : 0;
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_list({k, x}, true));
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key((*x.list)[pos], cs), ky = sort_key((*y.list)[pos], cs);
    return rev ? less(ky, kx) : less(kx, ky);
  });
  return Value::make_list(std::move(out));
}
Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  bool rev = arg_bool(a, 0, "reverse", false);
  bool cs = arg_bool(a, 1, "case_sensitive", false);
  const Value* attr = arg(a, 2, "attribute");
  List items = in.iterate(v);
  in.charge(static_cast<int64_t>(items.size()) * 8);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& x : items) keyed.emplace_back(sort_key(attr ? attribute_of(in, x, *attr) : x, cs), x);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? less(y.first, x.first) : less(x.first, y.first);
  });
  List out;
  for (auto& kv : keyed) out.push_back(kv.second);
  return Value::make_list(std::move(out));
}
Value select_like(Interpreter& in, const Value& v, CallArgs& a, bool by_attr, bool keep) {
  List out;
  size_t first_test = by_attr ? 1 : 0;
  const Value* attr = by_attr ? arg(a, 0, "attribute") : nullptr;
  if (by_attr && !attr) in.fail("selectattr/rejectattr need an attribute");
  const Value* test = a.pos.size() > first_test ? &a.pos[first_test] : nullptr;
  for (const Value& item : in.iterate(v)) {
    Value x = attr ? attribute_of(in, item, *attr) : item;
    bool r;
    if (!test) {
      r = truthy(x);
    } else {
      CallArgs targs;
      targs.pos.assign(a.pos.begin() + first_test + 1, a.pos.end());
      if (!has_test(to_str(*test))) in.fail("no test named '" + to_str(*test) + "'");
      r = apply_test(in, to_str(*test), x, targs);
    }
    if (r == keep) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_like(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_like(in, v, a, true, false); }
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_like(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_like(in, v, a, false, false); }
Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  List out;
  const Value* attr = nullptr;
  for (const auto& [k, x] : a.kw)
    if (k == "attribute") attr = &x;
  const Value* dflt = nullptr;
  for (const auto& [k, x] : a.kw)
    if (k == "default") dflt = &x;
  for (const Value& item : in.iterate(v)) {
    if (attr) {
      Value x = attribute_of(in, item, *attr);
      out.push_back(x.is_undefined() && dflt ? *dflt : x);
    } else {
      if (a.pos.empty()) in.fail("map: a filter name or attribute= is required");
      std::string name = to_str(a.pos[0]);
      if (!has_filter(name)) in.fail("no filter named '" + name + "'");
      CallArgs fargs;
      fargs.pos.assign(a.pos.begin() + 1, a.pos.end());
      out.push_back(apply_filter(in, name, item, fargs));
    }
  }
  return Value::make_list(std::move(out));
}
Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* attr = arg(a, 1, "attribute");
  List out, seen;
  for (const Value& item : in.iterate(v)) {
    Value key = sort_key(attr ? attribute_of(in, item, *attr) : item, cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || equal(s, key);
    in.charge(static_cast<int64_t>(seen.size()));
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::make_list(std::move(out));
}
Value f_safe(Interpreter&, const Value& v, CallArgs&) { return v; }
Value f_string(Interpreter&, const Value& v, CallArgs&) { return Value::string(text(v)); }
Value f_int(Interpreter& in, const Value& v, CallArgs& a) {
  int64_t dflt = arg_int(in, a, 0, "default", 0);
  if (v.kind == Kind::kInt) return v;
  if (v.kind == Kind::kBool) return Value::integer(v.b);
  if (v.kind == Kind::kFloat) return std::isfinite(v.f) && std::fabs(v.f) < 9.2e18 ? Value::integer(static_cast<int64_t>(v.f)) : Value::integer(dflt);
  if (v.is_string()) {
    std::string s = py_strip(v.str(), nullptr, true, true);
    if (auto i = parse_py_int(s)) return Value::integer(*i);
    if (auto f = parse_py_float(s); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) return Value::integer(static_cast<int64_t>(*f));
  }
  return Value::integer(dflt);
}
Value f_float(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  double dflt = d && d->is_number() ? d->as_double() : 0.0;
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string()) {
    if (auto f = parse_py_float(py_strip(v.str(), nullptr, true, true))) return Value::number(*f);
  }
  return Value::number(dflt);
}
Value f_abs(Interpreter& in, const Value& v, CallArgs&) {
  if (v.kind == Kind::kFloat) return Value::number(std::fabs(v.f));
  if (v.kind == Kind::kInt) {
    if (v.i == INT64_MIN) in.fail("integer overflow");
    return Value::integer(v.i < 0 ? -v.i : v.i);
  }
  if (v.kind == Kind::kBool) return Value::integer(v.b);
  in.fail(std::string("bad operand type for abs(): '") + type_name(v) + "'");
}
Value f_round(Interpreter& in, const Value& v, CallArgs& a) {
  int64_t precision = arg_int(in, a, 0, "precision", 0);
  const Value* m = arg(a, 1, "method");
  std::string method = m ? to_str(*m) : "common";
  if (!v.is_number()) in.fail("round: a number is required");
  if (v.kind != Kind::kFloat && precision >= 0 && method == "common") return Value::integer(v.kind == Kind::kBool ? v.b : v.i);
  if (precision < -300 || precision > 300) return Value::number(v.as_double());
  double x = v.as_double(), p = std::pow(10.0, static_cast<double>(precision));
  if (method == "common") {
    // Python's round() to `precision` digits on the decimal text, as Jinja2 calls it.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::max<int64_t>(precision, 0)), x);
    double r = precision >= 0 ? std::strtod(buf, nullptr) : std::nearbyint(x * p) / p;
    return Value::number(r);
  }
  if (method == "floor") return Value::number(std::floor(x * p) / p);
  if (method == "ceil") return Value::number(std::ceil(x * p) / p);
  in.fail("method must be common, ceil or floor");
}
Value f_indent(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* w = arg(a, 0, "width");
  std::string pad = w && w->is_string() ? w->str() : std::string(static_cast<size_t>(std::clamp<int64_t>(arg_int(in, a, 0, "width", 4), 0, 1 << 16)), ' ');
  bool first = arg_bool(a, 1, "first", false), blank = arg_bool(a, 2, "blank", false);
  std::string s = text(v), out;
  std::vector<std::string> lines = split_lines_keep(s);
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string& line = lines[k];
    bool empty = line.empty() || line == "\n";
    if ((k > 0 || first) && (blank || !empty)) out += pad;
    out += line;
    in.check_size(out.size());
  }
  return Value::string(std::move(out));
}
Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : decode_utf8(text(v))) {
    bool w = is_word(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}
Value f_tojson(Interpreter& in, const Value& v, CallArgs& a) {
  JsonFormat f;
  const Value* indent = arg(a, 1, "indent");
  if (indent && !indent->is_none()) {
    if (indent->is_string()) f.indent = indent->str();
    else f.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(arg_int(in, a, 1, "indent", 0), 0, 1 << 10)), ' ');
  }
  f.ensure_ascii = arg_bool(a, 0, "ensure_ascii", false);
  f.item_sep = f.indent ? "," : ", ";
  if (const Value* seps = arg(a, 2, "separators"); seps && seps->is_list() && seps->list->size() == 2) {
    f.item_sep = to_str((*seps->list)[0]);
    f.key_sep = to_str((*seps->list)[1]);
  }
  f.sort_keys = arg_bool(a, 3, "sort_keys", false);
  try {
    std::string out = to_json(v, f);
    in.check_size(out.size());
    return Value::string(std::move(out));
  } catch (const Error& e) {
    if (v.is_undefined()) in.fail_undefined(v);
    in.fail(e.message);
  }
}
Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* attr = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  bool is_float = start && start->kind == Kind::kFloat;
  double fs = start ? start->as_double() : 0;
  int64_t is = start && start->kind != Kind::kFloat ? (start->kind == Kind::kBool ? start->b : start->i) : 0;
  for (const Value& item : in.iterate(v)) {
    Value x = attr ? attribute_of(in, item, *attr) : item;
    if (!x.is_number()) in.fail("sum: unsupported operand type");
    if (x.kind == Kind::kFloat) is_float = true;
    fs += x.as_double();
    if (x.kind != Kind::kFloat && __builtin_add_overflow(is, x.kind == Kind::kBool ? x.b : x.i, &is)) in.fail("integer overflow");
  }
  return is_float ? Value::number(fs) : Value::integer(is);
}
Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool want_max) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  const Value* attr = arg(a, 1, "attribute");
  List items = in.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t k = 1; k < items.size(); ++k) {
    Value x = sort_key(attr ? attribute_of(in, items[k], *attr) : items[k], cs);
    Value b = sort_key(attr ? attribute_of(in, items[best], *attr) : items[best], cs);
    if (want_max ? less(b, x) : less(x, b)) best = k;
  }
  return items[best];
}
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }
Value f_center(Interpreter& in, const Value& v, CallArgs& a) {
  std::string s = text(v);
  int64_t width = std::min<int64_t>(arg_int(in, a, 0, "width", 80), 1 << 16);
  int64_t len = static_cast<int64_t>(count_code_points(s));
  if (width <= len) return Value::string(s);
  int64_t total = width - len, left = total / 2 + (total & width & 1);
  return Value::string(std::string(left, ' ') + s + std::string(total - left, ' '));
}

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> kFilters = {
      {"abs", f_abs}, {"capitalize", f_capitalize}, {"center", f_center}, {"count", f_length_checked},
      {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort}, {"first", f_first},
      {"float", f_float}, {"indent", f_indent}, {"int", f_int}, {"items", f_items}, {"join", f_join},
      {"last", f_last}, {"length", f_length_checked}, {"list", f_list}, {"lower", f_lower}, {"map", f_map},
      {"max", f_max}, {"min", f_min}, {"reject", f_reject}, {"rejectattr", f_rejectattr},
      {"replace", f_replace}, {"reverse", f_reverse}, {"round", f_round}, {"safe", f_safe},
      {"select", f_select}, {"selectattr", f_selectattr}, {"sort", f_sort}, {"string", f_string},
      {"sum", f_sum}, {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim}, {"unique", f_unique},
      {"upper", f_upper}, {"wordcount", f_wordcount},
  };
  return kFilters;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) in.fail("no filter named '" + name + "'");
  return it->second(in, v, args);
}

}  // namespace fdpp::jinja
