-- Alert pushes with a realistic mix: 80 % updates of active keys, 15 % new keys, 5 %
-- recoveries (Ok, which retires the key). Each wrk thread owns its keys: the seeded ones
-- (seed-<i> with i % threads == thread id, pushed by bench/ingest.py before the run) plus the
-- ones it creates. The URL on the command line carries ?integration_key=.
-- done() prints one machine-readable line for bench/ingest.py.
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local nthreads = tonumber(os.getenv("WRK_THREADS") or "2")
  local seeds = tonumber(os.getenv("SEED_KEYS") or "600")
  tag = os.getenv("WRK_RUN_TAG") or "x"
  active = {}
  for i = id, seeds - 1, nthreads do table.insert(active, "seed-" .. i) end
  math.randomseed(os.time() + id * 7919)
  created = 0
  headers = {["Content-Type"] = "application/json"}
end

function request()
  local r = math.random()
  local key, status
  if r < 0.80 and #active > 0 then
    key = active[math.random(#active)]
    status = (math.random() < 0.5) and "Critical" or "Warning"
  elseif r < 0.95 or #active == 0 then
    created = created + 1
    key = "n-" .. tag .. "-" .. id .. "-" .. created
    status = "Warning"
    table.insert(active, key)
  else
    local i = math.random(#active)
    key = active[i]
    active[i] = active[#active]
    active[#active] = nil
    status = "Ok"
  end
  local body = string.format(
    '{"title_rule":"$svc latency high","event_status":"%s","alert_key":"%s",' ..
    '"description":"p99 above SLO","labels":{"host":"%s","svc":"svc-%d","env":"prod"}}',
    status, key, key, string.byte(key, #key) % 20)
  return wrk.format("POST", nil, headers, body)
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
