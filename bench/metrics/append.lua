-- wrk script: POST a `bytes`-byte text/plain body (default 256) to the URL's stream, once per request.
-- Usage: wrk -s append.lua http://host:port/v1/stream/NAME -- 256
init = function(args)
  local bytes = tonumber(args[1]) or 256
  wrk.method = "POST"
  wrk.body = string.rep("x", bytes)
  wrk.headers["Content-Type"] = "text/plain"
end
