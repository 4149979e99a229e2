-- GET the URL given on the command line (no body): for GET-only routes such as /healthz.
-- With env WRK_COOKIE set, every request sends it as its Cookie header (a console session).
-- done() prints one machine-readable line for the harness (bench/harness.py).
wrk.method = "GET"
local cookie = os.getenv("WRK_COOKIE")
if cookie and cookie ~= "" then
  wrk.headers["Cookie"] = cookie
end

function done(summary, latency, requests)
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"status_errors":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, summary.errors.status,
    summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max))
end
