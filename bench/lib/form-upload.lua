-- wrk script: form uploads (docs/development/kodo-protocol.md §4.1) of one object size under distinct keys, for phase `upload` of
-- bench/run.ts (spawned by bench/lib/wrk.ts).
--
--   wrk -t2 -c16 -d5s -s bench/lib/form-upload.lua http://127.0.0.1:<port>/ -- <token> <size> <keyPrefix>
--
-- Each request is `POST /` with a multipart/form-data body laid out as bench/lib/multipart.ts lays it out (same
-- boundary): fields `token`, `key`, then `file` (filename = key, `Content-Type: application/octet-stream`) holding
-- `size` bytes of the bench's content (bench/lib/data.ts: a 1 MiB xorshift32 block, repeated), so Granary and the
-- baseline receive the bytes the Node load generator would send. Keys are `<keyPrefix><thread id>-<n>`: distinct
-- across threads and requests.
--
-- Every answer that is not 2xx counts as an error (wrk itself only counts status > 399); the first one's status
-- and body are kept. done() prints one line, `JSON {…}`, that bench/lib/wrk.ts parses:
--   requests  completed requests (any status)
--   non2xx    of them, answers whose status is not 2xx; firstError: "HTTP <status>: <body…>" of the first one
--   connect, read, write, timeout   wrk's socket errors and timeouts
--   p50, p99, mean, max             latency of one request, µs
--   duration                        of the run, µs
--
-- wrk runs this file in one Lua state per thread (setup() and done() in another one), so per-thread figures are
-- globals of the thread's state, set with thread:set and read back in done() with thread:get.

local BOUNDARY = "----granary-bench-4b1d3c9e0f7a"
local CRLF = "\r\n"

-- setup() / done() state: the threads, numbered from 1.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

-- Per-thread state (each thread's own Lua state; tid is set by setup() before init() runs).
local token, prefix
local file              -- the `size` content bytes, built once
local counter = 0
non2xx = 0              -- globals: read by done() through thread:get
firstError = nil

-- The first `size` bytes of the content of bench/lib/data.ts: xorshift32 from 0x9e3779b9, each word written
-- little-endian, the 1 MiB block repeated. Built in a C array through LuaJIT's FFI (~2 ms for 1 MiB; byte by byte
-- in Lua took ~90 ms, during which the other thread already runs uncounted by wrk's clock).
local function content(size)
  local ffi, bit = require("ffi"), require("bit")
  assert(ffi.abi("le"), "the content is written as little-endian words")
  local bxor, lshift, rshift = bit.bxor, bit.lshift, bit.rshift
  local blockBytes = 1024 * 1024
  local n = math.min(size, blockBytes)
  local words = ffi.new("uint32_t[?]", math.ceil(n / 4))
  local x = bit.tobit(0x9e3779b9)
  for i = 0, math.ceil(n / 4) - 1 do
    x = bxor(x, lshift(x, 13))
    x = bxor(x, rshift(x, 17))
    x = bxor(x, lshift(x, 5))
    words[i] = x -- a signed 32-bit result, stored modulo 2^32
  end
  local block = ffi.string(words, n)
  if size <= blockBytes then return block end
  return string.rep(block, math.floor(size / blockBytes)) .. block:sub(1, size % blockBytes)
end

-- args: token, size (bytes), keyPrefix
function init(args)
  token = args[1]
  local size = tonumber(args[2])
  assert(token and size and args[3], "usage: -- <token> <size> <keyPrefix>")
  prefix = args[3] .. tostring(tid) .. "-"
  file = content(size)
end

-- The request is concatenated in one expression (one copy of the file bytes per request); only the key varies.
-- wrk copies the string and drops it; left to LuaJIT's own pace, dead 1 MiB requests pile up before they are
-- collected. One GC step per request halved wrk's CPU per 1 MiB upload against a sink server (user + system, ~1.8 to
-- ~0.9 ms; no change at 4 KiB). Likely why: the requests of one size have the same length and the same bytes
-- where LuaJIT's sparse string hash samples them, so the dead ones lengthen one chain of the string table and each
-- new string is then hashed whole; fewer of them also means less memory to map and fault in.
function request()
  collectgarbage("step")
  counter = counter + 1
  local key = prefix .. counter
  local head = "--" .. BOUNDARY .. CRLF .. 'Content-Disposition: form-data; name="token"' .. CRLF .. CRLF .. token .. CRLF ..
    "--" .. BOUNDARY .. CRLF .. 'Content-Disposition: form-data; name="key"' .. CRLF .. CRLF .. key .. CRLF ..
    "--" .. BOUNDARY .. CRLF .. 'Content-Disposition: form-data; name="file"; filename="' .. key .. '"' .. CRLF ..
    "Content-Type: application/octet-stream" .. CRLF .. CRLF
  local tail = CRLF .. "--" .. BOUNDARY .. "--" .. CRLF
  return "POST / HTTP/1.1" .. CRLF ..
    "Host: " .. wrk.headers["Host"] .. CRLF ..
    "Content-Type: multipart/form-data; boundary=" .. BOUNDARY .. CRLF ..
    "Content-Length: " .. (#head + #file + #tail) .. CRLF .. CRLF ..
    head .. file .. tail
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if not firstError then firstError = "HTTP " .. status .. ": " .. (body or ""):sub(1, 200) end
  end
end

-- A JSON string literal (quotes, backslashes and control bytes escaped).
local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
end

function done(summary, latency, requests)
  local bad, first = 0, nil
  for _, thread in ipairs(threads) do
    bad = bad + (thread:get("non2xx") or 0)
    first = first or thread:get("firstError")
  end
  local e = summary.errors
  io.write(string.format(
    'JSON {"requests":%d,"non2xx":%d,"firstError":%s,"connect":%d,"read":%d,"write":%d,"timeout":%d,' ..
      '"p50":%d,"p99":%d,"mean":%.1f,"max":%d,"duration":%d}\n',
    summary.requests, bad, first and quote(first) or "null", e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max, summary.duration))
end
