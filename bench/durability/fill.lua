-- wrk script for bench/durability/restart.sh: POSTs `WEIR_FILL_BYTES`-byte bodies round-robin over
-- `WEIR_FILL_STREAMS` streams (/v1/stream/fill-0 ... fill-N-1), which the script created beforehand.
local streams = tonumber(os.getenv("WEIR_FILL_STREAMS") or "64")
local size = tonumber(os.getenv("WEIR_FILL_BYTES") or "262144")
local body = string.rep("0123456789abcdef", math.floor(size / 16))
local counter = 0
local thread_id = 0
local next_id = 0

function setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
end

function request()
  counter = counter + 1
  local path = "/v1/stream/fill-" .. ((counter * 7 + thread_id) % streams)
  return wrk.format("POST", path, {["Content-Type"] = "application/octet-stream"}, body)
end

local failures = 0
function response(status, headers, body)
  if status ~= 204 then
    failures = failures + 1
    if failures <= 5 then io.stderr:write("fill: status " .. status .. "\n") end
  end
end
