#!/usr/bin/env python3
"""Regenerate tests/fixtures/sdk/: Messages API responses as the official Anthropic Python SDK dumps them.

Usage (from the repository root):

    python3 scripts/sdk-dumps.py

Uses the same pinned SDK install as scripts/public-request-schema.py (a cached
`pip install --target` folder, see that script). Each response below is built the way the API
returns it, as a plain JSON dict, and parsed with the SDK's own models
(`anthropic.types.Message.model_validate` / `anthropic.types.beta.BetaMessage.model_validate`).
Every key must land on a field the SDK defines (the models accept unknown keys silently, so this is
checked). For each response two files are written:

    <name>.json               message.model_dump(mode="json")                     every field, None as null
    <name>.exclude_none.json  message.model_dump(mode="json", exclude_none=True)  None-valued fields dropped

and, only where a field has a wire alias (e.g. the `fallback` block's `from`, which the SDK names
`from_`), <name>.by_alias.json with by_alias=True, which is the wire spelling.

All ids, signatures, encrypted payloads and token counts are synthetic. The README.md is written too;
it records, for each response, whether its `content` passes protocol/schema/messages-request.schema.json
when sent back as an assistant message (the SDK's public request types).

Output is pretty-printed with sorted keys and a trailing newline, so regeneration is byte-stable.
"""

from __future__ import annotations

import sys
import json
import shutil
import importlib.util
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "sdk"
SCRIPT_NAME = "scripts/sdk-dumps.py"


def _load_schema_script():
    path = Path(__file__).resolve().parent / "public-request-schema.py"
    spec = importlib.util.spec_from_file_location("ctxd_public_request_schema", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


PRS = _load_schema_script()

MODEL = "claude-sonnet-4-6"
BETA_MODEL = "claude-opus-4-6"


def usage(input_tokens: int, output_tokens: int, **extra) -> dict:
    u = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    u.update(extra)
    return u


def message(msg_id: str, content: list, stop_reason: str, usage_: dict, model: str = MODEL, **extra) -> dict:
    m = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage_,
    }
    m.update(extra)
    return m


def srv(tool_id: str, name: str, input_: dict, **extra) -> dict:
    b = {"type": "server_tool_use", "id": tool_id, "name": name, "input": input_}
    b.update(extra)
    return b


# ---------------------------------------------------------------------------------------------------
# the responses (plain JSON, as on the wire)

WEB_SEARCH = message(
    "msg_01WebSearchXq7bVn3kP2sJdT",
    [
        {"type": "text", "text": "I'll search for that."},
        srv("srvtoolu_01WSa8bWnJqEr4Vc6tN2xLkd", "web_search", {"query": "rust jsonschema crate draft 2020-12"}),
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01WSa8bWnJqEr4Vc6tN2xLkd",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://docs.rs/jsonschema/latest/jsonschema/",
                    "title": "jsonschema - Rust",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2ESDKvbAA==",
                    "page_age": "2 weeks ago",
                },
                {
                    "type": "web_search_result",
                    "url": "https://json-schema.org/draft/2020-12",
                    "title": "Draft 2020-12",
                    "encrypted_content": "Eo0CCioIARgBIiQ0ZGE2OTcxMS0zZjA4LTRkNjEtYTcwYy1jNDc4ZmI2MzU0MDESDGZqAA==",
                    "page_age": "June 16, 2022",
                },
            ],
        },
        {
            "type": "text",
            "text": "The crate supports draft 2020-12",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://docs.rs/jsonschema/latest/jsonschema/",
                    "title": "jsonschema - Rust",
                    "encrypted_index": "Eo8BCioIAhgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2ESDA==",
                    "cited_text": "A high-performance JSON Schema validator for Rust. Supports Draft 2020-12 ",
                }
            ],
        },
        {"type": "text", "text": "."},
    ],
    "end_turn",
    usage(
        6039,
        931,
        cache_creation_input_tokens=2048,
        cache_read_input_tokens=4096,
        cache_creation={"ephemeral_5m_input_tokens": 1024, "ephemeral_1h_input_tokens": 1024},
        server_tool_use={"web_search_requests": 1, "web_fetch_requests": 0},
        service_tier="standard",
    ),
)

