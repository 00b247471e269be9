-- Recursion-heavy: naive fib, Takeuchi, Ackermann, n-queens by backtracking, a recursive tree build/walk.
local scale = tonumber(arg and arg[1]) or 1

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function tak(x, y, z)
  if y >= x then return z end
  return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
end

local function ack(m, n)
  if m == 0 then return n + 1 end
  if n == 0 then return ack(m - 1, 1) end
  return ack(m - 1, ack(m, n - 1))
end

local function queens(n)
  local cols, d1, d2, count = {}, {}, {}, 0
  local function place(r)
    if r > n then count = count + 1 return end
    for c = 1, n do
      if not cols[c] and not d1[r + c] and not d2[r - c + n] then
        cols[c], d1[r + c], d2[r - c + n] = true, true, true
        place(r + 1)
        cols[c], d1[r + c], d2[r - c + n] = false, false, false
      end
    end
  end
  place(1)
  return count
end

local function tree(depth)
  if depth == 0 then return { 1 } end
  return { tree(depth - 1), tree(depth - 1), depth }
end
local function check(t)
  if t[2] == nil then return t[1] end
  return check(t[1]) - check(t[2]) + t[3]
end

for round = 1, scale do
  print("fib", fib(27))
  print("tak", tak(18, 12, 6))
  print("ack", ack(2, 300), ack(3, 6))
  print("queens", queens(8))
  local s = 0
  for d = 4, 15 do s = s + check(tree(d)) end
  print("tree", s)
end
