-- ctxd for Neovim (0.7+): attaches the editor to the ctxd session of the current
-- project, shows the context window in the statusline, and opens the usage picture and
-- the event stream in splits.
local rpc = require("ctxd.rpc")

local M = {}

M.config = {
  -- The `ctx` executable: starts the daemon when none answers, and follows events.
  ctx = vim.env.CTX_BIN or "ctx",
  -- The daemon's socket; nil asks `ctx` (which starts a daemon if needed).
  socket = vim.env.CTXD_SOCKET,
  -- Project directory of the session; nil means the current working directory.
  cwd = nil,
  -- Run the project's hooks (`.claude/settings*.json`) in sessions this plugin creates.
  -- Off by default: opening a freshly cloned repository must not run its commands.
  hooks = false,
}

-- What the statusline and the commands know.
M.state = {
  session_id = nil,
  -- Of the room before autocompact, what is left (Claude Code's "context left until
  -- auto-compact"): the compile's percent_left.
  percent_left = nil,
  attachments = nil,
  events = {}, -- lines of the event stream, newest last
  job = nil,
  lost = false,
}

local PROTOCOL_VERSION = "1.1"
local EVENTS_BUFFER = "ctx://events"

local function notify(msg, level)
  vim.notify("ctxd: " .. msg, level or vim.log.levels.INFO)
end

-- Where the daemon listens; `ctx daemon status` starts one when none answers.
local function discover_socket()
  local out = vim.fn.system({ M.config.ctx, "--json", "daemon", "status" })
  if vim.v.shell_error ~= 0 then
    return nil, "`" .. M.config.ctx .. " daemon status` failed: " .. out
  end
  local ok, status = pcall(vim.fn.json_decode, out)
  if not ok or type(status) ~= "table" or not status.socket then
    return nil, "unexpected answer from ctx: " .. out
  end
  return status.socket
end

local function update_usage(percent_left, attachments)
  M.state.percent_left = percent_left
  M.state.attachments = attachments
  vim.cmd("redrawstatus!")
end

-- The session for the project: the newest one with this cwd, else a new one.
local function find_or_create_session(socket, cwd)
  local list, err = rpc.call_sync(socket, "session.list", { limit = 1000 })
  if err then
    return nil, err
  end
  for _, s in ipairs(list.sessions) do
    if s.cwd == cwd then
      return s
    end
  end
  local params = { cwd = cwd }
  if not M.config.hooks then
    params.settings = { hooks = { disabled = true } }
  end
  local created, cerr = rpc.call_sync(socket, "session.create", params)
  if cerr then
    return nil, cerr
  end
  return created.session
end

local function append_event_line(line)
  table.insert(M.state.events, line)
  local buf = vim.fn.bufnr(EVENTS_BUFFER)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    vim.api.nvim_buf_set_option(buf, "modifiable", true)
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, { line })
    vim.api.nvim_buf_set_option(buf, "modifiable", false)
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    end
  end
end

local function on_event(ev)
  local detail = ""
  if ev.kind == "records_appended" then
    detail = " " .. #ev.records .. " records"
  elseif ev.kind == "compiled" then
    update_usage(ev.percent_left, ev.attachments)
    detail = string.format(" %d tokens, %d%% left", ev.estimated_tokens, ev.percent_left)
  elseif ev.kind == "compacted" then
    detail = string.format(" %s: %d -> %d tokens", ev.trigger, ev.pre_tokens, ev.post_tokens)
  elseif ev.kind == "warning_state_changed" then
    detail = " " .. ev.level
  end
  append_event_line(string.format("seq %d  %s%s", ev.seq, ev.kind, detail))
end

-- Follows the session's events with `ctx events` (resumes after the last seq seen).
local function follow_events()
  if M.state.job then
    return
  end
  local cmd = { M.config.ctx, "--socket", M.config.socket, "--no-start", "events", M.state.session_id }
  if M.state.last_seq then
    table.insert(cmd, "--after")
    table.insert(cmd, tostring(M.state.last_seq))
  end
  local partial = ""
  M.state.job = vim.fn.jobstart(cmd, {
    on_stdout = function(_, data)
      data[1] = partial .. data[1]
      partial = table.remove(data)
      for _, line in ipairs(data) do
        if line ~= "" then
          local ok, ev = pcall(vim.fn.json_decode, line)
          if ok and type(ev) == "table" then
            M.state.last_seq = ev.seq
            on_event(ev)
          end
        end
      end
    end,
    on_exit = function(_, code)
      M.state.job = nil
      if code ~= 0 then
        M.state.lost = true
        append_event_line("-- lost the daemon (ctx events exited " .. code .. ")")
        vim.cmd("redrawstatus!")
      end
    end,
  })
end

