-- wrk script: GETs of one path over keep-alive connections, for phase `small` of bench/run.ts (spawned by
-- bench/lib/wrk.ts):
--
--   wrk -t1 -c32 -d3s -s bench/lib/get.lua http://127.0.0.1:<port>/<path>
--
-- No request() or response() function: wrk sends its one prebuilt request and reads answers in C, so the load
-- generator stays light (no Lua call per request). Answers are checked in aggregate instead: wrk counts those with
-- a status above 399 (`non2xx`), and bench/lib/wrk.ts checks that the bytes read (`bytes`, headers included) cover
-- every body. done() prints one line, `JSON {…}`:
--   requests  completed requests (any status)
--   non2xx    of them, answers with a status above 399
--   connect, read, write, timeout   wrk's socket errors and timeouts
--   bytes     bytes read, headers and bodies
--   p50, p99, mean, max             latency of one request, µs
--   duration                        of the run, µs

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'JSON {"requests":%d,"non2xx":%d,"firstError":null,"connect":%d,"read":%d,"write":%d,"timeout":%d,' ..
      '"bytes":%d,"p50":%d,"p99":%d,"mean":%.1f,"max":%d,"duration":%d}\n',
    summary.requests, e.status, e.connect, e.read, e.write, e.timeout, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max, summary.duration))
end