WEB_SEARCH_ERROR = message(
    "msg_01WebSearchErrN5wQz8hR1mB",
    [
        srv("srvtoolu_01WSerr9TzqLm3Kd7Yp5cVbN", "web_search", {"query": "x" * 40}),
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01WSerr9TzqLm3Kd7Yp5cVbN",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
        },
        {"type": "text", "text": "The search limit was reached."},
    ],
    "end_turn",
    usage(812, 64, server_tool_use={"web_search_requests": 1, "web_fetch_requests": 0}, service_tier="standard"),
)

THINKING_TOOL_USE = message(
    "msg_01ThinkToolUse4dVq9Lr2Hx",
    [
        {
            "type": "thinking",
            "thinking": "The user wants the weather; I should call get_weather for Paris.",
            "signature": "ErUBCkYIBRgCIkB3d2hhdGV2ZXIgc2lnbmF0dXJlIGJ5dGVzIGdvIGhlcmUsIHRoZXkgYXJlIG9wYXF1ZRIMc3ludGhldGljAA==",
        },
        {"type": "text", "text": "Let me check the weather in Paris."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"location": "Paris, FR", "unit": "celsius"},
            "caller": {"type": "direct"},
        },
    ],
    "tool_use",
    usage(512, 187, cache_creation_input_tokens=0, cache_read_input_tokens=0, service_tier="standard"),
)

PROGRAMMATIC_TOOL_USE = message(
    "msg_01ProgToolCall7sKd2Vn4Qe",
    [
        srv(
            "srvtoolu_01CodeExec5Gf8Hj2Kl4Mn6P",
            "code_execution",
            {"code": "r = await get_weather(location='Paris, FR')\nprint(r)"},
        ),
        {
            "type": "tool_use",
            "id": "toolu_01ProgCall3Xy7Zq1Wv9Ut5S",
            "name": "get_weather",
            "input": {"location": "Paris, FR"},
            "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_01CodeExec5Gf8Hj2Kl4Mn6P"},
        },
    ],
    "tool_use",
    usage(1430, 96),
    container={"id": "container_011CXProgCall9Hq3", "expires_at": "2026-03-01T12:30:00Z"},
)

REDACTED_THINKING = message(
    "msg_01RedactedThink8Pw3Mz6Ty",
    [
        {
            "type": "redacted_thinking",
            "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pWmb3qZ/Q==",
        },
        {"type": "thinking", "thinking": "Continuing.", "signature": "EqQBCkYIBRgCIkBzeW50aGV0aWMgc2lnbmF0dXJlAA=="},
        {"type": "text", "text": "Here is my answer."},
    ],
    "end_turn",
    usage(300, 220),
)

