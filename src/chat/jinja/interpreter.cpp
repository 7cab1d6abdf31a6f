#include "chat/jinja/interpreter.h"

#include <cmath>

namespace fdpp::jinja {
namespace {

Value undefined_named(const std::string& name) { return Value::undefined("'" + name + "' is undefined"); }

int64_t as_int(const Value& v) { return v.kind == Kind::kBool ? v.b : v.i; }
bool is_intlike(const Value& v) { return v.kind == Kind::kInt || v.kind == Kind::kBool; }

}  // namespace

Interpreter::Interpreter(const Limits& limits, Dict globals) : limits_(limits) {
  frames_.emplace_back();
  for (auto& [k, v] : globals.items)
    if (k.is_string()) frames_[0].emplace_back(k.str(), std::move(v));
  frames_.emplace_back();
}

void Interpreter::charge(int64_t steps) {
  steps_ += steps;
  if (steps_ > limits_.max_steps)
    fail("the template ran past its step limit (" + std::to_string(limits_.max_steps) + " steps)");
}

void Interpreter::check_size(size_t n) const {
  if (n > limits_.max_output)
    fail("the template built a value or output past the size limit (" + std::to_string(limits_.max_output) + ")");
}

void Interpreter::fail(const std::string& message) const {
  throw Error(message, current_ ? current_->line : 0, current_ ? current_->column : 0);
}

void Interpreter::fail_undefined(const Value& v) const { fail(v.s ? *v.s : "a value is undefined"); }

void Interpreter::append(std::string& out, std::string_view s) const {
  check_size(out.size() + s.size());
  out += s;
}

std::string Interpreter::render(const std::vector<NodePtr>& body) {
  std::string out;
  exec_body(body, out);
  return out;
}

const Value* Interpreter::lookup(const std::string& name) const {
  for (size_t f = frames_.size(); f-- > 0;)
    for (const auto& [k, v] : frames_[f])
      if (k == name) return &v;
  return nullptr;
}

void Interpreter::assign(const std::string& name, Value v) {
  for (auto& [k, x] : frames_.back()) {
    if (k == name) {
      x = std::move(v);
      return;
    }
  }
  frames_.back().emplace_back(name, std::move(v));
}

List Interpreter::iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return {};
    case Kind::kList: return *v.list;
    case Kind::kDict: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::kString: {
      List chars;
      for (char32_t c : decode_utf8(*v.s)) {
        std::string s;
        append_utf8(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      charge(static_cast<int64_t>(chars.size()));
      return chars;
    }
    default: fail(std::string("'") + type_name(v) + "' object is not iterable");
  }
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.kind == Kind::kNamespace) {
    const Value* v = obj.dict->find(name);
    return v ? *v : Value::undefined("'Namespace' object has no attribute '" + name + "'");
  }
  Value m = get_method(*this, obj, name);
  if (!m.is_undefined() || m.s) return m;
  if (obj.is_dict()) {
    const Value* v = obj.dict->find(name);
    if (v) return *v;
  }
  return Value::undefined(std::string("'") + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict->find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && is_intlike(key)) {
    int64_t i = as_int(key);
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.list->size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return (*obj.list)[i];
    } else {
      auto cps = decode_utf8(*obj.s);
      int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::string(encode_utf8(cps, i, i + 1));
    }
    return Value::undefined(std::string("'") + type_name(obj) + " object' has no element " + std::to_string(as_int(key)));
  }
  if (key.is_string()) {
    if (obj.kind == Kind::kNamespace) return get_attr(obj, key.str());
    Value m = get_method(*this, obj, key.str());
    if (!m.is_undefined() || m.s) return m;
  }
  return Value::undefined(std::string("'") + type_name(obj) + " object' has no attribute " + to_repr(key));
}

// ---- statements --------------------------------------------------------------------

