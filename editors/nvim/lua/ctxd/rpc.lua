-- JSON-RPC calls to ctxd: one HTTP POST per call over the daemon's Unix socket, through
-- libuv (vim.loop), so the editor never blocks on the network.
local M = {}

local uv = vim.loop

-- Body of an HTTP/1.1 response, chunked or not.
local function http_body(raw)
  local head_end = raw:find("\r\n\r\n", 1, true)
  if not head_end then
    return nil, "malformed HTTP response"
  end
  local head = raw:sub(1, head_end - 1):lower()
  local body = raw:sub(head_end + 4)
  if not head:find("transfer%-encoding: chunked") then
    return body
  end
  local out, pos = {}, 1
  while true do
    local line_end = body:find("\r\n", pos, true)
    if not line_end then
      break
    end
    local size = tonumber(body:sub(pos, line_end - 1), 16)
    if not size or size == 0 then
      break
    end
    table.insert(out, body:sub(line_end + 2, line_end + 1 + size))
    pos = line_end + 2 + size + 2
  end
  return table.concat(out)
end

-- Calls `method` with by-name `params`; `cb(err, result)` runs on the main loop.
function M.call(socket, method, params, cb)
  local pipe = uv.new_pipe(false)
  local body = vim.fn.json_encode({ jsonrpc = "2.0", id = 1, method = method, params = params or vim.empty_dict() })
  local request = table.concat({
    "POST / HTTP/1.1",
    "Host: localhost",
    "Content-Type: application/json",
    "Content-Length: " .. #body,
    "Connection: close",
    "",
    body,
  }, "\r\n")
  local chunks = {}
  local done = false
  local function finish(err, result)
    if done then
      return
    end
    done = true
    if not pipe:is_closing() then
      pipe:close()
    end
    vim.schedule(function()
      cb(err, result)
    end)
  end
  pipe:connect(socket, function(err)
    if err then
      return finish("cannot connect to ctxd at " .. socket .. ": " .. err)
    end
    pipe:write(request)
    pipe:read_start(function(read_err, data)
      if read_err then
        return finish(read_err)
      end
      if data then
        table.insert(chunks, data)
        return
      end
      local text, perr = http_body(table.concat(chunks))
      if not text then
        return finish(perr)
      end
      vim.schedule(function()
        local ok, reply = pcall(vim.fn.json_decode, text)
        if not ok or type(reply) ~= "table" then
          return finish("not JSON-RPC: " .. text)
        end
        if reply.error then
          return finish(string.format("%s: %s (%s)", method, reply.error.message, reply.error.code))
        end
        finish(nil, reply.result)
      end)
    end)
  end)
end

-- The same, waiting for the answer (commands that show it at once).
function M.call_sync(socket, method, params, timeout_ms)
  local err, result
  local finished = false
  M.call(socket, method, params, function(e, r)
    err, result, finished = e, r, true
  end)
  if not vim.wait(timeout_ms or 120000, function()
    return finished
  end, 10) then
    return nil, method .. ": no answer from ctxd in time"
  end
  return result, err
end

return M