WEB_FETCH = message(
    "msg_01WebFetch2Ld5Rt8Yu1Io",
    [
        srv("srvtoolu_01WFok4Hs6Jd8Kf0Lg2Zx", "web_fetch", {"url": "https://example.com/article"}),
        {
            "type": "web_fetch_tool_result",
            "tool_use_id": "srvtoolu_01WFok4Hs6Jd8Kf0Lg2Zx",
            "content": {
                "type": "web_fetch_result",
                "url": "https://example.com/article",
                "retrieved_at": "2026-02-27T10:15:00Z",
                "content": {
                    "type": "document",
                    "title": "An article",
                    "citations": {"enabled": True},
                    "source": {"type": "text", "media_type": "text/plain", "data": "Article body text."},
                },
            },
        },
        srv("srvtoolu_01WFerr7Qa9Ws1Ed3Rf5Tg", "web_fetch", {"url": "https://example.invalid/"}),
        {
            "type": "web_fetch_tool_result",
            "tool_use_id": "srvtoolu_01WFerr7Qa9Ws1Ed3Rf5Tg",
            "content": {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"},
        },
        {
            "type": "text",
            "text": "The article says: Article body text.",
            "citations": [
                {
                    "type": "char_location",
                    "cited_text": "Article body text.",
                    "document_index": 0,
                    "document_title": "An article",
                    "start_char_index": 0,
                    "end_char_index": 18,
                }
            ],
        },
    ],
    "end_turn",
    usage(2100, 140, server_tool_use={"web_search_requests": 0, "web_fetch_requests": 2}),
)

CODE_EXECUTION = message(
    "msg_01CodeExec6Yh8Uj0Ik2Ol",
    [
        srv("srvtoolu_01CE1aS3dF5gH7jK9lZ", "code_execution", {"code": "print(2 + 2)"}),
        {
            "type": "code_execution_tool_result",
            "tool_use_id": "srvtoolu_01CE1aS3dF5gH7jK9lZ",
            "content": {
                "type": "code_execution_result",
                "stdout": "4\n",
                "stderr": "",
                "return_code": 0,
                "content": [{"type": "code_execution_output", "file_id": "file_011CPlotOut3Vb5"}],
            },
        },
        srv("srvtoolu_01CE2qW4eR6tY8uI0oP", "code_execution", {"code": "print(secret)"}),
        {
            "type": "code_execution_tool_result",
            "tool_use_id": "srvtoolu_01CE2qW4eR6tY8uI0oP",
            "content": {
                "type": "encrypted_code_execution_result",
                "encrypted_stdout": "EpQBCkYIBRgCIkBlbmNyeXB0ZWQgc3Rkb3V0AA==",
                "stderr": "",
                "return_code": 0,
                "content": [],
            },
        },
        srv("srvtoolu_01CE3zX5cV7bN9mA1sD", "code_execution", {"code": "while True: pass"}),
        {
            "type": "code_execution_tool_result",
            "tool_use_id": "srvtoolu_01CE3zX5cV7bN9mA1sD",
            "content": {"type": "code_execution_tool_result_error", "error_code": "execution_time_exceeded"},
        },
        {"type": "text", "text": "2 + 2 = 4."},
    ],
    "end_turn",
    usage(3300, 410),
    container={"id": "container_011CCodeExec7Jk2", "expires_at": "2026-03-01T12:30:00Z"},
)

BASH_CODE_EXECUTION = message(
    "msg_01BashExec3Qw5Er7Ty9Ui",
    [
        srv("srvtoolu_01BE1fG3hJ5kL7zX9cV", "bash_code_execution", {"command": "ls -la /tmp/outputs"}),
        {
            "type": "bash_code_execution_tool_result",
            "tool_use_id": "srvtoolu_01BE1fG3hJ5kL7zX9cV",
            "content": {
                "type": "bash_code_execution_result",
                "stdout": "total 4\n-rw-r--r-- 1 root root 12 report.csv\n",
                "stderr": "",
                "return_code": 0,
                "content": [{"type": "bash_code_execution_output", "file_id": "file_011CBashOut5Nm7"}],
            },
        },
        srv("srvtoolu_01BE2bN4mQ6wE8rT0yU", "bash_code_execution", {"command": "cat /dev/urandom > big"}),
        {
            "type": "bash_code_execution_tool_result",
            "tool_use_id": "srvtoolu_01BE2bN4mQ6wE8rT0yU",
            "content": {"type": "bash_code_execution_tool_result_error", "error_code": "output_file_too_large"},
        },
        {"type": "text", "text": "The report is ready."},
    ],
    "end_turn",
    usage(2800, 300),
    container={"id": "container_011CBashExec4Fg6", "expires_at": "2026-03-01T12:30:00Z"},
)

TEXT_EDITOR_CODE_EXECUTION = message(
    "msg_01TextEdExec8As0Df2Gh4",
    [
        srv(
            "srvtoolu_01TE1qA3zS5xD7cF9vG",
            "text_editor_code_execution",
            {"command": "view", "path": "/tmp/main.py"},
        ),
        {
            "type": "text_editor_code_execution_tool_result",
            "tool_use_id": "srvtoolu_01TE1qA3zS5xD7cF9vG",
            "content": {
                "type": "text_editor_code_execution_view_result",
                "file_type": "text",
                "content": "print('hi')\n",
                "num_lines": 1,
                "start_line": 1,
                "total_lines": 1,
            },
        },
        srv(
            "srvtoolu_01TE2wS4xD6cF8vG0bH",
            "text_editor_code_execution",
            {"command": "create", "path": "/tmp/new.py", "file_text": "x = 1\n"},
        ),
        {
            "type": "text_editor_code_execution_tool_result",
            "tool_use_id": "srvtoolu_01TE2wS4xD6cF8vG0bH",
            "content": {"type": "text_editor_code_execution_create_result", "is_file_update": False},
        },
        srv(
            "srvtoolu_01TE3eD5cF7vG9bH1nJ",
            "text_editor_code_execution",
            {"command": "str_replace", "path": "/tmp/main.py", "old_str": "'hi'", "new_str": "'hello'"},
        ),
        {
            "type": "text_editor_code_execution_tool_result",
            "tool_use_id": "srvtoolu_01TE3eD5cF7vG9bH1nJ",
            "content": {
                "type": "text_editor_code_execution_str_replace_result",
                "old_start": 1,
                "old_lines": 1,
                "new_start": 1,
                "new_lines": 1,
                "lines": ["-print('hi')", "+print('hello')"],
            },
        },
        srv(
            "srvtoolu_01TE4rF6vG8bH0nJ2mK",
            "text_editor_code_execution",
            {"command": "view", "path": "/tmp/missing.py"},
        ),
        {
            "type": "text_editor_code_execution_tool_result",
            "tool_use_id": "srvtoolu_01TE4rF6vG8bH0nJ2mK",
            "content": {
                "type": "text_editor_code_execution_tool_result_error",
                "error_code": "file_not_found",
                "error_message": "File not found: /tmp/missing.py",
            },
        },
        {"type": "text", "text": "Edited main.py."},
    ],
    "end_turn",
    usage(4100, 520),
    container={"id": "container_011CTextEd2Hj4", "expires_at": "2026-03-01T12:30:00Z"},
)

TOOL_SEARCH = message(
    "msg_01ToolSearch5Zx7Cv9Bn1",
    [
        srv("srvtoolu_01TS1aQ3wE5rT7yU9iO", "tool_search_tool_regex", {"query": "weather"}),
        {
            "type": "tool_search_tool_result",
            "tool_use_id": "srvtoolu_01TS1aQ3wE5rT7yU9iO",
            "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [
                    {"type": "tool_reference", "tool_name": "get_weather"},
                    {"type": "tool_reference", "tool_name": "get_forecast"},
                ],
            },
        },
        srv("srvtoolu_01TS2sW4eR6tY8uI0pL", "tool_search_tool_bm25", {"query": "(("}),
        {
            "type": "tool_search_tool_result",
            "tool_use_id": "srvtoolu_01TS2sW4eR6tY8uI0pL",
            "content": {
                "type": "tool_search_tool_result_error",
                "error_code": "invalid_tool_input",
                "error_message": "invalid query",
            },
        },
        {
            "type": "tool_use",
            "id": "toolu_01TSuse6Gh8Jk0Lz2Xc4Vb",
            "name": "get_weather",
            "input": {"location": "Oslo"},
            "caller": {"type": "direct"},
        },
    ],
    "tool_use",
    usage(1900, 120),
)

