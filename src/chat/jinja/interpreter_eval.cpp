// Interpreter: expressions (statements are in interpreter.cpp).
#include <cmath>

#include "chat/jinja/interpreter.h"

namespace fdpp::jinja {
namespace {

int64_t as_int(const Value& v) { return v.kind == Kind::kBool ? v.b : v.i; }
bool is_intlike(const Value& v) { return v.kind == Kind::kInt || v.kind == Kind::kBool; }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

void Interpreter::eval_args(const Node& n, size_t first, CallArgs& args) {
  for (size_t k = first; k < n.kids.size(); ++k) args.pos.push_back(eval(*n.kids[k]));
  for (const auto& [name, e] : n.kwargs) args.kw.emplace_back(name, eval(*e));
}

Value Interpreter::eval(const Node& n) {
  current_ = &n;
  charge(1);
  switch (n.type) {
    case N::kLiteral: return n.value;
    case N::kName: {
      const Value* v = lookup(n.name);
      return v ? *v : Value::undefined("'" + n.name + "' is undefined");
    }
    case N::kList:
    case N::kTuple: {
      List items;
      for (const auto& k : n.kids) items.push_back(eval(*k));
      return Value::make_list(std::move(items), n.type == N::kTuple);
    }
    case N::kDict: {
      Dict d;
      for (size_t k = 0; k + 1 < n.kids.size(); k += 2) {
        Value key = eval(*n.kids[k]);
        if (key.is_list() && !key.is_tuple) fail("unhashable type: 'list'");
        if (key.is_dict()) fail("unhashable type: 'dict'");
        d.set(std::move(key), eval(*n.kids[k + 1]));
      }
      return Value::make_dict(std::move(d));
    }
    case N::kGetAttr: {
      Value obj = eval(*n.kids[0]);
      current_ = &n;
      return get_attr(obj, n.name);
    }
    case N::kGetItem: {
      Value obj = eval(*n.kids[0]);
      Value key = eval(*n.kids[1]);
      current_ = &n;
      return get_item(obj, key);
    }
    case N::kSlice: return eval_slice(n);
    case N::kCall: return eval_call(n);
    case N::kFilter: return eval_filter(n, nullptr);
    case N::kTest: {
      Value v = eval(*n.kids[0]);
      CallArgs args;
      eval_args(n, 1, args);
      current_ = &n;
      bool r = apply_test(*this, n.name, v, args);
      return Value::boolean(r != n.negated);
    }
    case N::kUnary: {
      Value v = eval(*n.kids[0]);
      current_ = &n;
      if (n.name == "not") return Value::boolean(!truthy(v));
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) fail("bad operand type for unary " + n.name + ": '" + type_name(v) + "'");
      if (n.name == "+") return v.kind == Kind::kBool ? Value::integer(v.b) : v;
      if (v.kind == Kind::kFloat) return Value::number(-v.f);
      if (as_int(v) == INT64_MIN) fail("integer overflow");
      return Value::integer(-as_int(v));
    }
    case N::kBinary: return eval_binary(n);
    case N::kCompare: return eval_compare(n);
    case N::kCondExpr: {
      if (truthy(eval(*n.kids[1]))) return eval(*n.kids[0]);
      return n.kids[2] ? eval(*n.kids[2]) : Value::undefined("the inline if has no else");
    }
    default: fail("a statement where an expression was expected");
  }
}

Value Interpreter::eval_binary(const Node& n) {
  const std::string& op = n.name;
  if (op == "and") {
    Value l = eval(*n.kids[0]);
    return truthy(l) ? eval(*n.kids[1]) : l;
  }
  if (op == "or") {
    Value l = eval(*n.kids[0]);
    return truthy(l) ? l : eval(*n.kids[1]);
  }
  Value l = eval(*n.kids[0]);
  Value r = eval(*n.kids[1]);
  current_ = &n;
  if (op == "~") {
    std::string s = to_str(l);
    std::string t = to_str(r);
    check_size(s.size() + t.size());
    return Value::string(s + t);
  }
  if (l.is_undefined()) fail_undefined(l);
  if (r.is_undefined()) fail_undefined(r);
  auto unsupported = [&]() {
    fail("unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
  };
  if (l.is_number() && r.is_number()) {
    const bool ints = is_intlike(l) && is_intlike(r);
    const int64_t a = ints ? as_int(l) : 0, b = ints ? as_int(r) : 0;
    const double x = l.as_double(), y = r.as_double();
    int64_t out = 0;
    if (op == "+") {
      if (!ints) return Value::number(x + y);
      if (__builtin_add_overflow(a, b, &out)) fail("integer overflow");
      return Value::integer(out);
    }
    if (op == "-") {
      if (!ints) return Value::number(x - y);
      if (__builtin_sub_overflow(a, b, &out)) fail("integer overflow");
      return Value::integer(out);
    }
    if (op == "*") {
      if (!ints) return Value::number(x * y);
      if (__builtin_mul_overflow(a, b, &out)) fail("integer overflow");
      return Value::integer(out);
    }
    if (op == "/") {
      if (y == 0) fail("division by zero");
      return Value::number(x / y);
    }
    if (op == "//" || op == "%") {
      if (ints ? b == 0 : y == 0) fail(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
      if (ints) {
        if (a == INT64_MIN && b == -1) fail("integer overflow");
        int64_t q = floor_div(a, b);
        return Value::integer(op == "//" ? q : a - q * b);
      }
      double q = std::floor(x / y);
      if (op == "//") return Value::number(q);
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::number(m);
    }
    if (op == "**") {
      if (ints && b >= 0) {
        int64_t result = 1, base = a;
        for (int64_t e = b; e > 0; e >>= 1) {
          if (e & 1 && __builtin_mul_overflow(result, base, &result)) fail("integer overflow");
          if (e > 1 && __builtin_mul_overflow(base, base, &base)) fail("integer overflow");
        }
        return Value::integer(result);
      }
      if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
      return Value::number(std::pow(x, y));
    }
    unsupported();
  }
  if (op == "+") {
    if (l.is_string() && r.is_string()) {
      check_size(l.str().size() + r.str().size());
      return Value::string(l.str() + r.str());
    }
    if (l.is_list() && r.is_list() && l.is_tuple == r.is_tuple) {
      check_size(l.list->size() + r.list->size());
      charge(static_cast<int64_t>(l.list->size() + r.list->size()));
      List out = *l.list;
      out.insert(out.end(), r.list->begin(), r.list->end());
      return Value::make_list(std::move(out), l.is_tuple);
    }
    unsupported();
  }
  if (op == "*") {
    const bool swapped = is_intlike(l) && (r.is_string() || r.is_list());
    const Value& seq = swapped ? r : l;
    const Value& count = swapped ? l : r;
    if (!is_intlike(count) || !(seq.is_string() || seq.is_list())) unsupported();
    int64_t times = std::max<int64_t>(0, as_int(count));
    size_t unit = seq.is_string() ? seq.str().size() : seq.list->size();
    if (unit && static_cast<uint64_t>(times) > SIZE_MAX / unit) check_size(SIZE_MAX);
    check_size(unit * times);
    charge(static_cast<int64_t>(unit * times / 64));
    if (seq.is_string()) {
      std::string out;
      out.reserve(unit * times);
      for (int64_t k = 0; k < times; ++k) out += seq.str();
      return Value::string(std::move(out));
    }
    List out;
    for (int64_t k = 0; k < times; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
    return Value::make_list(std::move(out), seq.is_tuple);
  }
  if (op == "%" && l.is_string()) fail("printf-style string formatting ('%') is not supported");
  fail("unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
}

Value Interpreter::eval_compare(const Node& n) {
  Value left = eval(*n.kids[0]);
  for (size_t k = 0; k < n.ops.size(); ++k) {
    Value right = eval(*n.kids[k + 1]);
    current_ = &n;
    const std::string& op = n.ops[k];
    bool r;
    if (op == "==") {
      r = equal(left, right);
    } else if (op == "!=") {
      r = !equal(left, right);
    } else if (op == "in" || op == "notin") {
      if (right.is_string()) {
        if (!left.is_string()) fail(std::string("'in <string>' requires string as left operand, not ") + type_name(left));
        r = right.str().find(left.str()) != std::string::npos;
      } else if (right.is_dict()) {
        r = right.dict->find(left) != nullptr;
      } else if (right.is_list()) {
        r = false;
        for (const Value& v : *right.list) r = r || equal(left, v);
      } else if (right.is_undefined()) {
        r = false;
      } else {
        fail(std::string("argument of type '") + type_name(right) + "' is not iterable");
      }
      if (op == "notin") r = !r;
    } else {
      if (left.is_undefined()) fail_undefined(left);
      if (right.is_undefined()) fail_undefined(right);
      if (op == "<") r = less(left, right);
      else if (op == ">") r = less(right, left);
      else if (op == "<=") r = !less(right, left);
      else r = !less(left, right);
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval_call(const Node& n) {
  Value callee = eval(*n.kids[0]);
  CallArgs args;
  eval_args(n, 1, args);
  current_ = &n;
  return call(callee, args);
}

Value Interpreter::eval_filter(const Node& n, const Value* input) {
  Value v = input ? *input : eval(*n.kids[0]);
  CallArgs args;
  eval_args(n, 1, args);
  current_ = &n;
  charge(1);
  if (!has_filter(n.name)) fail("no filter named '" + n.name + "'");
  return apply_filter(*this, n.name, v, args);
}

Value Interpreter::eval_slice(const Node& n) {
  Value obj = eval(*n.kids[0]);
  int64_t part[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; ++k) {
    if (!n.kids[k + 1]) continue;
    Value v = eval(*n.kids[k + 1]);
    if (v.is_none()) continue;
    if (!is_intlike(v)) fail("slice indices must be integers or None");
    part[k] = as_int(v);
    given[k] = true;
  }
  current_ = &n;
  if (obj.is_undefined()) fail_undefined(obj);
  const int64_t step = part[2];
  if (step == 0) fail("slice step cannot be zero");
  std::vector<char32_t> cps;
  if (obj.is_string()) {
    cps = decode_utf8(obj.str());
  } else if (!obj.is_list()) {
    return Value::undefined(std::string("'") + type_name(obj) + " object' cannot be sliced");
  }
  const int64_t len = static_cast<int64_t>(obj.is_string() ? cps.size() : obj.list->size());
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](int64_t v, bool has, int64_t dflt_pos, int64_t dflt_neg) {
    if (!has) return step > 0 ? dflt_pos : dflt_neg;
    if (v < 0) {
      v += len;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= len) {
      v = step < 0 ? len - 1 : len;
    }
    return v;
  };
  int64_t start = adjust(part[0], given[0], 0, len - 1);
  int64_t stop = adjust(part[1], given[1], len, -1);
  charge(len);
  List items;
  std::vector<char32_t> chars;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.is_string()) {
      chars.push_back(cps[i]);
    } else {
      items.push_back((*obj.list)[i]);
    }
  }
  if (obj.is_string()) return Value::string(encode_utf8(chars));
  return Value::make_list(std::move(items), obj.is_tuple);
}

}  // namespace fdpp::jinja
