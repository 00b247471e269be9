-- A small stack-machine interpreter written in Lua (a dispatch loop over an opcode array), running a
-- program that sieves primes and sums a series.
local scale = tonumber(arg and arg[1]) or 1
local factor = tonumber(arg and arg[2]) or 1
local PUSH, LOAD, STORE, ADD, SUB, MUL, MOD, LT, JMP, JZ, PRINT, HALT, ALOAD, ASTORE, DUP =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15

local function run(code, mem, out)
  local stack, sp, pc, steps = {}, 0, 1, 0
  while true do
    local op = code[pc]
    steps = steps + 1
    if op == PUSH then sp = sp + 1; stack[sp] = code[pc + 1]; pc = pc + 2
    elseif op == LOAD then sp = sp + 1; stack[sp] = mem[code[pc + 1]]; pc = pc + 2
    elseif op == STORE then mem[code[pc + 1]] = stack[sp]; sp = sp - 1; pc = pc + 2
    elseif op == ADD then stack[sp - 1] = stack[sp - 1] + stack[sp]; sp = sp - 1; pc = pc + 1
    elseif op == SUB then stack[sp - 1] = stack[sp - 1] - stack[sp]; sp = sp - 1; pc = pc + 1
    elseif op == MUL then stack[sp - 1] = stack[sp - 1] * stack[sp]; sp = sp - 1; pc = pc + 1
    elseif op == MOD then stack[sp - 1] = stack[sp - 1] % stack[sp]; sp = sp - 1; pc = pc + 1
    elseif op == LT then stack[sp - 1] = (stack[sp - 1] < stack[sp]) and 1 or 0; sp = sp - 1; pc = pc + 1
    elseif op == JMP then pc = code[pc + 1]
    elseif op == JZ then
      local v = stack[sp]; sp = sp - 1
      if v == 0 then pc = code[pc + 1] else pc = pc + 2 end
    elseif op == DUP then sp = sp + 1; stack[sp] = stack[sp - 1]; pc = pc + 1
    elseif op == ALOAD then stack[sp] = mem[1000 + stack[sp]]; pc = pc + 1
    elseif op == ASTORE then mem[1000 + stack[sp]] = stack[sp - 1]; sp = sp - 2; pc = pc + 1
    elseif op == PRINT then out[#out + 1] = stack[sp]; sp = sp - 1; pc = pc + 1
    elseif op == HALT then return steps
    else error("bad opcode " .. tostring(op)) end
  end
end

-- Assembler with labels.
local function assemble(src)
  local code, labels, fix = {}, {}, {}
  for tok in src:gmatch("%S+") do
    if tok:sub(-1) == ":" then labels[tok:sub(1, -2)] = #code + 1
    elseif tonumber(tok) then code[#code + 1] = tonumber(tok)
    elseif _ENV[tok] == nil and ({PUSH=1,LOAD=1,STORE=1,ADD=1,SUB=1,MUL=1,MOD=1,LT=1,JMP=1,JZ=1,PRINT=1,HALT=1,
                                  ALOAD=1,ASTORE=1,DUP=1})[tok] then
      code[#code + 1] = ({PUSH=PUSH,LOAD=LOAD,STORE=STORE,ADD=ADD,SUB=SUB,MUL=MUL,MOD=MOD,LT=LT,JMP=JMP,JZ=JZ,
                          PRINT=PRINT,HALT=HALT,ALOAD=ALOAD,ASTORE=ASTORE,DUP=DUP})[tok]
    else code[#code + 1] = tok; fix[#fix + 1] = #code end
  end
  for _, i in ipairs(fix) do code[i] = assert(labels[code[i]], code[i]) end
  return code
end

-- mem[1] = n, mem[2] = i, mem[3] = j, mem[4] = count, mem[5] = acc, mem[6] = series length; array at 1000+.
local sieve = assemble([[
  PUSH 2 STORE 2
  fill: LOAD 2 LOAD 1 LT JZ sieve PUSH 1 LOAD 2 ASTORE LOAD 2 PUSH 1 ADD STORE 2 JMP fill
  sieve: PUSH 2 STORE 2 PUSH 0 STORE 4
  outer: LOAD 2 LOAD 1 LT JZ done
    LOAD 2 ALOAD JZ next
    LOAD 4 PUSH 1 ADD STORE 4
    LOAD 2 LOAD 2 ADD STORE 3
    inner: LOAD 3 LOAD 1 LT JZ next PUSH 0 LOAD 3 ASTORE LOAD 3 LOAD 2 ADD STORE 3 JMP inner
  next: LOAD 2 PUSH 1 ADD STORE 2 JMP outer
  done: LOAD 4 PRINT
  PUSH 0 STORE 5 PUSH 0 STORE 2
  series: LOAD 2 LOAD 6 LT JZ end
    LOAD 5 LOAD 2 LOAD 2 MUL PUSH 7 MOD ADD STORE 5 LOAD 2 PUSH 1 ADD STORE 2 JMP series
  end: LOAD 5 PRINT HALT
]])

for round = 1, scale do
  local total = 0
  for _, n in ipairs({ 100000, 150000, 200000 }) do
    n = math.floor(n * factor)
    local out = {}
    local steps = run(sieve, { n, 0, 0, 0, 0, 2 * n }, out)
    total = total + steps
    print("n", n, "primes", out[1], "series", out[2], "steps", steps)
  end
  print("total steps", total)
end
