// Starts s3rver (npm @20minutes/s3rver, pinned in tests/node/package.json) for the S3 client's
// integration test: on 127.0.0.1, on the port the OS picks, with one bucket, its files in the directory
// given. Prints "port N" on stdout once it listens; stops on SIGTERM. Run with
// `node --openssl-legacy-provider` (its continuation tokens use DES).
//   node --openssl-legacy-provider s3rver.mjs NODE_MODULES_PARENT DATA_DIR BUCKET [PORT]
import { createRequire } from "node:module";
import path from "node:path";

const [nodeDir, dataDir, bucket, port = "0"] = process.argv.slice(2);
const require = createRequire(path.join(nodeDir, "package.json"));
const S3rver = require("@20minutes/s3rver");

const server = new S3rver({
  address: "127.0.0.1",
  port: Number(port),
  silent: true,
  directory: dataDir,
  vhostBuckets: false,
  configureBuckets: [{ name: bucket }],
});
const addr = await server.run();
process.stdout.write(`port ${addr.port}\n`);
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