-- Connects (starting a daemon if needed), picks the project's session, shakes hands,
-- follows its events and reads the current usage. Returns true when attached.
function M.attach()
  if not M.config.socket then
    local socket, err = discover_socket()
    if not socket then
      notify(err, vim.log.levels.ERROR)
      return false
    end
    M.config.socket = socket
  end
  local socket = M.config.socket
  local hello, herr = rpc.call_sync(socket, "daemon.initialize", {
    client_info = { name = "ctxd.nvim", version = "1.0" },
    protocol_version = PROTOCOL_VERSION,
  })
  if herr then
    notify(herr, vim.log.levels.ERROR)
    return false
  end
  M.state.server = hello.server_info.name .. " " .. hello.server_info.version
  local cwd = vim.fn.fnamemodify(M.config.cwd or vim.fn.getcwd(), ":p"):gsub("/$", "")
  local session, serr = find_or_create_session(socket, cwd)
  if not session then
    notify(serr, vim.log.levels.ERROR)
    return false
  end
  if M.state.session_id ~= session.session_id then
    -- The stream starts where the transcript stands now: nothing after it is missed,
    -- even before `ctx events` has subscribed.
    M.state.last_seq = session.record_count
  end
  M.state.session_id = session.session_id
  M.state.lost = false
  follow_events()
  return true
end

local function ensure_attached()
  return M.state.session_id ~= nil or M.attach()
end

-- `ctx: 58% left · 3 attachments` (of the room before autocompact); empty until attached.
function M.statusline()
  if not M.state.session_id then
    return ""
  end
  if M.state.lost then
    return "ctx: daemon lost"
  end
  if not M.state.percent_left then
    return "ctx: attached"
  end
  return string.format("ctx: %d%% left · %d attachments", M.state.percent_left, M.state.attachments or 0)
end

-- The usage picture (`context.usage`, Claude Code's /context), as lines.
function M.picture(u)
  local width = 40
  local window = math.max(u.context_window, 1)
  local filled = math.min(width, math.floor(width * u.used_tokens / window + 0.5))
  local lines = {
    "ctxd session " .. M.state.session_id .. " (" .. u.model .. ")",
    "",
    string.format(
      "context: [%s%s] %d / %d tokens (%d%% used)",
      string.rep("#", filled),
      string.rep(".", width - filled),
      u.used_tokens,
      u.context_window,
      math.floor(100 * u.used_tokens / window + 0.5)
    ),
    string.format(
      "  autocompact at %d; %d messages, %d attachments",
      u.autocompact_threshold,
      u.messages,
      u.attachments
    ),
    "  by category:",
  }
  for _, c in ipairs(u.categories) do
    table.insert(lines, string.format("    %-20s %9d tokens %5.1f%%", c.name, c.tokens, c.percent))
  end
  return lines
end

local function scratch_split(name, lines)
  vim.cmd("botright split")
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.api.nvim_win_set_buf(0, buf)
  vim.api.nvim_buf_set_option(buf, "buftype", "nofile")
  vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
  vim.api.nvim_buf_set_option(buf, "swapfile", false)
  vim.api.nvim_buf_set_option(buf, "modifiable", true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  return buf
end

-- :CtxContext — what fills the window for the next request, by category; reading it
-- changes nothing (no attachment is collected, no compaction runs).
function M.context()
  if not ensure_attached() then
    return
  end
  local usage, err = rpc.call_sync(M.config.socket, "context.usage", { session_id = M.state.session_id })
  if err then
    notify(err, vim.log.levels.ERROR)
    return
  end
  -- The same measure as the compile's percent_left: the room before autocompact.
  local threshold = math.max(usage.autocompact_threshold, 1)
  local left = math.max(0, math.floor(100 * (threshold - usage.used_tokens) / threshold + 0.5))
  update_usage(left, usage.attachments)
  return scratch_split("ctx://context", M.picture(usage))
end

-- :CtxEvents — the event stream, following.
function M.events()
  if not ensure_attached() then
    return
  end
  follow_events()
  return scratch_split(EVENTS_BUFFER, vim.deepcopy(M.state.events))
end

-- :CtxCompact — compacts the session now.
function M.compact()
  if not ensure_attached() then
    return
  end
  notify("compacting…")
  rpc.call(M.config.socket, "context.compact", { session_id = M.state.session_id }, function(err, r)
    if err then
      notify(err, vim.log.levels.ERROR)
      return
    end
    M.state.last_compaction = r
    notify(string.format("compacted %d records: ~%d -> ~%d tokens", r.summarised_records, r.pre_tokens, r.post_tokens))
  end)
end

function M.setup(opts)
  M.config = vim.tbl_extend("force", M.config, opts or {})
  vim.api.nvim_create_user_command("CtxAttach", function()
    M.attach()
  end, { desc = "Attach to the ctxd session of this project" })
  vim.api.nvim_create_user_command("CtxContext", function()
    M.context()
  end, { desc = "Show the context window's usage in a split" })
  vim.api.nvim_create_user_command("CtxEvents", function()
    M.events()
  end, { desc = "Follow the session's events in a split" })
  vim.api.nvim_create_user_command("CtxCompact", function()
    M.compact()
  end, { desc = "Compact the session now" })
end

return M
