-- wrk script: send `depth` requests (default 16) in one write, as HTTP/1.1 pipelining.
-- Usage: wrk -s pipeline.lua http://host:port/path -- 16
init = function(args)
  local depth = tonumber(args[1]) or 16
  local r = {}
  for i = 1, depth do
    r[i] = wrk.format(nil)
  end
  batch = table.concat(r)
end

request = function()
  return batch
end
