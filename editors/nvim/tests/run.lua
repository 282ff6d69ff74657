-- Headless test of the plugin against a real daemon, run by tests/clients.rs:
--   nvim --headless -u NONE -i NONE --cmd "set rtp+=editors/nvim" -c "luafile editors/nvim/tests/run.lua"
-- Environment: CTX_BIN (the ctx executable), CTXD_HOME (where ctx may start a daemon),
-- CTXD_TEST_CWD (the project). Exits 0 when every check holds, 1 with the reason else.
local function fail(msg)
  io.stderr:write("nvim test: " .. msg .. "\n")
  vim.cmd("cquit 1")
end

local function buffer_text(name)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

local function wait_for(what, cond)
  if not vim.wait(30000, cond, 20) then
    error("timed out waiting for " .. what)
  end
end

local ok, err = pcall(function()
  local ctxd = require("ctxd")
  local rpc = require("ctxd.rpc")
  local cwd = vim.env.CTXD_TEST_CWD
  ctxd.setup({ ctx = vim.env.CTX_BIN, cwd = cwd, socket = nil })
  assert(ctxd.attach(), "attach failed")
  local sid = ctxd.state.session_id
  local socket = ctxd.config.socket
  assert(vim.loop.fs_stat(socket), "no socket at " .. socket)

  -- The project's session is found again, not duplicated.
  local again = require("ctxd")
  again.state.session_id = nil
  assert(again.attach(), "second attach failed")
  assert(again.state.session_id == sid, "a second session was created")

  -- The session the plugin created runs no project hooks unless the user opted in.
  local got, gerr = rpc.call_sync(socket, "session.get", { session_id = sid })
  assert(not gerr, gerr)
  local hooks = got.session.settings.hooks
  assert(hooks and hooks.disabled == true, "hooks are not off in a created session")

  vim.cmd("CtxEvents")
  local _, aerr = rpc.call_sync(socket, "transcript.append", {
    session_id = sid,
    records = {
      { type = "user", content = "hello from the test" },
      {
        type = "assistant",
        usage = { input_tokens = 1200, output_tokens = 30 },
        content = { { type = "tool_use", id = "toolu_1", name = "Read", input = { file_path = cwd .. "/a.txt" } } },
      },
      { type = "user", content = { { type = "tool_result", tool_use_id = "toolu_1", content = "a" } } },
      { type = "assistant", content = "done" },
    },
  })
  assert(not aerr, aerr)
  wait_for("records_appended in the events buffer (have: " .. buffer_text("ctx://events") .. ")", function()
    return buffer_text("ctx://events"):find("records_appended 4 records", 1, true) ~= nil
  end)

  vim.cmd("CtxContext")
  local picture = buffer_text("ctx://context")
  assert(picture:find("context: [", 1, true), "no usage picture:\n" .. picture)
  assert(picture:find("by category:", 1, true), picture)
  assert(picture:find("tool_results", 1, true), picture)
  wait_for("the statusline", function()
    return ctxd.statusline():match("^ctx: %d+%% left · %d+ attachments$") ~= nil
  end)

  vim.cmd("CtxCompact")
  wait_for("the compaction", function()
    return ctxd.state.last_compaction ~= nil
  end)
  wait_for("compacted in the events buffer", function()
    return buffer_text("ctx://events"):find("compacted manual", 1, true) ~= nil
  end)
  io.stdout:write("statusline: " .. ctxd.statusline() .. "\n")
end)

if not ok then
  fail(tostring(err))
else
  vim.cmd("qall!")
end
