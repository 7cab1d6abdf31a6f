// Tokens -> syntax tree: a recursive-descent parser following Jinja2's grammar and
// operator precedence (jinja2/parser.py): conditional < or < and < not < comparisons <
// + - < ~ < * / // % < ** < unary - + < postfix (. [] ()) and filters/tests.
#pragma once

#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace fdpp::jinja {

// Nesting deeper than this (brackets, unary operators, blocks) is a parse error, so a
// hostile template cannot overflow the native stack.
inline constexpr int kMaxParseDepth = 200;

// The template's top-level statements. Throws jinja::Error with the token's position.
std::vector<NodePtr> parse(const std::vector<Token>& tokens);

}  // namespace fdpp::jinja
