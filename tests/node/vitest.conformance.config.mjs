import { defineConfig } from "vitest/config"

// The conformance suite (conformance.test.mjs) against a running weir; see
// tests/integration/conformance/run-conformance.sh.
export default defineConfig({
  test: {
    include: ["conformance.test.mjs"],
    // vitest's default is 5000 ms; the suite sets its own timeouts on slow tests.
    testTimeout: Number(process.env.CONFORMANCE_TEST_TIMEOUT_MS ?? 30000),
    hookTimeout: 30000,
  },
})