CONTAINER_UPLOAD = message(
    "msg_01ContUpload4Rt6Yu8Io0",
    [
        {"type": "container_upload", "file_id": "file_011CUpload8Lk0Jh2"},
        srv("srvtoolu_01CU1zA3sD5fG7hJ9kL", "code_execution", {"code": "import pandas as pd; pd.read_csv('data.csv')"}),
        {
            "type": "code_execution_tool_result",
            "tool_use_id": "srvtoolu_01CU1zA3sD5fG7hJ9kL",
            "content": {"type": "code_execution_result", "stdout": "", "stderr": "", "return_code": 0, "content": []},
        },
        {"type": "text", "text": "Loaded data.csv."},
    ],
    "end_turn",
    usage(900, 80),
    container={"id": "container_011CUpload6Gf8", "expires_at": "2026-03-01T12:30:00Z"},
)

REFUSAL = message(
    "msg_01Refusal9Mn1Bv3Cx5Za",
    [{"type": "text", "text": "I can't help with that."}],
    "refusal",
    usage(40, 9),
    stop_details={"type": "refusal", "category": "cyber", "explanation": "The request asks for a working exploit."},
)

BETA_COMPACTION = message(
    "msg_01BetaCompact2Wq4Er6Ty",
    [
        {
            "type": "compaction",
            "content": "Summary of the conversation so far: the user is refactoring the ctxd compiler ...",
            "signature": "EpUBCkYIBRgCIkBjb21wYWN0aW9uIHNpZ25hdHVyZQA=",
            "tool_changes": [],
        },
        {"type": "text", "text": "Continuing from the summary: the next step is the cache planner."},
    ],
    "end_turn",
    usage(
        1200,
        350,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=900,
        iterations=[
            {
                "type": "compaction",
                "input_tokens": 180000,
                "output_tokens": 2100,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 160000,
            },
            {
                "type": "message",
                "input_tokens": 1200,
                "output_tokens": 350,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 900,
                "model": BETA_MODEL,
            },
        ],
    ),
    model=BETA_MODEL,
)

