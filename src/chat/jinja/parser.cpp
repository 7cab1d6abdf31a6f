#include "chat/jinja/parser.h"

#include <initializer_list>

#include "chat/jinja/error.h"

namespace fdpp::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  std::vector<NodePtr> run() {
    std::string end;
    auto body = parse_body({}, end);
    return body;
  }

 private:
  // ---- tokens --------------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (p_ < t_.size() - 1) ++p_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).type == Tok::kOp && peek(ahead).text == op;
  }
  bool is_name(const char* n, size_t ahead = 0) const {
    return peek(ahead).type == Tok::kName && peek(ahead).text == n;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& msg, const Token& at) const { throw Error(msg, at.line, at.column); }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case Tok::kEof: return "end of template";
      case Tok::kBlockEnd: return "end of statement block";
      case Tok::kVarEnd: return "end of print statement";
      case Tok::kText: return "template text";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected '") + op + "', got " + describe(peek()), peek());
  }
  std::string expect_name() {
    if (peek().type != Tok::kName) fail("expected a name, got " + describe(peek()), peek());
    return next().text;
  }
  void expect_block_end() {
    if (peek().type != Tok::kBlockEnd) fail("expected end of statement block, got " + describe(peek()), peek());
    next();
  }
  NodePtr node(N type, const Token& at) {
    auto n = std::make_unique<Node>();
    n->type = type;
    n->line = at.line;
    n->column = at.column;
    return n;
  }
  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxParseDepth) p.fail("template nested too deeply", p.peek());
    }
    ~Depth() { --p.depth_; }
  };

  // ---- statements ------------------------------------------------------------------
  // Statements up to a {% NAME %} with NAME in `ends` (consumed up to the name; `end` gets it).
  std::vector<NodePtr> parse_body(std::initializer_list<const char*> ends, std::string& end) {
    Depth d(*this);
    std::vector<NodePtr> body;
    while (true) {
      const Token& t = peek();
      if (t.type == Tok::kEof) {
        if (ends.size() == 0) return body;
        std::string want;
        for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        fail("unexpected end of template, expected " + want, t);
      }
      if (t.type == Tok::kText) {
        auto n = node(N::kText, t);
        n->name = next().text;
        body.push_back(std::move(n));
      } else if (t.type == Tok::kVarBegin) {
        next();
        auto n = node(N::kOutput, t);
        n->kids.push_back(parse_tuple());
        if (peek().type != Tok::kVarEnd) fail("expected end of print statement, got " + describe(peek()), peek());
        next();
        body.push_back(std::move(n));
      } else if (t.type == Tok::kBlockBegin) {
        next();
        const Token& kw = peek();
        if (kw.type != Tok::kName) fail("expected a statement name, got " + describe(kw), kw);
        for (const char* e : ends) {
          if (kw.text == e) {
            end = next().text;
            return body;
          }
        }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t), t);
      }
    }
  }

  NodePtr parse_statement() {
    const Token& kw = next();
    const std::string& k = kw.text;
    if (k == "if") return parse_if(kw);
    if (k == "for") return parse_for(kw);
    if (k == "set") return parse_set(kw);
    if (k == "macro") return parse_macro(kw);
    if (k == "call") return parse_call_block(kw);
    if (k == "filter") {
      auto n = node(N::kFilterBlock, kw);
      parse_filter_chain(*n);
      expect_block_end();
      std::string end;
      n->body = parse_body({"endfilter"}, end);
      expect_block_end();
      return n;
    }
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) fail("'" + k + "' outside a loop", kw);
      expect_block_end();
      return node(k == "break" ? N::kBreak : N::kContinue, kw);
    }
    if (k == "generation") {  // transformers' AssistantTracker tag: the body renders in place
      expect_block_end();
      auto n = node(N::kScope, kw);
      std::string end;
      n->body = parse_body({"endgeneration"}, end);
      expect_block_end();
      return n;
    }
    fail("unknown statement '" + k + "'", kw);
  }

  NodePtr parse_if(const Token& kw) {
    auto n = node(N::kIf, kw);
    n->kids.push_back(parse_tuple());
    expect_block_end();
    std::string end;
    n->body = parse_body({"elif", "else", "endif"}, end);
    if (end == "elif") {
      n->orelse.push_back(parse_if(t_[p_ - 1]));
      return n;
    }
    if (end == "else") {
      expect_block_end();
      n->orelse = parse_body({"endif"}, end);
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_for(const Token& kw) {
    auto n = node(N::kFor, kw);
    bool paren = accept_op("(");
    n->names.push_back(expect_name());
    while (accept_op(",")) {
      if (is_name("in") || is_op(")")) break;
      n->names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    if (!accept_name("in")) fail("expected 'in' in a for loop, got " + describe(peek()), peek());
    n->kids.push_back(parse_tuple(/*no_condexpr=*/true));
    n->kids.push_back(accept_name("if") ? parse_expression() : nullptr);
    if (accept_name("recursive")) fail("recursive loops are not supported", kw);
    expect_block_end();
    ++loop_depth_;
    std::string end;
    n->body = parse_body({"else", "endfor"}, end);
    --loop_depth_;
    if (end == "else") {
      expect_block_end();
      n->orelse = parse_body({"endfor"}, end);
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set(const Token& kw) {
    const Token& target = peek();
    std::string name = expect_name();
    if (accept_op(".")) {
      auto n = node(N::kSet, kw);
      n->names.push_back(name);
      n->attr = expect_name();
      expect_op("=");
      n->kids.push_back(parse_tuple());
      expect_block_end();
      return n;
    }
    std::vector<std::string> names{name};
    while (accept_op(",")) names.push_back(expect_name());
    if (accept_op("=")) {
      auto n = node(N::kSet, kw);
      n->names = std::move(names);
      n->kids.push_back(parse_tuple());
      expect_block_end();
      return n;
    }
    if (names.size() != 1) fail("expected '=' after the names of a set", peek());
    auto n = node(N::kSetBlock, target);
    n->names = std::move(names);
    if (is_op("|")) parse_filter_chain(*n);
    expect_block_end();
    std::string end;
    n->body = parse_body({"endset"}, end);
    expect_block_end();
    return n;
  }

  void parse_params(Node& n) {
    expect_op("(");
    while (!is_op(")")) {
      if (!n.names.empty()) expect_op(",");
      if (is_op(")")) break;
      n.names.push_back(expect_name());
      n.kids.push_back(accept_op("=") ? parse_expression() : nullptr);
    }
    next();
  }

  NodePtr parse_macro(const Token& kw) {
    auto n = node(N::kMacro, kw);
    n->name = expect_name();
    parse_params(*n);
    expect_block_end();
    std::string end;
    n->body = parse_body({"endmacro"}, end);
    if (peek().type == Tok::kName) next();  // {% endmacro name %}
    expect_block_end();
    return n;
  }

  NodePtr parse_call_block(const Token& kw) {
    auto n = node(N::kCallBlock, kw);
    NodePtr params = node(N::kMacro, kw);
    if (is_op("(")) parse_params(*params);
    auto call = parse_expression();
    if (call->type != N::kCall) fail("expected a call after {% call %}", kw);
    n->names = std::move(params->names);
    n->kids.push_back(std::move(call));
    for (auto& d : params->kids) n->kids.push_back(std::move(d));
    expect_block_end();
    std::string end;
    n->body = parse_body({"endcall"}, end);
    expect_block_end();
    return n;
  }

  // `name(args) | name ...` of a filter block or block set: kFilter nodes without input.
  void parse_filter_chain(Node& n) {
    accept_op("|");
    do {
      auto f = node(N::kFilter, peek());
      f->name = expect_name();
      f->kids.push_back(nullptr);
      if (is_op("(")) parse_call_args(*f);
      n.kids.push_back(std::move(f));
    } while (accept_op("|"));
  }

  // ---- expressions -----------------------------------------------------------------
  NodePtr parse_tuple(bool no_condexpr = false) {
    const Token& at = peek();
    auto first = no_condexpr ? parse_or() : parse_expression();
    if (!is_op(",")) return first;
    auto t = node(N::kTuple, at);
    t->kids.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().type == Tok::kBlockEnd || peek().type == Tok::kVarEnd || is_name("if") || is_op(")")) break;
      t->kids.push_back(no_condexpr ? parse_or() : parse_expression());
    }
    return t;
  }

  NodePtr parse_expression() {
    Depth d(*this);
    const Token& at = peek();
    auto expr = parse_or();
    while (is_name("if")) {
      next();
      auto c = node(N::kCondExpr, at);
      c->kids.push_back(std::move(expr));
      c->kids.push_back(parse_or());
      c->kids.push_back(accept_name("else") ? parse_expression() : nullptr);
      expr = std::move(c);
    }
    return expr;
  }

  NodePtr binary(const Token& at, const std::string& op, NodePtr l, NodePtr r) {
    auto n = node(N::kBinary, at);
    n->name = op;
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }

  NodePtr parse_or() {
    auto l = parse_and();
    while (is_name("or")) {
      const Token& at = next();
      l = binary(at, "or", std::move(l), parse_and());
    }
    return l;
  }
  NodePtr parse_and() {
    auto l = parse_not();
    while (is_name("and")) {
      const Token& at = next();
      l = binary(at, "and", std::move(l), parse_not());
    }
    return l;
  }
  NodePtr parse_not() {
    if (is_name("not")) {
      Depth d(*this);
      auto n = node(N::kUnary, next());
      n->name = "not";
      n->kids.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }
  NodePtr parse_compare() {
    const Token& at = peek();
    auto first = parse_math1();
    NodePtr cmp;
    while (true) {
      std::string op;
      if (peek().type == Tok::kOp && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                      peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(N::kCompare, at);
        cmp->kids.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->kids.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }
  NodePtr parse_math1() {
    auto l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = next();
      l = binary(at, at.text, std::move(l), parse_concat());
    }
    return l;
  }
  NodePtr parse_concat() {
    auto l = parse_math2();
    while (is_op("~")) {
      const Token& at = next();
      l = binary(at, "~", std::move(l), parse_math2());
    }
    return l;
  }
  NodePtr parse_math2() {
    auto l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = next();
      l = binary(at, at.text, std::move(l), parse_pow());
    }
    return l;
  }
  NodePtr parse_pow() {
    auto l = parse_unary(true);
    while (is_op("**")) {
      const Token& at = next();
      l = binary(at, "**", std::move(l), parse_unary(true));
    }
    return l;
  }
  NodePtr parse_unary(bool with_filter) {
    Depth d(*this);
    NodePtr n;
    if (is_op("-") || is_op("+")) {
      n = node(N::kUnary, peek());
      n->name = next().text;
      n->kids.push_back(parse_unary(false));
    } else {
      n = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(n)) : std::move(n);
  }

  NodePtr parse_primary() {
    Depth d(*this);
    const Token& t = peek();
    if (t.type == Tok::kName) {
      next();
      if (t.text == "true" || t.text == "True") return literal(t, Value::boolean(true));
      if (t.text == "false" || t.text == "False") return literal(t, Value::boolean(false));
      if (t.text == "none" || t.text == "None") return literal(t, Value::none());
      auto n = node(N::kName, t);
      n->name = t.text;
      return n;
    }
    if (t.type == Tok::kString) {
      std::string s = next().text;
      while (peek().type == Tok::kString) s += next().text;  // adjacent literals concatenate
      return literal(t, Value::string(std::move(s)));
    }
    if (t.type == Tok::kInt) return literal(next(), Value::integer(t.ival));
    if (t.type == Tok::kFloat) return literal(next(), Value::number(t.fval));
    if (accept_op("(")) {
      if (accept_op(")")) {
        auto n = node(N::kTuple, t);
        return n;
      }
      auto e = parse_tuple();
      if (e->type == N::kTuple || !is_op(")")) {
        expect_op(")");
        return e;
      }
      next();
      return e;
    }
    if (accept_op("[")) {
      auto n = node(N::kList, t);
      while (!is_op("]")) {
        if (!n->kids.empty()) expect_op(",");
        if (is_op("]")) break;
        n->kids.push_back(parse_expression());
      }
      next();
      return n;
    }
    if (accept_op("{")) {
      auto n = node(N::kDict, t);
      while (!is_op("}")) {
        if (!n->kids.empty()) expect_op(",");
        if (is_op("}")) break;
        n->kids.push_back(parse_expression());
        expect_op(":");
        n->kids.push_back(parse_expression());
      }
      next();
      return n;
    }
    fail("unexpected " + describe(t), t);
  }

  NodePtr literal(const Token& at, Value v) {
    auto n = node(N::kLiteral, at);
    n->value = std::move(v);
    return n;
  }

  NodePtr parse_postfix(NodePtr n) {
    while (true) {
      Depth d(*this);
      const Token& at = peek();
      if (accept_op(".")) {
        auto a = node(N::kGetAttr, at);
        if (peek().type == Tok::kInt) {
          a->type = N::kGetItem;
          a->kids.push_back(std::move(n));
          a->kids.push_back(literal(peek(), Value::integer(peek().ival)));
          next();
        } else {
          a->name = expect_name();
          a->kids.push_back(std::move(n));
        }
        n = std::move(a);
      } else if (accept_op("[")) {
        n = parse_subscript(at, std::move(n));
      } else if (is_op("(")) {
        auto c = node(N::kCall, at);
        c->kids.push_back(std::move(n));
        parse_call_args(*c);
        n = std::move(c);
      } else {
        return n;
      }
    }
  }

  NodePtr parse_subscript(const Token& at, NodePtr target) {
    NodePtr parts[3];
    bool slice = false;
    if (!is_op(":")) parts[0] = parse_expression();
    if (accept_op(":")) {
      slice = true;
      if (!is_op("]") && !is_op(":")) parts[1] = parse_expression();
      if (accept_op(":") && !is_op("]")) parts[2] = parse_expression();
    }
    expect_op("]");
    auto n = node(slice ? N::kSlice : N::kGetItem, at);
    n->kids.push_back(std::move(target));
    if (!slice) {
      if (!parts[0]) fail("empty subscript", at);
      n->kids.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) n->kids.push_back(std::move(p));
    }
    return n;
  }

  void parse_call_args(Node& n) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (peek().type == Tok::kName && is_op("=", 1)) {
        std::string k = next().text;
        next();
        n.kwargs.emplace_back(k, parse_expression());
      } else {
        if (!n.kwargs.empty()) fail("a positional argument follows a keyword argument", peek());
        n.kids.push_back(parse_expression());
      }
    }
    next();
  }

  NodePtr parse_filter_expr(NodePtr n) {
    while (true) {
      Depth d(*this);
      const Token& at = peek();
      if (accept_op("|")) {
        auto f = node(N::kFilter, at);
        f->name = expect_name();
        f->kids.push_back(std::move(n));
        if (is_op("(")) parse_call_args(*f);
        n = parse_postfix(std::move(f));
      } else if (is_name("is")) {
        next();
        auto t = node(N::kTest, at);
        t->negated = accept_name("not");
        t->name = expect_name();
        t->kids.push_back(std::move(n));
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((peek().type == Tok::kName && !is_name("else") && !is_name("or") && !is_name("and") &&
                    !is_name("if") && !is_name("is") && !is_name("in") && !is_name("not")) ||
                   peek().type == Tok::kString || peek().type == Tok::kInt || peek().type == Tok::kFloat ||
                   is_op("[") || is_op("{") || is_op("-")) {
          // `x is divisibleby 3`: one argument without parentheses
          t->kids.push_back(is_op("-") ? parse_unary(false) : parse_postfix(parse_primary()));
        }
        n = std::move(t);
      } else {
        return n;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t p_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

std::vector<NodePtr> parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace fdpp::jinja
