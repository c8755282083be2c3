-- Headless Neovim (>= 0.10) end-to-end scenario for sass-lsp.
-- Run: PYTHON=... SAMPLE=file.cuasm ROOT=dir nvim --headless --clean -l tests/nvim/e2e.lua
-- Prints one "ok ..." line per step and "ALL OK" at the end; any failure raises (exit status 1).
local PYTHON, SAMPLE, ROOT = os.getenv("PYTHON"), os.getenv("SAMPLE"), os.getenv("ROOT")
local out = function(s) io.stdout:write(s .. "\n") end
local t0 = vim.uv.hrtime()
local function ms() return (vim.uv.hrtime() - t0) / 1e6 end
local function check(cond, what) if not cond then error("FAILED: " .. what, 0) end; out(("ok %s (%.0f ms)"):format(what, ms())) end

local published = {}  -- version -> diagnostics
vim.cmd.edit(SAMPLE)
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start({
  name = "sass-lsp",
  cmd = { PYTHON, "-m", "sass_lsp.server" },
  root_dir = ROOT,
  init_options = { diagnosticsDebounceMs = 20 },
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx)
      published[result.version or 0] = result.diagnostics
      return vim.lsp.handlers["textDocument/publishDiagnostics"](err, result, ctx)
    end,
  },
}, { bufnr = buf })
check(vim.wait(10000, function() local c = vim.lsp.get_client_by_id(id); return c and c.initialized end, 10), "initialized")
local client = vim.lsp.get_client_by_id(id)
check(vim.wait(10000, function() return published[0] ~= nil end, 10), "diagnostics after open")

local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local function find(needle) for i, l in ipairs(lines) do if l:find(needle, 1, true) then return i - 1, l end end end
local uri = vim.uri_from_bufnr(buf)

local ldg, ldg_text = find("LDG.E.128 R16")
local res = client:request_sync("textDocument/hover",
  { textDocument = { uri = uri }, position = { line = ldg, character = ldg_text:find("LDG", 1, true) - 1 } }, 5000, buf)
check(res and res.result and res.result.contents.value:find("load from global memory", 1, true), "hover on LDG")

local sym = client:request_sync("textDocument/documentSymbol", { textDocument = { uri = uri } }, 5000, buf)
check(sym and sym.result and #sym.result > 5, "document symbols")

-- break the stall of '@P1 EXIT' (S06 -> S22): the server reports it, offers a fix, the fix clears it
local ex, ex_text = find("@P1 EXIT")
local s_col = ex_text:find(":S06]", 1, true) + 1
vim.api.nvim_buf_set_text(buf, ex, s_col, ex, s_col + 2, { "22" })
local version = vim.lsp.util.buf_versions[buf]
local bad
check(vim.wait(10000, function()
  for _, d in ipairs(published[version] or {}) do if d.code == "control-field" then bad = d; return true end end
  return false
end, 10), "control-field diagnostic after edit")

local ca = client:request_sync("textDocument/codeAction", {
  textDocument = { uri = uri }, range = bad.range, context = { diagnostics = { bad } } }, 5000, buf)
local fix
for _, a in ipairs(ca.result or {}) do if a.title:find("S15", 1, true) then fix = a end end
check(fix ~= nil, "quick fix offered: " .. (fix and fix.title or "none"))
vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding)
check(vim.api.nvim_buf_get_lines(buf, ex, ex + 1, false)[1]:find(":S15]", 1, true), "edit applied")
local version2 = vim.lsp.util.buf_versions[buf]
check(vim.wait(10000, function()
  local diags = published[version2]
  if not diags then return false end
  for _, d in ipairs(diags) do if d.code == "control-field" then return false end end
  return true
end, 10), "diagnostics updated after the fix")

local hint = client:request_sync("textDocument/inlayHint",
  { textDocument = { uri = uri }, range = { start = { line = 0, character = 0 }, ["end"] = { line = #lines, character = 0 } } }, 5000, buf)
check(hint and hint.err == nil, "inlay hint request answered")

client:stop()
check(vim.wait(5000, function() return client:is_stopped() end, 10), "shutdown and exit")
out("ALL OK")
vim.cmd("qa!")
