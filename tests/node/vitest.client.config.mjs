import { defineConfig } from "vitest/config"

// The client integration test (client.test.mjs) against a running weir; see
// tests/integration/client/run-client.sh.
export default defineConfig({
  test: {
    include: ["client.test.mjs"],
    testTimeout: 20000,
    hookTimeout: 20000,
  },
})