BETA_MCP = message(
    "msg_01BetaMcp7Ui9Op1As3Df",
    [
        {
            "type": "mcp_tool_listing",
            "mcp_server_name": "github",
            "tools": [
                {
                    "name": "search_issues",
                    "description": "Search issues",
                    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
                }
            ],
        },
        {
            "type": "mcp_tool_use",
            "id": "mcptoolu_01Mcp5Gh7Jk9Lz1Xc",
            "name": "search_issues",
            "server_name": "github",
            "input": {"q": "ctxd cache"},
        },
        {
            "type": "mcp_tool_result",
            "tool_use_id": "mcptoolu_01Mcp5Gh7Jk9Lz1Xc",
            "is_error": False,
            "content": [{"type": "text", "text": "#12 cache planner misses system blocks"}],
        },
        {"type": "text", "text": "Issue #12 tracks it."},
    ],
    "end_turn",
    usage(1500, 160),
    model=BETA_MODEL,
)

BETA_ADVISOR = message(
    "msg_01BetaAdvisor3Gh5Jk7Lz",
    [
        srv("srvtoolu_01Adv1qW3eR5tY7uI9o", "advisor", {}),
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_01Adv1qW3eR5tY7uI9o",
            "content": {"type": "advisor_result", "text": "Prefer the smaller change.", "stop_reason": "end_turn"},
        },
        {"type": "text", "text": "I'll make the smaller change."},
    ],
    "end_turn",
    usage(
        2000,
        200,
        iterations=[
            {"type": "message", "input_tokens": 1000, "output_tokens": 60, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "model": BETA_MODEL},
            {"type": "advisor_message", "input_tokens": 900, "output_tokens": 80, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "model": "claude-opus-4-7"},
            {"type": "message", "input_tokens": 1100, "output_tokens": 60, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 1000, "model": BETA_MODEL},
        ],
    ),
    model=BETA_MODEL,
)

BETA_FALLBACK = message(
    "msg_01BetaFallback6Vb8Nm0Qw",
    [
        {
            "type": "fallback",
            "from": {"model": BETA_MODEL},
            "to": {"model": "claude-sonnet-4-6"},
            "trigger": {"type": "refusal", "category": "cyber"},
        },
        {"type": "text", "text": "Here is the answer from the fallback model."},
    ],
    "end_turn",
    usage(
        700,
        90,
        iterations=[
            {"type": "message", "input_tokens": 700, "output_tokens": 5, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "model": BETA_MODEL},
            {"type": "fallback_message", "input_tokens": 700, "output_tokens": 85, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "model": "claude-sonnet-4-6"},
        ],
    ),
    model=BETA_MODEL,
)

