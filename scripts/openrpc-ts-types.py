#!/usr/bin/env python3
"""Writes clients/typescript/types.d.ts from protocol/openrpc.json: an interface or type
per schema of `components.schemas`, and `Methods`, mapping every method name to its
params (one object, by name) and its result. `--check` fails when the file is stale
(tests/clients.rs runs it so).

    scripts/openrpc-ts-types.py [--check]
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "protocol" / "openrpc.json"
OUT = ROOT / "clients" / "typescript" / "types.d.ts"

IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def key(name):
    return name if IDENT.match(name) else json.dumps(name)


def comment(text, indent):
    if not text:
        return []
    lines = text.replace("*/", "*\\/").splitlines()
    return [f"{indent}/**"] + [f"{indent} * {l}".rstrip() for l in lines] + [f"{indent} */"]


def ts(schema, indent=""):
    """The TypeScript type of a JSON schema (the subset schemars writes)."""
    if schema is True or schema == {}:
        return "unknown"
    if schema is False:
        return "never"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            parts = [ts(s, indent) for s in schema[combo]]
            own = {k: v for k, v in schema.items() if k not in (combo, "description", "default")}
            base = ts(own, indent) if own.get("properties") else None
            union = " | ".join(f"({p})" if " | " in p else p for p in parts)
            return f"{base} & ({union})" if base else union
    if "allOf" in schema:
        return " & ".join(ts(s, indent) for s in schema["allOf"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(ts({**schema, "type": k}, indent) for k in kind)
    if kind == "null":
        return "null"
    if kind == "boolean":
        return "boolean"
    if kind in ("integer", "number"):
        return "number"
    if kind == "string":
        return "string"
    if kind == "array":
        item = ts(schema.get("items", {}), indent)
        return f"Array<{item}>"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        inner = indent + "  "
        lines = ["{"]
        for name, sub in props.items():
            lines += comment(sub.get("description") if isinstance(sub, dict) else None, inner)
            optional = "" if name in required else "?"
            lines.append(f"{inner}{key(name)}{optional}: {ts(sub, inner)};")
        extra = schema.get("additionalProperties")
        if extra not in (None, False):
            lines.append(f"{inner}[key: string]: {'unknown' if extra is True else 'unknown'};")
        if len(lines) == 1:
            # Not `Record<...>`: the document has a schema of that name.
            return "{ [key: string]: unknown }" if extra is not False else "{ [key: string]: never }"
        lines.append(indent + "}")
        return "\n".join(lines)
    return "unknown"


def generate():
    doc = json.loads(DOC.read_text())
    out = [
        "// Generated from protocol/openrpc.json by scripts/openrpc-ts-types.py: do not edit.",
        f"// OpenRPC {doc['openrpc']}, {doc['info']['title']} {doc['info']['version']}.",
        "",
    ]
    for name, schema in sorted(doc["components"]["schemas"].items()):
        out += comment(schema.get("description"), "")
        out.append(f"export type {name} = {ts(schema)};")
        out.append("")
    out.append("/** Every method: its params (by name) and its result. */")
    out.append("export interface Methods {")
    for m in doc["methods"]:
        params = {"type": "object", "properties": {}, "required": []}
        for p in m["params"]:
            params["properties"][p["name"]] = {**p["schema"], "description": p.get("description")}
            if p.get("required"):
                params["required"].append(p["name"])
        out += comment(m.get("summary"), "  ")
        out.append(f"  {json.dumps(m['name'])}: {{")
        out.append(f"    params: {ts(params, '    ')};")
        out.append(f"    result: {ts(m['result']['schema'], '    ')};")
        out.append("  };")
    out.append("}")
    out.append("")
    return "\n".join(out)


def main():
    text = generate()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            sys.exit(f"{OUT.relative_to(ROOT)} is stale: run scripts/openrpc-ts-types.py")
        return
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text.splitlines())} lines)")


if __name__ == "__main__":
    main()
