// The language, feature by feature: each snippet rendered by fdpp and by the real Jinja2
// (transformers' environment) must agree byte for byte, or both must fail. A few checks
// also pin the expected text itself, so a broken reference cannot pass silently.
#include <gtest/gtest.h>

#include "chat/jinja/json_value.h"
#include "chat/jinja/template.h"
#include "golden.h"

using namespace fdpp::jinja;

namespace {

const char* kContext = R"({
  "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "  Hi there  "},
               {"role": "assistant", "content": "Hello!", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}],
  "s": "Hello World", "u": "Grüße 世界", "n": 7, "f": 2.5, "neg": -3, "big": 12345678901234, "t": true, "no": null,
  "items": [3, 1, 2, 3], "words": ["b", "A", "c", "a"], "d": {"z": 1, "a": [1, 2], "m": {"k": "v"}},
  "people": [{"name": "Ann", "age": 30, "admin": true}, {"name": "bob", "age": 25}, {"name": "Cy", "age": 41, "admin": false}],
  "empty": [], "text": "line one\nline two\n\nline four"
})";

const char* kSnippets[] = {
    // output and literals
    "{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e-7 }} {{ 1e16 }} {{ 123456789.125 }} {{ -0.0 }} {{ true }} {{ none }} {{ 'a' 'b' }}",
    "{{ [1, 'a', none, true, 2.0, (1,), (1, 2), {'k': [1]}] }}", "{{ \"it's\" }} {{ ['it\\'s', \"q\\\"\"] }}",
    "{{ 'tab\\there\\nnew \\u00e9 \\x41 \\d' }}", "{{ undefined_thing }}|{{ d.missing }}|{{ d['missing'] }}",
    "{{ messages[1].content }}{{ messages[-1]['role'] }}{{ d.m.k }}{{ d['a'][1] }}{{ s[0] }}{{ u[-1] }}{{ items.1 }}",
    // arithmetic and operators
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
    "{{ 1 + 2 * 3 - -1 }} {{ (1 + 2) * 3 }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none ~ true }}",
    "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }}",
    "{{ 'ell' in s }} {{ 3 in items }} {{ 'z' in d }} {{ 'q' not in d }} {{ 5 not in items }} {{ 'x' in undefined_thing }}",
    "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ none or [] }} {{ not 0 }} {{ not 'a' }} {{ 'yes' if t else 'no' }} {{ 'yes' if no }}|",
    "{{ -n | abs }} {{ -1 | abs }} {{ s[::-1] }} {{ s[1:4] }} {{ s[-3:] }} {{ items[::2] }} {{ items[1:] }} {{ u[::-1] }} {{ items[5:1:-1] }}",
    // filters
    "{{ '  x  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ s | length }} {{ u | length }} {{ d | count }} {{ items | length }}",
    "{{ undefined_thing | default('dflt') }} {{ '' | default('e', true) }} {{ '' | d('e') }} {{ none | default('n') }}",
    "{{ s | upper }} {{ s | lower }} {{ 'hello wORLD-foo(bar' | title }} {{ 'hELLO world' | capitalize }} {{ u | upper }}",
    "{{ s | replace('o', '0') }} {{ s | replace('l', 'L', 2) }} {{ items | join(', ') }} {{ people | join('/', attribute='name') }}",
    "{{ items | first }} {{ items | last }} {{ s | first }} {{ d | list }} {{ 'abc' | list }} {{ d | items | list }} {{ empty | first }}|",
    "{{ d | dictsort }} {{ {'b': 1, 'A': 2, 'c': 0} | dictsort }} {{ {'b': 1, 'A': 2} | dictsort(true) }} {{ {'b': 2, 'a': 1} | dictsort(by='value', reverse=true) }}",
    "{{ people | selectattr('admin') | map(attribute='name') | list }} {{ people | rejectattr('admin') | map(attribute='name') | join(',') }}",
    "{{ people | selectattr('age', 'gt', 28) | map(attribute='name') | list }} {{ people | selectattr('name', 'equalto', 'bob') | list | length }}",
    "{{ people | selectattr('admin', 'defined') | list | length }} {{ items | select('odd') | list }} {{ items | reject('odd') | list }} {{ words | map('upper') | list }}",
    "{{ items | unique | list }} {{ words | unique | list }} {{ words | unique(case_sensitive=true) | list }} {{ people | map(attribute='missing', default='?') | list }}",
    "{{ 'x' | safe }} {{ 12 | string }} {{ [1] | string }} {{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(5) }} {{ 3.9 | int }} {{ true | int }}",
    "{{ '2.5' | float }} {{ 3 | float }} {{ 'abc' | float }} {{ f | round }} {{ 3.14159 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.4 | round(0, 'ceil') }} {{ 2.6 | round(method='floor') }} {{ 7 | round }}",
    "{{ text | indent }}|{{ text | indent(2, true) }}|{{ text | indent(2, blank=true) }}|{{ text | indent('> ') }}",
    "{{ 'one two  three, four!' | wordcount }} {{ u | wordcount }} {{ items | sum }} {{ [1.5, 2] | sum }} {{ people | sum(attribute='age') }}",
    "{{ items | min }} {{ items | max }} {{ words | min }} {{ words | max }} {{ items | sort }} {{ words | sort }} {{ words | sort(reverse=true) }} {{ people | sort(attribute='age') | map(attribute='name') | list }}",
    "{{ items | reverse | list }} {{ s | reverse }} {{ 'abc' | center(9) }}|",
    "{{ d | tojson }} {{ messages[2] | tojson }} {{ u | tojson }} {{ 'a\"b\\\\c\\n\\u0001<&>' | tojson }} {{ [1.0, 2.5, none, true] | tojson }}",
    "{{ d | tojson(indent=2) }}\n{{ d | tojson(indent=4, sort_keys=true) }}\n{{ {'a': [], 'b': {}} | tojson(indent=2) }} {{ d | tojson(separators=(',', ':')) }} {{ u | tojson(ensure_ascii=true) }}",
    // tests
    "{{ n is defined }} {{ zz is defined }} {{ zz is undefined }} {{ no is none }} {{ s is string }} {{ n is number }} {{ f is number }}",
    "{{ n is integer }} {{ f is integer }} {{ f is float }} {{ d is mapping }} {{ items is mapping }} {{ items is iterable }} {{ s is iterable }} {{ n is iterable }}",
    "{{ items is sequence }} {{ t is boolean }} {{ n is boolean }} {{ t is true }} {{ 1 is true }} {{ false is false }} {{ n is equalto 7 }} {{ n is eq 7 }} {{ n is ne 7 }}",
    "{{ 2 is in items }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ n is not odd }}",
    // methods
    "{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ '\\n\\na\\n'.lstrip('\\n') }}|",
    "{{ s.startswith('He') }} {{ s.endswith('ld') }} {{ s.startswith(('x', 'H')) }} {{ s.split() }} {{ s.split('o') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a  b '.split() }}",
    "{{ s.upper() }} {{ s.lower() }} {{ s.replace('l', '_') }} {{ 'hello wORLD it\\'s'.title() }} {{ s.find('o') }} {{ s.find('q') }} {{ u.find('世') }} {{ s.count('l') }} {{ '-'.join(words) }} {{ s.capitalize() }}",
    "{{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('z') }} {{ d.get('q') }} {{ d.get('q', 'dflt') }} {{ messages[0].get('role') }}",
    "{% set l = [1] %}{{ l.append(2) }}",
    // undefined semantics
    "{{ zz.attr }}", "{{ zz + 1 }}", "{{ zz | length }} {{ zz | list }} {{ zz | join }} {{ zz | upper }}|{% for x in zz %}x{% endfor %}|{{ zz ~ 'a' }}",
    "{{ zz | tojson }}", "{{ zz == zz }} {{ zz != none }} {{ d.missing is defined }} {{ d.missing.deeper is defined }}",
    "{{ raise_exception('stop: ' ~ n) }}", "{{ messages[0].content.nope }}|{{ none.attr }}|{{ n.attr }}|",
    // statements, loops
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
    "{% for i in items %}{{ loop.previtem }}-{{ i }}-{{ loop.nextitem }}/{{ loop.cycle('a', 'b') }} {% endfor %}",
    "{% for i in items if i > 1 %}{{ i }}{{ loop.index }}{{ loop.last }} {% else %}none{% endfor %}{% for i in empty %}x{% else %}empty{% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
    "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %} {{ range(2, 10, 3) | list }} {{ range(5, 0, -2) | list }}",
    "{% for m in messages %}{% if loop.first %}{% set x = 1 %}{% endif %}[{{ x }}]{% endfor %}{% set y = 1 %}{% for i in items %}{% set y = y + i %}{% endfor %}{{ y }}",
    "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}{% if no %}x{% elif zz %}y{% endif %}",
    "{% set ns = namespace(count=0, found=false) %}{% for i in items %}{% set ns.count = ns.count + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.found }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t }}{% set block %}inner {{ n }}{% endset %}[{{ block }}]{% set up | upper %}shout{% endset %}{{ up }}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }}",
    "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}",
    "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}",
    "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(item) each(items) %}[{{ item }}]{% endcall %}",
    "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * (fact(k - 1) | int) }}{% endif %}{% endmacro %}{{ fact(5) }}",
    "{% filter upper %}shout {{ s }}{% endfilter %}{% filter trim | replace('a', 'A') %}  banana  {% endfilter %}",
    "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ strftime_now('%Y') | length }} {{ 'x' if strftime_now is defined }}",
    "{% raw %}{{ not rendered }} {% if %}{% endraw %}|{# a comment #}|",
    // whitespace control: trim_blocks, lstrip_blocks, - and +
    "a\n  {% if true %}\n    b\n  {% endif %}\nc\n", "a  {%- if true -%}  b  {%- endif -%}  c", "a\n  {%+ if true %}b{% endif %}\n",
    "{% for i in items %}\n  {{ i }}\n{% endfor %}\n", "x {{- ' y ' -}} z\n\n", "  {# comment #}\nline\n  {#- c -#}  tail",
    "{% if true %}  \n{% endif %}", "\r\nwin\r\n{% if true %}\r\nx\r\n{% endif %}\r\n",
    "{%- for m in messages -%}\n  {{- m.role -}}\n{%- endfor -%}", "{% generation %}gen {{ n }}{% endgeneration %}",
    // errors: syntax and runtime
    "{% if %}", "{{ 1 + }}", "{% for x in %}{% endfor %}", "{% endif %}", "{{ 'unterminated }}", "{% set x = 1 %}{% endfor %}",
    "{{ 1 / 0 }}", "{{ 'a' + 1 }}", "{{ 'a' < 1 }}", "{{ n() }}", "{{ unknownfilter | nofilter }}", "{{ n is nosuchtest }}",
    "{% for i in n %}{% endfor %}", "{{ items[1:2:0] }}",
};