# (file stem, beta?, wire JSON, what it covers)
CASES = [
    ("web_search", False, WEB_SEARCH,
     "server_tool_use(web_search), web_search_tool_result (2 results), text with web_search_result_location "
     "citation; usage.cache_creation, usage.server_tool_use, usage.service_tier"),
    ("web_search_error", False, WEB_SEARCH_ERROR, "web_search_tool_result holding web_search_tool_result_error"),
    ("thinking_tool_use", False, THINKING_TOOL_USE, "thinking (signature), text, tool_use with caller {type: direct}"),
    ("programmatic_tool_use", False, PROGRAMMATIC_TOOL_USE,
     "tool_use called from code execution: caller {type: code_execution_20250825, tool_id}; container"),
    ("redacted_thinking", False, REDACTED_THINKING, "redacted_thinking, thinking, text"),
    ("web_fetch", False, WEB_FETCH,
     "web_fetch_tool_result (web_fetch_result with document; web_fetch_tool_result_error); char_location citation"),
    ("code_execution", False, CODE_EXECUTION,
     "code_execution_tool_result: code_execution_result, encrypted_code_execution_result, error; container"),
    ("bash_code_execution", False, BASH_CODE_EXECUTION, "bash_code_execution_tool_result: result and error"),
    ("text_editor_code_execution", False, TEXT_EDITOR_CODE_EXECUTION,
     "text_editor_code_execution_tool_result: view, create, str_replace results and error"),
    ("tool_search", False, TOOL_SEARCH,
     "tool_search_tool_result: tool_search_tool_search_result (tool_reference) and error; then tool_use"),
    ("container_upload", False, CONTAINER_UPLOAD, "container_upload block, code execution over the upload"),
    ("refusal", False, REFUSAL, "stop_reason refusal with stop_details"),
    ("beta_compaction", True, BETA_COMPACTION,
     "BetaMessage whose content starts with a compaction block; usage.iterations (compaction + message)"),
    ("beta_mcp", True, BETA_MCP, "BetaMessage: mcp_tool_listing, mcp_tool_use, mcp_tool_result"),
    ("beta_advisor", True, BETA_ADVISOR,
     "BetaMessage: server_tool_use(advisor), advisor_tool_result; usage.iterations with advisor_message"),
    ("beta_fallback", True, BETA_FALLBACK,
     "BetaMessage: fallback block (wire key `from`, SDK field `from_`); usage.iterations with fallback_message"),
]


# ---------------------------------------------------------------------------------------------------


def unknown_keys(model, path: str = "$") -> list[str]:
    """Keys that landed in a model's extras (the SDK models allow unknown keys), recursively."""
    import pydantic

    found: list[str] = []
    if isinstance(model, pydantic.BaseModel):
        for k in (model.model_extra or {}):
            found.append(f"{path}.{k}")
        for name in type(model).model_fields:
            found += unknown_keys(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, (list, tuple)):
        for i, v in enumerate(model):
            found += unknown_keys(v, f"{path}[{i}]")
    return found


