// The syntax tree the parser builds and the interpreter walks: one node type, its fields
// used per kind as noted (a tagged struct rather than a class hierarchy: the tree is
// small, built once per template and only read afterwards).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/jinja/value.h"

namespace fdpp::jinja {

enum class N : uint8_t {
  // expressions
  kLiteral,   // value
  kName,      // name
  kList,      // kids: items
  kTuple,     // kids: items
  kDict,      // kids: key, value, key, value...
  kGetAttr,   // kids[0].name
  kGetItem,   // kids[0][kids[1]]
  kSlice,     // kids[0][kids[1]:kids[2]:kids[3]], absent parts null
  kCall,      // kids[0](kids[1..], kwargs)
  kFilter,    // kids[0] | name(kids[1..], kwargs); kids[0] null inside a filter block
  kTest,      // kids[0] is [not] name(kids[1..]); negated
  kUnary,     // name ("not", "-", "+") kids[0]
  kBinary,    // kids[0] name kids[1]: + - * / // % ** ~ and or
  kCompare,   // kids[0] ops[0] kids[1] ops[1] kids[2]...: == != < <= > >= in notin
  kCondExpr,  // kids[0] if kids[1] else kids[2] (kids[2] null: undefined)
  // statements
  kText,         // name: the text
  kOutput,       // {{ kids[0] }}
  kIf,           // if kids[0]: body else: orelse (an elif is an kIf alone in orelse)
  kFor,          // for names in kids[0] [if kids[1]]: body else: orelse
  kSet,          // set names = kids[0]; attr: `set names[0].attr = ...`
  kSetBlock,     // set names[0] %}body{% endset; kids: filters applied to the body
  kMacro,        // macro name(names = kids defaults, null: none): body
  kCallBlock,    // call(names) kids[0] %}body{% endcall
  kFilterBlock,  // filter kids (chain) %}body{% endfilter
  kBreak,
  kContinue,
  kScope,        // a block whose body renders in place ({% generation %}, {% with %})
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  N type;
  int line = 0, column = 0;
  std::string name;
  std::string attr;
  Value value;
  bool negated = false;
  std::vector<NodePtr> kids;
  std::vector<std::pair<std::string, NodePtr>> kwargs;
  std::vector<std::string> names;
  std::vector<std::string> ops;
  std::vector<NodePtr> body, orelse;
};

}  // namespace fdpp::jinja
