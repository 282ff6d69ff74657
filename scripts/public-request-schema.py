#!/usr/bin/env python3
"""Regenerate protocol/schema/messages-request.schema.json from the official Anthropic Python SDK.

Usage (from the repository root):

    python3 scripts/public-request-schema.py           # write the schema
    python3 scripts/public-request-schema.py --check   # exit 1 if the file on disk is stale

The SDK (pinned below, with the pydantic and jsonschema it is used with) is installed once with
`pip install --target` into ${XDG_CACHE_HOME:-$HOME/.cache}/ctxd/py-sdk-<version>; later runs reuse
that folder. It is put first on sys.path, so nothing else installed on the machine is used.

The schema is the SDK's own description of the public body of `client.messages.create` without
streaming: `pydantic.TypeAdapter(anthropic.types.message_create_params.MessageCreateParamsNonStreaming)
.json_schema()` (draft 2020-12; `$defs` + `$ref`), then post-processed:

* every object schema that lists `properties` is closed with `"additionalProperties": false`, so a
  body holding a key the SDK's request types do not define fails validation. The only exceptions
  are TypedDicts that the SDK itself declares open (`set_pydantic_config(..., {"extra": "allow"})`,
  i.e. a tool's `input_schema`), which keep `"additionalProperties": true`;
* `required` is kept as pydantic emits it;
* keys of the TypedDict that `Messages.create` does not put in the JSON body (it sends them as
  `anthropic-*` headers: `user_profile_id`, `workspace_id`) are removed;
* `stream` accepts any boolean (ctxd's compiled body has no `stream`; a client adds `true` when it
  streams);
* the `format: "path"` branch pydantic emits for the SDK's local-file inputs (a path or file object
  that the SDK reads and base64-encodes before sending) is dropped: on the wire that field is a string.

Output is pretty-printed with sorted keys and a trailing newline, so regeneration is byte-stable.
"""

from __future__ import annotations

import os
import re
import sys
import json
import shutil
import inspect
import argparse
import subprocess
from pathlib import Path

SDK_VERSION = "2.16.0"
# Everything the generated files depend on is pinned, so that the output is byte-stable across machines.
REQUIREMENTS = (
    f"anthropic=={SDK_VERSION}",
    "pydantic==2.14.4",
    "jsonschema==4.26.0",
)

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO_ROOT / "protocol" / "schema" / "messages-request.schema.json"
SCRIPT_NAME = "scripts/public-request-schema.py"
MARKER = ".ctxd-sdk-install.json"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ctxd" / f"py-sdk-{SDK_VERSION}"


def _marker_data() -> dict:
    # binary wheels (pydantic-core, jiter, rpds-py) only work for the interpreter they were built for
    return {"requirements": list(REQUIREMENTS), "python": sys.implementation.cache_tag}


def ensure_sdk(quiet: bool = False) -> Path:
    """Install the pinned SDK into the cache folder unless already there; put it first on sys.path."""
    target = cache_dir()
    marker = target / MARKER
    try:
        installed = json.loads(marker.read_text())
    except (OSError, ValueError):
        installed = None
    if installed != _marker_data():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.parent / f".{target.name}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        if not quiet:
            print(f"installing {' '.join(REQUIREMENTS)} into {target}", file=sys.stderr)
        cmd = [
            sys.executable, "-m", "pip", "install",
            "--quiet", "--disable-pip-version-check", "--no-input", "--no-warn-conflicts", "--root-user-action=ignore",
            "--target", str(staging), *REQUIREMENTS,
        ]
        subprocess.run(cmd, check=True)
        (staging / MARKER).write_text(json.dumps(_marker_data(), indent=2, sort_keys=True) + "\n")
        # swap in a complete install only, so that an interrupted one is never taken for done
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    path = str(target)
    if path in sys.path:
        sys.path.remove(path)
    sys.path.insert(0, path)
    import anthropic  # noqa: F401 -- fail here, not later, if the cache is broken

    if anthropic.__version__ != SDK_VERSION:
        raise SystemExit(f"expected anthropic {SDK_VERSION} from {path}, imported {anthropic.__version__}")
    return target


# ---------------------------------------------------------------------------------------------------
# schema generation


def _create_source() -> str:
    from anthropic.resources.messages import Messages

    return inspect.getsource(inspect.unwrap(Messages.create))


