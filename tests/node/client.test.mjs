// weir with the official TypeScript client (@durable-streams/client 0.2.7): create, append, read back,
// follow live over SSE (JSON and binary), idempotent producer, close as EOF. Run against WEIR_URL by
// tests/integration/client/run-client.sh.
import { describe, expect, test } from "vitest"
import { DurableStream, IdempotentProducer, stream } from "@durable-streams/client"

const base = process.env.WEIR_URL
if (!base) throw new Error("WEIR_URL is required")
const url = (name) => `${base}/v1/stream/client-${name}-${Date.now()}-${Math.random().toString(36).slice(2)}`

// Resolves with the items seen by a live subscription once `until(items)` holds (bounded by a timeout).
function collectJson(res, until, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const items = []
    const timer = setTimeout(() => reject(new Error(`timed out with ${JSON.stringify(items)}`)), timeoutMs)
    res.subscribeJson(async (batch) => {
      items.push(...batch.items)
      if (until(items, batch)) {
        clearTimeout(timer)
        resolve({ items, batch })
      }
    })
  })
}

describe("weir with @durable-streams/client", () => {
  test("creates a JSON stream, appends and reads back", async () => {
    const u = url("json")
    const handle = await DurableStream.create({ url: u, contentType: "application/json" })
    await handle.append(JSON.stringify({ n: 1 }))
    await handle.append(JSON.stringify({ n: 2 }))
    await handle.append(JSON.stringify({ n: 3 }))
    const res = await stream({ url: u, live: false })
    expect(await res.json()).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    const head = await handle.head()
    expect(head.exists).toBe(true)
  })

  test("follows a stream live over SSE and sees closure", async () => {
    const u = url("sse")
    const handle = await DurableStream.create({ url: u, contentType: "application/json" })
    await handle.append(JSON.stringify({ step: "before" }))
    const res = await stream({ url: u, live: "sse" })
    const done = collectJson(res, (items, batch) => batch.streamClosed && items.length === 3)
    // Appends from another writer arrive on the open SSE connection.
    setTimeout(async () => {
      await handle.append(JSON.stringify({ step: "live-1" }))
      // The final message and the close in one request (PROTOCOL.md 5.2).
      await handle.close({ body: JSON.stringify({ step: "live-2" }) })
    }, 200)
    const { items, batch } = await done
    expect(items).toEqual([{ step: "before" }, { step: "live-1" }, { step: "live-2" }])
    expect(batch.streamClosed).toBe(true)
    res.cancel()
  })

  test("follows a binary stream over SSE (base64 on the wire)", async () => {
    const u = url("bin")
    const handle = await DurableStream.create({ url: u, contentType: "application/octet-stream" })
    const res = await stream({ url: u, live: "sse" })
    const bytes = []
    const got = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out with ${bytes.length} bytes`)), 10_000)
      res.subscribeBytes(async (chunk) => {
        bytes.push(...chunk.data)
        if (bytes.length >= 4) {
          clearTimeout(timer)
          resolve()
        }
      })
    })
    await handle.append(new Uint8Array([0, 255, 10, 13]))
    await got
    expect(bytes).toEqual([0, 255, 10, 13])
    res.cancel()
  })

  test("idempotent producer writes exactly once", async () => {
    const u = url("producer")
    const handle = await DurableStream.create({ url: u, contentType: "application/json" })
    const producer = new IdempotentProducer(handle, "client-test", { autoClaim: true })
    for (let i = 0; i < 50; i++) producer.append(JSON.stringify({ i }))
    await producer.flush()
    await producer.close()
    const items = await (await stream({ url: u, live: false })).json()
    expect(items.map((x) => x.i)).toEqual([...Array(50).keys()])
  })
})
