-- POST /team/upsert with a new team name on every request, so every request creates a team.
-- Names are "<tag>-<thread>-<counter>"; the tag (env WRK_RUN_TAG) is unique per wrk run, so
-- names never repeat across rounds either. team_name is limited to 39 characters.
local tag = os.getenv("WRK_RUN_TAG") or tostring(os.time())
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
end

local counter = 0
local prefix

function init(args)
  prefix = tag .. "-" .. tostring(tid) .. "-"
end

function request()
  counter = counter + 1
  local body = '{"team_name":"' .. prefix .. counter .. '","description":"bench"}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
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
