-- cfmt.lua — C literals for emitted code: integers, int64, doubles, strings, identifiers, flags.
-- Every function checks its argument and raises an error at the caller's line (level 2), so a
-- template that hands a wrong value gets its own file:line in zgen's message.
local M = {}

local function need(ok, msg) if not ok then error(msg, 3) end end

-- An int literal: the integer in decimal (it must fit in a C int).
function M.int(v)
  need(math.type(v) == "integer", "cfmt.int: expected an integer, got " .. tostring(v))
  need(v >= -2147483648 and v <= 2147483647, "cfmt.int: " .. v .. " does not fit in an int")
  return string.format("%d", v)
end

-- An int64_t constant usable in #if and in arithmetic without overflow: INT64_C(n).
function M.i64(v)
  need(math.type(v) == "integer", "cfmt.i64: expected an integer, got " .. tostring(v))
  return string.format("INT64_C(%d)", v)
end

-- A uint64_t constant; Lua integers are signed, so values >= 2^63 arrive negative.
function M.u64(v)
  need(math.type(v) == "integer", "cfmt.u64: expected an integer, got " .. tostring(v))
  if v >= 0 then return string.format("UINT64_C(%d)", v) end
  return string.format("UINT64_C(0x%x)", v)
end

-- The shortest decimal that reads back as the same double, always with '.' or an exponent.
function M.double(v)
  need(type(v) == "number", "cfmt.double: expected a number, got " .. tostring(v))
  v = v + 0.0
  need(v == v and v ~= math.huge and v ~= -math.huge, "cfmt.double: " .. tostring(v) .. " is not finite")
  local s
  for prec = 1, 17 do
    s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then break end
  end
  if not s:find("[%.eE]") then s = s .. ".0" end
  return s
end

-- 1 or 0 for a boolean.
function M.bool(b)
  need(type(b) == "boolean", "cfmt.bool: expected a boolean, got " .. tostring(b))
  return b and "1" or "0"
end

-- A C string literal. Backslash and quote are escaped; bytes outside printable ASCII become
-- three-digit octal escapes, which cannot swallow a following character; a string holding "??"
-- has every '?' escaped, since -std=c11 reads "??(" and friends as trigraphs.
function M.str(s)
  need(type(s) == "string", "cfmt.str: expected a string, got " .. tostring(s))
  local out = s:gsub('[%c\\"\128-\255]', function(c)
    if c == "\\" then return "\\\\" end
    if c == '"' then return '\\"' end
    if c == "\n" then return "\\n" end
    if c == "\t" then return "\\t" end
    return string.format("\\%03o", c:byte())
  end)
  if out:find("??", 1, true) then out = out:gsub("%?", "\\?") end
  return '"' .. out .. '"'
end

-- Text safe inside a /* */ comment on one line: no "*/", no control characters.
function M.comment(s)
  need(type(s) == "string", "cfmt.comment: expected a string, got " .. tostring(s))
  return (s:gsub("%c", " "):gsub("%*/", "* /"):gsub("/%*", "/ *"))
end

-- An upper-case C identifier from a name: "h.0.attn.c_attn.weight" -> "H_0_ATTN_C_ATTN_WEIGHT".
function M.ident(s)
  need(type(s) == "string" and s ~= "", "cfmt.ident: expected a non-empty string")
  local id = s:upper():gsub("[^%w]", "_")
  if id:find("^%d") then id = "_" .. id end
  return id
end

-- s followed by spaces up to width w (at least one space), to align columns by hand.
function M.pad(s, w)
  need(type(s) == "string", "cfmt.pad: expected a string")
  return s .. string.rep(" ", math.max(1, w - #s))
end

-- A path for a Makefile variable: make has no quoting, so characters it would split or expand
-- are refused rather than mangled.
function M.make_path(s)
  need(type(s) == "string" and s ~= "", "cfmt.make_path: expected a non-empty string")
  need(not s:find("[%s%c#$\\:;'\"`=%%*?%[%]]"),
       "the path '" .. s .. "' cannot be written into a Makefile (spaces, quotes, $ # : % ...); "
       .. "move the repository or set ZGEN_ROOT by hand")
  return s
end

return M
