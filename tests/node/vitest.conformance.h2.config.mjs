import { defineConfig } from "vitest/config"

// The conformance suite (conformance.test.mjs) over HTTP/2: h2_dispatcher.mjs routes fetch through
// undici with h2 (TLS + ALPN) or h2c (prior knowledge); see tests/integration/conformance_h2.
export default defineConfig({
  test: {
    include: ["conformance.test.mjs"],
    setupFiles: ["./h2_dispatcher.mjs"],
    testTimeout: Number(process.env.CONFORMANCE_TEST_TIMEOUT_MS ?? 30000),
    hookTimeout: 30000,
  },
})