Value context() { return from_json(nlohmann::ordered_json::parse(kContext)); }

}  // namespace

TEST(JinjaFeatures, AgreeWithJinja2) {
  ASSERT_TRUE(fdpp::test::jinja2_available());
  std::vector<fdpp::test::GoldenJob> jobs;
  for (const char* s : kSnippets) jobs.push_back({s, {}, nlohmann::ordered_json::parse(kContext)});
  auto golden = fdpp::test::render_with_jinja2(jobs);
  ASSERT_EQ(golden.size(), jobs.size());
  Value ctx = context();
  int same = 0, errors = 0;
  for (size_t k = 0; k < jobs.size(); ++k) {
    auto t = Template::parse(kSnippets[k]);
    fdpp::Result<std::string> out = t.ok() ? t->render(*ctx.dict) : fdpp::Result<std::string>(t.status());
    if (!golden[k].ok) {
      EXPECT_FALSE(out.ok()) << "snippet " << k << ": " << kSnippets[k] << "\nJinja2 raised " << golden[k].text
                             << "\nfdpp rendered: " << out.value();
      errors += !out.ok();
      continue;
    }
    if (!out.ok()) {
      ADD_FAILURE() << "snippet " << k << ": " << kSnippets[k] << "\n" << out.status().message();
      continue;
    }
    EXPECT_EQ(out.value(), golden[k].text) << "snippet " << k << ": " << kSnippets[k];
    same += out.value() == golden[k].text;
  }
  std::printf("%zu snippets: %d identical, %d errors on both sides\n", jobs.size(), same, errors);
}

