-- rows.lua — rows of a C array initializer, columns aligned, each with a trailing comment.
--
--   local R = rows.new()
--   R:add({cfmt.str(t.name), t.ndim}, "what the row means")
--   ${R:render("    ", "why the table is empty")}
--
-- gives lines like
--   {"wte.weight", 2},  /* what the row means */
-- Cells are strings or integers; a cell may itself be a braced list ("{128, 384}"). C has no empty
-- arrays, so a table without rows renders one all-zero placeholder row that says why.
local M = {}
local Rows = {}
Rows.__index = Rows

function M.new()
  return setmetatable({list = {}}, Rows)
end

function Rows:add(cells, comment)
  if type(cells) ~= "table" then error("rows:add: cells must be a list", 2) end
  if type(comment) ~= "string" then error("rows:add: every row needs a comment string", 2) end
  local row = {}
  for i, c in ipairs(cells) do
    if math.type(c) == "integer" then row[i] = string.format("%d", c)
    elseif type(c) == "string" then row[i] = c
    else error("rows:add: cell " .. i .. " is a " .. type(c) .. " (use cfmt for it)", 2) end
  end
  self.list[#self.list + 1] = {cells = row, comment = comment}
end

-- Number of rows the C array has (placeholder included).
function Rows:size()
  return math.max(#self.list, 1)
end

-- The rows as text (no final newline): "{a, b},  /* c */", every column padded to its widest.
function Rows:render(indent, empty_why)
  indent = indent or "    "
  if #self.list == 0 then
    return indent .. "{0},  /* placeholder: " .. cfmt.comment(empty_why or "no rows") .. " */"
  end
  local width = {}
  for _, r in ipairs(self.list) do
    for i, c in ipairs(r.cells) do
      local w = #c + (i < #r.cells and 1 or 0)          -- a cell and its comma
      if w > (width[i] or 0) then width[i] = w end
    end
  end
  local out, linew = {}, 0
  local body = {}
  for k, r in ipairs(self.list) do
    local parts = {}
    for i, c in ipairs(r.cells) do
      local cell = c .. (i < #r.cells and "," or "")
      parts[i] = i < #r.cells and cell .. string.rep(" ", width[i] - #cell) or cell
    end
    body[k] = "{" .. table.concat(parts, " ") .. "},"
    if #body[k] > linew then linew = #body[k] end
  end
  for k, r in ipairs(self.list) do
    out[k] = indent .. body[k] .. string.rep(" ", linew - #body[k]) .. "  /* " .. cfmt.comment(r.comment) .. " */"
  end
  return table.concat(out, "\n")
end

return M
