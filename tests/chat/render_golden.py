#!/usr/bin/env python3
"""Renders a chat template as transformers' apply_chat_template does, with the real Jinja2.

usage: render_golden.py (--template FILE | --config tokenizer_config.json) CONTEXT.json
CONTEXT.json: {"messages": [...], "tools": [...]|null, "add_generation_prompt": bool, ...extra}.
Writes the rendered text to stdout as UTF-8 bytes; a template error goes to stderr, exit 3.
The environment copies transformers/utils/chat_template_utils.py (_compile_jinja_template).
"""
import json
import sys
from datetime import datetime

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("python3-jinja2 is missing: apt-get install python3-jinja2 (scripts/install_deps.sh)\n")
    sys.exit(2)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


class Generation(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def main():
    args = sys.argv[1:]
    special = {}
    if args[0] == "--config":
        cfg = json.load(open(args[1], encoding="utf-8"))
        source = cfg["chat_template"]
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                special[key] = v
    else:
        source = open(args[1], encoding="utf-8", newline="").read()
    ctx = json.load(open(args[2], encoding="utf-8"))
    if isinstance(source, list):
        names = {t["name"]: t["template"] for t in source}
        source = names["tool_use"] if ctx.get("tools") is not None and "tool_use" in names else names["default"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    kwargs = dict(special)
    messages = ctx.pop("messages")
    tools = ctx.pop("tools", None)
    documents = ctx.pop("documents", None)
    add_generation_prompt = ctx.pop("add_generation_prompt", False)
    kwargs.update(ctx)
    try:
        out = env.from_string(source).render(messages=messages, tools=tools, documents=documents,
                                             add_generation_prompt=add_generation_prompt, **kwargs)
    except Exception as e:  # TemplateError, or the TypeError of str + list: a render error either way
        sys.stderr.write("%s: %s\n" % (type(e).__name__, e))
        sys.exit(3)
    sys.stdout.buffer.write(out.encode("utf-8", "surrogatepass"))


if __name__ == "__main__":
    main()
