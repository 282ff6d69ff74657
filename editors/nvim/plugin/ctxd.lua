-- Registers the commands with default settings; call require("ctxd").setup{...} to
-- change them (the socket, the `ctx` executable, the project directory).
if vim.g.loaded_ctxd then
  return
end
vim.g.loaded_ctxd = true
require("ctxd").setup()
