-- shape.lua — shape and size arithmetic for emitted code and its comments.
local M = {}

-- A tensor's shape as a C initializer of two int64 ({in, out}; {n, 0} for vectors).
function M.c_dims(t)
  return string.format("{%d, %d}", t.shape[1] or 0, t.shape[2] or 0)
end

-- A tensor's shape for people: "128 x 384" or "384".
function M.text(t)
  local parts = {}
  for i = 1, t.ndim do parts[i] = string.format("%d", t.shape[i]) end
  return table.concat(parts, " x ")
end

function M.ceil_div(a, b)
  if math.type(a) ~= "integer" or math.type(b) ~= "integer" or b <= 0 then
    error("shape.ceil_div: expected integers a and b > 0", 2)
  end
  return (a + b - 1) // b
end

function M.round_up(a, b)
  return M.ceil_div(a, b) * b
end

-- Bytes for people: "812 B", "1.50 KiB", "12.25 MiB", "3.00 GiB" (binary units, fixed format).
function M.bytes(n)
  if math.type(n) ~= "integer" then error("shape.bytes: expected an integer", 2) end
  if n < 1024 then return string.format("%d B", n) end
  local units = {"KiB", "MiB", "GiB", "TiB", "PiB"}
  local v, u = n / 1024, 1
  while v >= 1024 and u < #units do v, u = v / 1024, u + 1 end
  return string.format("%.2f %s", v, units[u])
end

-- Elements [a, a+n) as text.
function M.range(a, n)
  return string.format("[%d, %d)", a, a + n)
end

return M