Interpreter::Flow Interpreter::exec_body(const std::vector<NodePtr>& body, std::string& out) {
  for (const auto& n : body) {
    Flow f = exec(*n, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Node& n, std::string& out) {
  current_ = &n;
  charge(1);
  switch (n.type) {
    case N::kText: append(out, n.name); return Flow::kNormal;
    case N::kOutput: {
      Value v = eval(*n.kids[0]);
      current_ = &n;
      append(out, to_str(v));
      return Flow::kNormal;
    }
    case N::kIf:
      return exec_body(truthy(eval(*n.kids[0])) ? n.body : n.orelse, out);
    case N::kFor: return exec_for(n, out);
    case N::kSet: exec_set(n); return Flow::kNormal;
    case N::kSetBlock: {
      std::string body;
      frames_.emplace_back();
      exec_body(n.body, body);
      frames_.pop_back();
      Value v = Value::string(std::move(body));
      for (const auto& f : n.kids) v = eval_filter(*f, &v);
      assign(n.names[0], std::move(v));
      return Flow::kNormal;
    }
    case N::kMacro: assign(n.name, make_macro(n)); return Flow::kNormal;
    case N::kCallBlock: {
      const Node& call = *n.kids[0];
      Value callee = eval(*call.kids[0]);
      CallArgs args;
      eval_args(call, 1, args);
      args.kw.emplace_back("caller", make_caller(n));
      Value v = this->call(callee, args);
      current_ = &n;
      append(out, to_str(v));
      return Flow::kNormal;
    }
    case N::kFilterBlock: {
      std::string body;
      Flow f = exec_body(n.body, body);
      Value v = Value::string(std::move(body));
      for (const auto& filter : n.kids) v = eval_filter(*filter, &v);
      append(out, to_str(v));
      return f;
    }
    case N::kBreak: return Flow::kBreak;
    case N::kContinue: return Flow::kContinue;
    case N::kScope: return exec_body(n.body, out);
    default: {
      Value v = eval(n);
      append(out, to_str(v));
      return Flow::kNormal;
    }
  }
}

Interpreter::Flow Interpreter::exec_for(const Node& n, std::string& out) {
  List items = iterate(eval(*n.kids[0]));
  auto bind = [&](const Value& item) {
    if (n.names.size() == 1) {
      assign(n.names[0], item);
      return;
    }
    List parts = iterate(item);
    if (parts.size() != n.names.size())
      fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(n.names.size()) + " names");
    for (size_t k = 0; k < parts.size(); ++k) assign(n.names[k], parts[k]);
  };
  if (n.kids[1]) {  // `for x in xs if cond`: loop.* counts only the items kept
    List kept;
    for (const Value& item : items) {
      frames_.emplace_back();
      bind(item);
      bool keep = truthy(eval(*n.kids[1]));
      frames_.pop_back();
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(n.orelse, out);
  const int64_t len = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < len; ++i) {
    Dict loop;
    loop.set(Value::string("index"), Value::integer(i + 1));
    loop.set(Value::string("index0"), Value::integer(i));
    loop.set(Value::string("revindex"), Value::integer(len - i));
    loop.set(Value::string("revindex0"), Value::integer(len - i - 1));
    loop.set(Value::string("first"), Value::boolean(i == 0));
    loop.set(Value::string("last"), Value::boolean(i == len - 1));
    loop.set(Value::string("length"), Value::integer(len));
    loop.set(Value::string("depth"), Value::integer(1));
    loop.set(Value::string("depth0"), Value::integer(0));
    loop.set(Value::string("previtem"), i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    loop.set(Value::string("nextitem"), i + 1 < len ? items[i + 1] : Value::undefined("there is no next item"));
    loop.set(Value::string("cycle"), Value::callable([i](Interpreter& in, CallArgs& a) {
               if (a.pos.empty()) in.fail("no items for cycling given");
               return a.pos[static_cast<size_t>(i) % a.pos.size()];
             }));
    // Each iteration has a scope of its own: a `set` in the body is gone at the next one.
    frames_.emplace_back();
    assign("loop", Value::make_dict(std::move(loop)));
    bind(items[i]);
    Flow f = exec_body(n.body, out);
    frames_.pop_back();
    if (f == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::exec_set(const Node& n) {
  Value v = eval(*n.kids[0]);
  current_ = &n;
  if (!n.attr.empty()) {
    const Value* ns = lookup(n.names[0]);
    if (!ns || ns->kind != Kind::kNamespace)
      fail("cannot assign attribute '" + n.attr + "' on '" + n.names[0] + "': not a namespace");
    ns->dict->set(Value::string(n.attr), std::move(v));
    return;
  }
  if (n.names.size() == 1) {
    assign(n.names[0], std::move(v));
    return;
  }
  List parts = iterate(v);
  if (parts.size() != n.names.size()) fail("cannot unpack " + std::to_string(parts.size()) + " values");
  for (size_t k = 0; k < parts.size(); ++k) assign(n.names[k], parts[k]);
}

// ---- macros ------------------------------------------------------------------------

Value Interpreter::make_macro(const Node& n) {
  // Macros see the globals and the template's top level as they are when called (Jinja2
  // resolves them from the context), plus their arguments.
  const Node* node = &n;
  return Value::callable([node](Interpreter& in, CallArgs& args) {
    std::vector<Frame> closure{in.frames_[0], in.frames_[1]};
    return in.call_macro(*node, closure, args);
  });
}

Value Interpreter::call_macro(const Node& n, const std::vector<Frame>& closure, CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth)
    fail("macro calls nested deeper than the recursion limit (" + std::to_string(limits_.max_call_depth) + ")");
  std::vector<Frame> saved = std::move(frames_);
  frames_ = closure;
  frames_.emplace_back();
  ++call_depth_;
  struct Restore {
    Interpreter& in;
    std::vector<Frame>& saved;
    ~Restore() {
      in.frames_ = std::move(saved);
      --in.call_depth_;
    }
  } restore{*this, saved};
  List varargs;
  for (size_t k = 0; k < args.pos.size(); ++k) {
    if (k < n.names.size()) {
      assign(n.names[k], args.pos[k]);
    } else {
      varargs.push_back(args.pos[k]);
    }
  }
  Dict kwargs;
  for (auto& [k, v] : args.kw) {
    bool is_param = false;
    for (const auto& p : n.names) is_param |= p == k;
    if (is_param || k == "caller") {
      assign(k, v);
    } else {
      kwargs.set(Value::string(k), v);
    }
  }
  for (size_t k = 0; k < n.names.size(); ++k) {
    bool bound = false;
    for (const auto& [name, v] : frames_.back()) bound |= name == n.names[k];
    if (!bound) assign(n.names[k], n.kids[k] ? eval(*n.kids[k]) : undefined_named(n.names[k]));
  }
  assign("varargs", Value::make_list(std::move(varargs), /*tuple=*/true));
  assign("kwargs", Value::make_dict(std::move(kwargs)));
  std::string out;
  exec_body(n.body, out);
  return Value::string(std::move(out));
}

Value Interpreter::make_caller(const Node& call_block) {
  const Node* node = &call_block;
  std::vector<Frame> closure = frames_;
  return Value::callable([node, closure](Interpreter& in, CallArgs& args) {
    std::vector<Frame> frames = closure;
    if (in.call_depth_ >= in.limits_.max_call_depth) in.fail("caller() nested deeper than the recursion limit");
    std::vector<Frame> saved = std::move(in.frames_);
    in.frames_ = std::move(frames);
    in.frames_.emplace_back();
    ++in.call_depth_;
    struct Restore {
      Interpreter& in;
      std::vector<Frame>& saved;
      ~Restore() {
        in.frames_ = std::move(saved);
        --in.call_depth_;
      }
    } restore{in, saved};
    for (size_t k = 0; k < node->names.size(); ++k) {
      const Value* given = args.get(k, node->names[k]);
      const Node* def = k + 1 < node->kids.size() ? node->kids[k + 1].get() : nullptr;
      in.assign(node->names[k], given ? *given : def ? in.eval(*def) : undefined_named(node->names[k]));
    }
    std::string out;
    in.exec_body(node->body, out);
    return Value::string(std::move(out));
  });
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (callee.kind != Kind::kCallable) fail(std::string("'") + type_name(callee) + "' object is not callable");
  const Node* at = current_;
  Value v = (*callee.fn)(*this, args);
  current_ = at;
  return v;
}

}  // namespace fdpp::jinja
