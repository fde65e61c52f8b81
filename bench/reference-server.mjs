// Starts the Durable Streams Node reference server (npm @durable-streams/server 0.3.7), the "Durable
// Streams" peer in bench/compare, file-backed as in the published comparisons.
//
//   node bench/reference-server.mjs PORT DATADIR
//   node bench/reference-server.mjs PORT memory     (in-memory store, as ds-bench runs it: --saturation)
//
// The package is resolved from tests/node/node_modules (installed by `npm install` in tests/node), or
// from the directory named by WEIR_NODE_MODULES_FROM (a folder holding a package.json). Prints one line
// "listening URL pid=PID" once it accepts connections; stops cleanly on SIGTERM/SIGINT.
import { mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const [portArg, dataArg] = process.argv.slice(2)
if (!portArg || !dataArg) {
  console.error("usage: node reference-server.mjs PORT DATADIR")
  process.exit(2)
}
const here = dirname(fileURLToPath(import.meta.url))
const from = process.env.WEIR_NODE_MODULES_FROM ?? join(here, "..", "tests", "node")
const require = createRequire(join(resolve(from), "package.json"))
const { DurableStreamTestServer } = require("@durable-streams/server")

const inMemory = dataArg === "memory"
const dataDir = inMemory ? undefined : resolve(dataArg)
if (dataDir) mkdirSync(dataDir, { recursive: true })
const server = new DurableStreamTestServer({
  port: Number(portArg),
  host: "127.0.0.1",
  dataDir, // undefined: the package's in-memory store
  longPollTimeout: Number(process.env.DS_LONG_POLL_MS ?? 30000),
  compression: false, // the benchmark measures the protocol, not gzip; weir does not compress either
})
const url = await server.start()
console.log(`listening ${url} pid=${process.pid} store=${inMemory ? "memory" : `file:${dataDir}`}`)

let stopping = false
async function stop(signal) {
  if (stopping) return
  stopping = true
  const deadline = setTimeout(() => process.exit(1), 5000)
  try {
    await server.stop()
  } catch (e) {
    console.error(`stop after ${signal} failed:`, e)
  }
  clearTimeout(deadline)
  process.exit(0)
}
process.on("SIGTERM", () => stop("SIGTERM"))
process.on("SIGINT", () => stop("SIGINT"))