def body_keys() -> tuple[list[str], dict[str, str]]:
    """The keys `Messages.create` puts in the JSON body, and the params it sends as headers instead."""
    src = _create_source()
    m = re.search(r"body=(?:maybe_transform\()?\{(.*?)\n\s*\}", src, re.S)
    if not m:
        raise SystemExit("could not find the request body in Messages.create; the SDK layout changed")
    keys = re.findall(r'"(\w+)":', m.group(1))
    headers = dict(re.findall(r'"(anthropic-[\w-]+)":\s*(\w+)', src))
    return keys, headers


def open_typeddict_titles(root: object) -> set[str]:
    """Titles of the TypedDicts reachable from `root` that the SDK declares open (extra="allow")."""
    import typing_extensions as te
    from typing import get_args

    seen: set[int] = set()
    found: set[str] = set()

    def visit(t: object) -> None:
        for a in get_args(t):
            visit(a)
        if te.is_typeddict(t) and id(t) not in seen:
            seen.add(id(t))
            cfg = getattr(t, "__pydantic_config__", None) or {}
            if cfg.get("extra") == "allow":
                found.add(t.__name__)
            for h in te.get_type_hints(t, include_extras=True).values():
                visit(h)

    visit(root)
    return found


def _is_path_branch(s: object) -> bool:
    return isinstance(s, dict) and s.get("format") == "path" and s.get("type") == "string" and len(s) == 2


def _postprocess(node: object, open_titles: set[str]) -> object:
    if isinstance(node, list):
        return [_postprocess(x, open_titles) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("properties", "$defs"):
            out[k] = {name: _postprocess(sub, open_titles) for name, sub in v.items()}
        else:
            out[k] = _postprocess(v, open_titles)
    if isinstance(out.get("anyOf"), list):
        branches = [b for b in out["anyOf"] if not _is_path_branch(b)]
        if len(branches) == 1 and set(branches[0]) <= {"type"}:
            del out["anyOf"]
            out.update(branches[0])
        else:
            out["anyOf"] = branches
    if "properties" in out:
        out["additionalProperties"] = out.get("title") in open_titles and out.get("additionalProperties") is True
    return out


def build_schema() -> dict:
    import pydantic
    import anthropic
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    raw = pydantic.TypeAdapter(MessageCreateParamsNonStreaming).json_schema()

    keys, headers = body_keys()
    props = raw["properties"]
    unknown = [k for k in keys if k not in props]
    if unknown:
        raise SystemExit(f"Messages.create sends body keys the TypedDict does not define: {unknown}")
    not_in_body = sorted(k for k in props if k not in keys)
    for k in not_in_body:
        del props[k]
    raw["required"] = [k for k in raw.get("required", []) if k in props]

    props["stream"] = {
        "description": "Absent from the body ctxd compiles; a client sets true when it streams.",
        "title": "Stream",
        "type": "boolean",
    }

    schema = _postprocess(raw, open_typeddict_titles(MessageCreateParamsNonStreaming))
    moved = ", ".join(f"{k} (sent as header {h})" for h, k in sorted(headers.items()) if k in not_in_body)
    schema["$comment"] = (
        f"GENERATED by {SCRIPT_NAME} from the Anthropic Python SDK anthropic=={anthropic.__version__} "
        f"(pydantic {pydantic.VERSION}): TypeAdapter(MessageCreateParamsNonStreaming).json_schema(), "
        "every object schema with properties closed by additionalProperties=false except the SDK's open "
        "tool input_schema, stream widened to boolean, format=path branches dropped"
        + (f", removed non-body params: {moved}" if moved else "")
        + ". Do not edit by hand; rerun the script."
    )
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Anthropic Messages API public request body (messages.create)"
    return schema


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if the file is not up to date")
    ap.add_argument("--output", type=Path, default=SCHEMA_PATH, help="where to write (default: %(default)s)")
    args = ap.parse_args()

    ensure_sdk()
    import jsonschema

    schema = build_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    text = render(schema)
    out: Path = args.output
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else None
        if current != text:
            print(f"{out} is stale; run python3 {SCRIPT_NAME}", file=sys.stderr)
            return 1
        print(f"{out} is up to date (anthropic {SDK_VERSION})")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.read_text(encoding="utf-8") if out.exists() else None
    out.write_text(text, encoding="utf-8")
    try:
        shown = out.resolve().relative_to(REPO_ROOT)
    except ValueError:
        shown = out
    state = "unchanged" if old == text else ("updated" if old is not None else "created")
    print(
        f"wrote {shown} ({state}; {len(text.encode())} bytes, {len(schema.get('$defs', {}))} $defs) "
        f"from anthropic {SDK_VERSION}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