def render(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def request_check(validator, content: list) -> tuple[bool, list[str]]:
    """Does `content`, sent back as an assistant message, pass the public request schema? Failing block types."""
    body = {
        "model": MODEL,
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": content}],
    }
    if validator.is_valid(body):
        return True, []
    failing = []
    for block in content:
        one = dict(body, messages=[body["messages"][0], {"role": "assistant", "content": [block]}])
        if not validator.is_valid(one):
            failing.append(block.get("type", "?"))
    return False, sorted(set(failing))


def copy_licenses(sdk_dir: Path) -> list[str]:
    dist = sdk_dir / f"anthropic-{PRS.SDK_VERSION}.dist-info"
    copied = []
    for sub in (dist / "licenses", dist):
        for name in ("LICENSE", "LICENSE-MIT"):
            src = sub / name
            if src.is_file() and name not in copied:
                shutil.copyfile(src, OUT_DIR / name)
                copied.append(name)
    if "LICENSE" not in copied:
        raise SystemExit(f"no LICENSE in {dist}")
    return copied


def readme(rows: list[tuple], licenses: list[str], pydantic_version: str, license_expr: str) -> str:
    lines = [
        "# SDK response dumps",
        "",
        f"GENERATED by `python3 {SCRIPT_NAME}` (do not edit by hand; rerun the script) with the official",
        f"Anthropic Python SDK `anthropic=={PRS.SDK_VERSION}` (pydantic {pydantic_version}), installed by",
        "`scripts/public-request-schema.py` into `${XDG_CACHE_HOME:-$HOME/.cache}/ctxd/py-sdk-"
        f"{PRS.SDK_VERSION}`.",
        "",
        "Each response is written as the API returns it (plain JSON), parsed with the SDK's own models",
        "(`anthropic.types.Message.model_validate`, or `anthropic.types.beta.BetaMessage.model_validate` for the",
        "`beta_*` files; every key must map to a field the SDK defines), then dumped:",
        "",
        "- `<name>.json`: `model_dump(mode=\"json\")`, every field the SDK defines, unset ones as `null`;",
        "- `<name>.exclude_none.json`: `model_dump(mode=\"json\", exclude_none=True)`;",
        "- `<name>.by_alias.json` (only where a field has a wire alias): `model_dump(mode=\"json\", by_alias=True)`,",
        "  i.e. with the wire key names (`from` instead of the SDK's `from_`).",
        "",
        "All ids, signatures, encrypted payloads and token counts are synthetic.",
        "",
        "`request schema` says whether the dump's `content`, sent back as an assistant message, passes",
        "`protocol/schema/messages-request.schema.json` (the SDK's public, non-beta request types); failing",
        "block types are listed. The non-beta ones pass because the SDK's `MessageContentParam` (user and",
        "assistant message content) accepts the response `ContentBlock` models besides the `*BlockParam` types, so",
        "response-only keys (a citation's `file_id`, `caller: null`, `document_title`/`title` left out) pass there;",
        "they fail where only param types are accepted (`system`, `tool_result.content`, search results).",
        "",
        "| file | SDK model | covers | request schema (.json / .exclude_none.json) |",
        "| --- | --- | --- | --- |",
    ]
    for stem, cls, covers, full, slim in rows:
        def fmt(r):
            ok, bad = r
            return "pass" if ok else "FAIL " + ", ".join(bad)
        lines.append(f"| `{stem}` | `{cls}` | {covers} | {fmt(full)} / {fmt(slim)} |")
    lines += [
        "",
        "## License",
        "",
        f"The SDK's package metadata gives its license as `{license_expr}`; its license files are copied here"
        f" from the installed package's dist-info: {', '.join(f'`{n}`' for n in licenses)}. The SDK moved from the",
        "MIT License to the Apache License 2.0 in version 2.0.0; `LICENSE-MIT` says which code the MIT License",
        "still covers.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    sdk_dir = PRS.ensure_sdk()
    import pydantic
    import jsonschema
    from anthropic.types import Message
    from anthropic.types.beta import BetaMessage
    from importlib.metadata import PathDistribution

    schema_text = PRS.render(PRS.build_schema())
    validator = jsonschema.Draft202012Validator(json.loads(schema_text))
    if PRS.SCHEMA_PATH.exists() and PRS.SCHEMA_PATH.read_text(encoding="utf-8") != schema_text:
        print(f"warning: {PRS.SCHEMA_PATH} is stale; run python3 {PRS.SCRIPT_NAME}", file=sys.stderr)

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    rows = []

    def write(name: str, obj) -> None:
        text = render(obj)
        path = OUT_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(name)

    for stem, beta, wire, covers in CASES:
        cls = BetaMessage if beta else Message
        msg = cls.model_validate(wire)
        extra = unknown_keys(msg)
        if extra:
            raise SystemExit(f"{stem}: keys the SDK does not define: {extra}")
        full = msg.model_dump(mode="json")
        slim = msg.model_dump(mode="json", exclude_none=True)
        aliased = msg.model_dump(mode="json", by_alias=True)
        write(f"{stem}.json", full)
        write(f"{stem}.exclude_none.json", slim)
        if aliased != full:
            write(f"{stem}.by_alias.json", aliased)
        rows.append((stem, cls.__name__, covers, request_check(validator, full["content"]),
                     request_check(validator, slim["content"])))

    licenses = copy_licenses(sdk_dir)
    meta = PathDistribution(sdk_dir / f"anthropic-{PRS.SDK_VERSION}.dist-info").metadata
    license_expr = meta.get("License-Expression") or meta.get("License") or "unknown"
    readme_text = readme(rows, licenses, pydantic.VERSION, license_expr)
    readme_path = OUT_DIR / "README.md"
    if not readme_path.exists() or readme_path.read_text(encoding="utf-8") != readme_text:
        readme_path.write_text(readme_text, encoding="utf-8")

    ours = set(written) | set(licenses) | {"README.md"}
    stale = sorted(p.name for p in OUT_DIR.iterdir() if p.name not in ours)
    rel = OUT_DIR.relative_to(REPO_ROOT)
    print(f"wrote {len(written)} dumps + README.md + {', '.join(licenses)} to {rel}/ from anthropic {PRS.SDK_VERSION}:")
    for name in written:
        print(f"  {rel}/{name}")
    for stem, cls, _, full, slim in rows:
        state = "pass" if full[0] and slim[0] else f"fail ({', '.join(sorted(set(full[1] + slim[1])))})"
        print(f"  request schema, {stem} content as an assistant message: {state}")
    if stale:
        print(f"note: {rel}/ also holds files this script does not write: {', '.join(stale)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
