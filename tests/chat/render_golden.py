#!/usr/bin/env python3
"""Renders a chat template as transformers' apply_chat_template does, with the real Jinja2.

usage: render_golden.py JOBS.json
JOBS.json: a list of {"template": TEXT} or {"config": tokenizer_config.json}, each with
"context": {"messages": [...], "tools": [...]|null, "add_generation_prompt": bool, ...extra}.
Writes a JSON list of {"ok": true, "text": ...} or {"ok": false, "error": ...}, one per job:
one process renders them all. The environment copies transformers/utils/chat_template_utils.py
(_compile_jinja_template), the variables apply_chat_template's render call.
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


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def template_of(job):
    """The template source and special tokens of a job: {"template": TEXT} or {"config": PATH}."""
    special = {}
    if job.get("config"):
        cfg = json.load(open(job["config"], encoding="utf-8"))
        source = cfg["chat_template"]
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                special[key] = v
    else:
        source = job["template"]
    return source, special


def render(env, job):
    source, special = template_of(job)
    ctx = dict(job["context"])
    if isinstance(source, list):
        names = {t["name"]: t["template"] for t in source}
        source = names["tool_use"] if ctx.get("tools") is not None and "tool_use" in names else names["default"]
    kwargs = dict(special)
    messages = ctx.pop("messages", [])
    tools = ctx.pop("tools", None)
    documents = ctx.pop("documents", None)
    add_generation_prompt = ctx.pop("add_generation_prompt", False)
    kwargs.update(ctx)
    return env.from_string(source).render(messages=messages, tools=tools, documents=documents,
                                          add_generation_prompt=add_generation_prompt, **kwargs)


def main():
    """usage: render_golden.py JOBS.json: a list of jobs in, a list of {"ok", "text"|"error"} out."""
    jobs = json.load(open(sys.argv[1], encoding="utf-8"))
    env = make_env()
    results = []
    for job in jobs:
        try:
            results.append({"ok": True, "text": render(env, job)})
        except Exception as e:  # TemplateError, or a TypeError such as str + list: a render error either way
            results.append({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})
    sys.stdout.write(json.dumps(results, ensure_ascii=True))


if __name__ == "__main__":
    main()
