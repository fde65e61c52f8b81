// A vitest setup file: every fetch() of the test process goes through undici's Agent speaking HTTP/2 -
// h2 over TLS when the server offers it in ALPN (allowH2), or h2c with prior knowledge on a plain
// http:// origin (WEIR_H2=h2c: useH2c, the connection preface first, no HTTP/1.1 at all).
// Node's built-in fetch uses the dispatcher installed here (the global dispatcher symbol is shared).
// After the file's tests, every connection undici opened must have been HTTP/2, and there must be some.
import diagnosticsChannel from "node:diagnostics_channel"
import { Agent, setGlobalDispatcher } from "undici"
import { afterAll } from "vitest"

const mode = process.env.WEIR_H2
if (mode !== "h2" && mode !== "h2c") throw new Error("WEIR_H2 must be h2 or h2c")

setGlobalDispatcher(
  new Agent({
    allowH2: true,
    // Pool builds the connector from `connect`, so h2c is asked for there (a Client option otherwise).
    connect: { useH2c: mode === "h2c" },
    // Long-poll and SSE tests hold streams open; every one of them shares the origin's connection.
    maxConcurrentStreams: 256,
  }),
)

const versions = new Map()
diagnosticsChannel.subscribe("undici:client:connected", ({ connectParams }) => {
  const v = connectParams.version ?? "unknown"
  versions.set(v, (versions.get(v) ?? 0) + 1)
})

afterAll(() => {
  const seen = Object.fromEntries(versions)
  if (!versions.get("h2") || versions.size !== 1) {
    throw new Error(`expected only HTTP/2 connections, saw ${JSON.stringify(seen)}`)
  }
})
