#!/usr/bin/env python3
"""Writes clients/python/ctxd_client/types.py from protocol/openrpc.json: a TypedDict (or
an alias) per schema of `components.schemas`, and `Methods` / `AsyncMethods`, a typed
method per RPC method (`session.create` -> `session_create(*, cwd, ...)`), which the
clients inherit. `--check` fails when the file is stale (tests/clients.rs runs it so).

    scripts/openrpc-py-types.py [--check]
"""

import json
import keyword
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "protocol" / "openrpc.json"
OUT = ROOT / "clients" / "python" / "ctxd_client" / "types.py"


def py(schema):
    """The Python type (as source text) of a JSON schema (the subset schemars writes)."""
    if schema is True or schema == {} or not isinstance(schema, dict):
        return "Any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            return union([py(s) for s in schema[combo]])
    if "allOf" in schema:
        parts = [py(s) for s in schema["allOf"]]
        return parts[0] if len(parts) == 1 else "Dict[str, Any]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return union([py({**schema, "type": k}) for k in kind])
    return {
        "null": "None",
        "boolean": "bool",
        "integer": "int",
        "number": "float",
        "string": "str",
    }.get(kind) or (f"List[{py(schema.get('items', {}))}]" if kind == "array" else "Dict[str, Any]")


def union(parts):
    unique = list(dict.fromkeys(parts))
    if len(unique) == 1:
        return unique[0]
    if "None" in unique:
        rest = [p for p in unique if p != "None"]
        return f"Optional[{rest[0] if len(rest) == 1 else 'Union[' + ', '.join(rest) + ']'}]"
    return "Union[" + ", ".join(unique) + "]"


def snake(method):
    return method.replace(".", "_")


def doc_lines(text, indent):
    if not text:
        return []
    text = text.replace('"""', "'''").replace("\\", "\\\\")
    lines = text.splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [f"{indent}{l}".rstrip() for l in lines[1:]] + [f'{indent}"""']


def typed_dict(name, schema):
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    def fields(names):
        return "{" + ", ".join(f"{json.dumps(n)}: {json.dumps(py(props[n]))}" for n in names) + "}"
    req = [n for n in props if n in required]
    opt = [n for n in props if n not in required]
    out = [
        f"_{name}Required = TypedDict({json.dumps('_' + name + 'Required')}, {fields(req)})",
        f"_{name}Optional = TypedDict({json.dumps('_' + name + 'Optional')}, {fields(opt)}, total=False)",
        "",
        "",
        f"class {name}(_{name}Required, _{name}Optional):",
    ]
    body = doc_lines(schema.get("description"), "    ")
    out += body or ["    pass"]
    return out


def method(m, is_async):
    name = snake(m["name"])
    params = m["params"]
    args = []
    for p in params:
        t = py(p["schema"])
        arg = p["name"] + ("_" if keyword.iskeyword(p["name"]) else "")
        args.append(f"{arg}: {t}" if p.get("required") else f"{arg}: Optional[{t}] = None" if not t.startswith("Optional[") else f"{arg}: {t} = None")
    sig = ", ".join(["self"] + (["*"] + args if args else []))
    result = py(m["result"]["schema"])
    d = "async def" if is_async else "def"
    call = "await self.call" if is_async else "self.call"
    lines = [f"    {d} {name}({sig}) -> {result}:"]
    lines += doc_lines(m.get("summary"), "        ")
    pairs = ", ".join(
        f"({json.dumps(p['name'])}, {p['name'] + ('_' if keyword.iskeyword(p['name']) else '')})" for p in params
    )
    lines.append(f"        params = {{k: v for k, v in [{pairs}] if v is not None}}" if params else "        params: Dict[str, Any] = {}")
    lines.append(f"        return {call}({json.dumps(m['name'])}, **params)")
    return lines


def generate():
    doc = json.loads(DOC.read_text())
    out = [
        f'"""Generated from protocol/openrpc.json by scripts/openrpc-py-types.py: do not edit.',
        "",
        f"OpenRPC {doc['openrpc']}, {doc['info']['title']} {doc['info']['version']}: a TypedDict per schema, and",
        "`Methods` / `AsyncMethods`, one typed method per RPC method.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Dict, List, Literal, Optional, TypedDict, Union",
        "",
    ]
    for name, schema in sorted(doc["components"]["schemas"].items()):
        out.append("")
        if isinstance(schema, dict) and (schema.get("type") == "object" or "properties" in schema) and not any(
            k in schema for k in ("anyOf", "oneOf", "allOf")
        ) and schema.get("properties"):
            out += typed_dict(name, schema)
        else:
            out.append(f"{name} = {json.dumps(py(schema))}")
        out.append("")
    for is_async, cls in ((False, "Methods"), (True, "AsyncMethods")):
        out += ["", f"class {cls}:", '    """Every method of the document, typed; `call` does the work."""', ""]
        out.append(f"    {'async def' if is_async else 'def'} call(self, method: str, **params: Any) -> Any:  # pragma: no cover")
        out.append("        raise NotImplementedError")
        for m in doc["methods"]:
            out.append("")
            out += method(m, is_async)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main():
    text = generate()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            sys.exit(f"{OUT.relative_to(ROOT)} is stale: run scripts/openrpc-py-types.py")
        return
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text.splitlines())} lines)")


if __name__ == "__main__":
    main()
