-- Table- and string-heavy: a generated corpus, word counts, string.format/gsub/find, sorting, concat.
local scale = tonumber(arg and arg[1]) or 1
local seed = 12345
local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end

local sylls = { "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "an", "ex", "or", "ul", "ph", "qu", "st" }
local function word()
  local parts = {}
  for i = 1, 1 + rand(4) do parts[i] = sylls[1 + rand(#sylls)] end
  return table.concat(parts)
end

for round = 1, scale do
  local lines = {}
  for i = 1, 20000 do
    local ws = {}
    for j = 1, 4 + rand(8) do ws[j] = word() end
    lines[i] = string.format("%05d: %s.", i, table.concat(ws, " "))
  end
  local text = table.concat(lines, "\n")
  local counts, distinct = {}, 0
  for w in text:gmatch("%a+") do
    local c = counts[w]
    if c == nil then distinct = distinct + 1; counts[w] = 1 else counts[w] = c + 1 end
  end
  local words = {}
  for w in pairs(counts) do words[#words + 1] = w end
  table.sort(words, function(a, b)
    if counts[a] ~= counts[b] then return counts[a] > counts[b] end
    return a < b
  end)
  print("chars", #text, "distinct", distinct, "top", words[1], counts[words[1]], words[2], counts[words[2]])
  local upper = text:gsub("(%a)(%a*)", function(a, b) return a:upper() .. b end)
  local n = select(2, upper:gsub("Ka", "KA"))
  print("capitalised", #upper, "Ka", n)
  local hits = 0
  for i = 1, #lines, 3 do if lines[i]:find("toka", 1, true) then hits = hits + 1 end end
  print("find", hits)
  local rev = {}
  for i = 1, #lines do rev[i] = lines[i]:reverse():sub(1, 12) end
  table.sort(rev)
  print("rev", rev[1], rev[#rev])
  local m = {}
  for i = 1, 200000 do m[i % 4096 + 1] = (m[i % 4096 + 1] or 0) + i; m["k" .. (i % 1000)] = i end
  local s = 0
  for k, v in pairs(m) do if type(k) == "number" then s = s + v end end
  print("map", s)
end
