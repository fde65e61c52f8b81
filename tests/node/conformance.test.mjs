// Runs the official Durable Streams conformance suite against CONFORMANCE_TEST_URL (a running weir).
// `npx @durable-streams/server-conformance-tests --run URL` finds no test files when the package sits
// under node_modules (vitest excludes it), so this file imports runConformanceTests() itself.
import { runConformanceTests } from "@durable-streams/server-conformance-tests"

const baseUrl = process.env.CONFORMANCE_TEST_URL
if (!baseUrl) throw new Error("CONFORMANCE_TEST_URL is required")

runConformanceTests({
  baseUrl: baseUrl.replace(/\/+$/, ""),
  // sizes the per-test timeouts of long-poll tests (timeout + 1 s); weir runs with the same value
  longPollTimeoutMs: process.env.CONFORMANCE_LONG_POLL_MS ? Number(process.env.CONFORMANCE_LONG_POLL_MS) : undefined,
  // the reserved __ds subscription API tests (webhook + pull-wake)
  subscriptions: process.env.CONFORMANCE_SUBSCRIPTIONS === "1",
})
