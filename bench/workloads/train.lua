-- PGO training script for Lua (bench/pgo.py): a mix that differs from the measured workloads (recursion.lua,
-- tables_strings.lua, interp.lua): objects with metatables, closures, coroutines, string building and
-- pattern matching, sorting with a comparator, a little recursion and numeric loops.
local scale = tonumber(arg and arg[1]) or 1
local seed = 987654
local function rand(n) seed = (seed * 69069 + 1) % 4294967296; return seed % n end

-- Objects: a 2-D vector class with operators.
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec.__add(a, b) return Vec.new(a.x + b.x, a.y + b.y) end
function Vec.__mul(a, k) return Vec.new(a.x * k, a.y * k) end
function Vec:len2() return self.x * self.x + self.y * self.y end

-- Closures: counters and a memoised function.
local function memo(f)
  local cache = {}
  return function(n)
    local v = cache[n]
    if v == nil then v = f(n); cache[n] = v end
    return v
  end
end
local collatz
collatz = memo(function(n)
  if n == 1 then return 0 end
  if n % 2 == 0 then return 1 + collatz(n // 2) end
  return 1 + collatz(3 * n + 1)
end)

-- Coroutines: a generator of words.
local sylls = { "ba", "de", "fi", "go", "hu", "ja", "ke", "li", "mo", "nu", "pa", "re" }
local function words(n)
  return coroutine.wrap(function()
    for _ = 1, n do
      local w = {}
      for i = 1, 2 + rand(3) do w[i] = sylls[1 + rand(#sylls)] end
      coroutine.yield(table.concat(w))
    end
  end)
end

local function gcd(a, b) while b ~= 0 do a, b = b, a % b end return a end

for round = 1, scale do
  -- vectors
  local acc = Vec.new(0, 0)
  for i = 1, 200000 do acc = acc + Vec.new(i % 7, i % 11) * 0.5 end
  print("vec", acc.x, acc.y, acc:len2())
  -- memoised recursion
  local best, arg_best = 0, 0
  for n = 1, 60000 do
    local c = collatz(n)
    if c > best then best, arg_best = c, n end
  end
  print("collatz", arg_best, best)
  -- words, pattern matching, string building
  local counts, list = {}, {}
  for w in words(60000) do
    if not counts[w] then list[#list + 1] = w end
    counts[w] = (counts[w] or 0) + 1
  end
  table.sort(list, function(a, b)
    if counts[a] ~= counts[b] then return counts[a] > counts[b] end
    return a < b
  end)
  local buf = {}
  for i = 1, math.min(#list, 2000) do
    buf[#buf + 1] = string.format("%s=%d", list[i], counts[list[i]])
  end
  local s = table.concat(buf, ";")
  local vowels = select(2, s:gsub("[aeiou]", "%0"))
  local pairs_found = 0
  for a, b in s:gmatch("(%a+)=(%d+)") do if #a > 5 and tonumber(b) > 3 then pairs_found = pairs_found + 1 end end
  print("words", #list, #s, vowels, pairs_found, s:sub(1, 40))
  -- integer arithmetic
  local g = 0
  for i = 1, 300000 do g = g + gcd(i * 7919 % 100003, i % 977 + 1) end
  print("gcd", g)
end