TEST(JinjaFeatures, PinnedResults) {
  Value ctx = context();
  auto render = [&](const char* s) {
    auto t = Template::parse(s);
    if (!t.ok()) return "ERROR " + t.status().message();
    auto r = t->render(*ctx.dict);
    return r.ok() ? r.value() : "ERROR " + r.status().message();
  };
  EXPECT_EQ(render("{{ [1, 'a', none, true, 2.0] }}"), "[1, 'a', None, True, 2.0]");
  EXPECT_EQ(render("{{ 1e-5 }} {{ 1e16 }} {{ 0.1 + 0.2 }}"), "1e-05 1e+16 0.30000000000000004");
  EXPECT_EQ(render("{{ u | tojson }}"), "\"Grüße 世界\"");
  EXPECT_EQ(render("a\n  {% if true %}\n    b\n  {% endif %}\nc\n"), "a\n    b\nc");
  EXPECT_EQ(render("{{ s[::-1] }}"), "dlroW olleH");
  EXPECT_EQ(render("{{ zz }}|{{ d.missing }}|"), "||");
}

TEST(JinjaFeatures, ErrorsCarryLineAndColumn) {
  auto syntax = Template::parse("line one\n{{ 1 + }}");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("line 2, column"), std::string::npos) << syntax.status().message();
  auto t = Template::parse("ok\n\n  {{ raise_exception('custom message') }}");
  ASSERT_TRUE(t.ok());
  auto r = t->render({});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3, column"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("custom message"), std::string::npos) << r.status().message();
}

TEST(JinjaFeatures, LimitsAreConfigurable) {
  auto t = Template::parse("{% for i in range(1000) %}{{ i }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->render({}).ok());
  EXPECT_FALSE(t->render({}, Limits{.max_steps = 500}).ok());
  EXPECT_FALSE(t->render({}, Limits{.max_output = 100}).ok());
  auto deep = Template::parse("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}");
  ASSERT_TRUE(deep.ok());
  EXPECT_TRUE(deep->render({}).ok());
  EXPECT_FALSE(deep->render({}, Limits{.max_call_depth = 10}).ok());
}
