// Runs the examples of a Markdown file (the README) as written, against a fresh `weir serve`.
//
// Usage: node run-readme.mjs WEIR_BINARY TESTS_NODE_DIR FILE.md
//
// What is an example:
// * A fenced ```sh block is a terminal session: a line starting with `$ ` is a command (following lines
//   starting with `> ` continue it), the lines after it up to the next command are its expected output.
//   A line that is only `...` matches any number of lines; `...` inside a line matches any text. A last
//   expected line `[N]` expects exit status N (otherwise every command must exit 0). All the blocks of
//   the file run in one bash, in order, so a variable set in one block is seen by the next; `weir` is
//   the binary under test; the working directory is an empty temporary one.
// * A fenced ```js block is a Node program (ES module; @durable-streams/client resolves from
//   TESTS_NODE_DIR). The ```text block right after it is its expected output (same `...` rules).
// * `127.0.0.1:4437` (weir's default address) is replaced by the address of the node under test, in
//   commands, programs and expected output alike.
// Other blocks (indented, or fenced with another language) are not run.
//
// The node is started with --listen 127.0.0.1:0 and a temporary data dir; the test waits for its
// "listening on" log line, and stops it by PID with SIGTERM at the end (it must exit 0).
import { spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"

const [weirArg, nodeDir, mdFile] = process.argv.slice(2)
if (!weirArg || !nodeDir || !mdFile) {
  console.error("usage: run-readme.mjs WEIR_BINARY TESTS_NODE_DIR FILE.md")
  process.exit(2)
}
const weirBin = path.resolve(weirArg)

// ---- The examples of the file --------------------------------------------------------------------

// [{lang, body, line}] for every fenced block (line: 1-based line of its opening fence).
function fencedBlocks(text) {
  const blocks = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)/.exec(lines[i])
    if (!open) continue
    const start = i
    const body = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i])
    if (i === lines.length) throw new Error(`${mdFile}:${start + 1}: unterminated code block`)
    blocks.push({ lang: open[1], body, line: start + 1 })
  }
  return blocks
}

// A ```sh block as [{command, expected[], line}].
function shellCommands(block) {
  const cmds = []
  block.body.forEach((text, k) => {
    const line = block.line + 1 + k
    if (text.startsWith("$ ")) {
      cmds.push({ command: text.slice(2), expected: [], line })
    } else if (text.startsWith("> ") && cmds.length && cmds.at(-1).expected.length === 0) {
      cmds.at(-1).command += "\n" + text.slice(2)
    } else if (cmds.length) {
      cmds.at(-1).expected.push(text)
    } else if (text.trim() !== "") {
      throw new Error(`${mdFile}:${line}: text before the first "$ " command of a sh block`)
    }
  })
  return cmds
}

// ---- Matching output -------------------------------------------------------------------------------

function lineRegex(pattern) {
  const parts = pattern.split("...").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
  return new RegExp("^" + parts.join(".*") + "$")
}

// Does `actual` (lines) match `expected` (lines, with `...` wildcards)?
function matches(expected, actual) {
  const memo = new Map()
  const go = (e, a) => {
    const key = e * (actual.length + 1) + a
    if (memo.has(key)) return memo.get(key)
    let ok
    if (e === expected.length) ok = a === actual.length
    else if (expected[e] === "...") ok = go(e + 1, a) || (a < actual.length && go(e, a + 1))
    else ok = a < actual.length && lineRegex(expected[e]).test(actual[a]) && go(e + 1, a + 1)
    memo.set(key, ok)
    return ok
  }
  return go(0, 0)
}

// Lines of a program's output; trailing blank lines do not count (nor do they in expected output).
function outputLines(text) {
  const lines = text.split("\n")
  while (lines.length && lines.at(-1) === "") lines.pop()
  return lines
}

// ---- The node under test ---------------------------------------------------------------------------

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "weir-readme-"))
const weir = { proc: null, port: 0, log: "" }

function startWeir() {
  return new Promise((resolve, reject) => {
    const args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", path.join(tmp, "data")]
    weir.proc = spawn(weirBin, args, { stdio: ["ignore", "pipe", "pipe"] })
    const timer = setTimeout(() => reject(new Error(`weir did not log "listening on" in 20 s:\n${weir.log}`)), 20_000)
    const onData = (chunk) => {
      weir.log += chunk
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(weir.log)
      if (m && !weir.port) {
        weir.port = Number(m[1])
        clearTimeout(timer)
        resolve()
      }
    }
    weir.proc.stdout.on("data", onData)
    weir.proc.stderr.on("data", onData)
    weir.proc.on("error", (e) => {
      clearTimeout(timer)
      reject(new Error(`cannot start ${weirBin}: ${e.message}`))
    })
    weir.proc.on("exit", (code, signal) => {
      clearTimeout(timer)
      if (!weir.port) reject(new Error(`weir exited (${code ?? signal}) during start-up:\n${weir.log}`))
    })
  })
}

function stopWeir() {
  return new Promise((resolve) => {
    if (!weir.proc || weir.proc.exitCode !== null || weir.proc.signalCode !== null) {
      resolve({ code: weir.proc?.exitCode, signal: weir.proc?.signalCode })
      return
    }
    const timer = setTimeout(() => weir.proc.kill("SIGKILL"), 15_000)
    weir.proc.on("exit", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal })
    })
    weir.proc.kill("SIGTERM")
  })
}

// Runs a program to its end without blocking the event loop (weir's log pipe keeps draining meanwhile).
function run(file, args, { timeoutMs, cwd }) {
  return new Promise((resolve) => {
    const p = spawn(file, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    p.stdout.on("data", (c) => (stdout += c))
    p.stderr.on("data", (c) => (stderr += c))
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs)
    p.on("error", (e) => {
      clearTimeout(timer)
      resolve({ status: null, signal: null, stdout, stderr: stderr + e.message })
    })
    p.on("close", (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stdout, stderr })
    })
  })
}

// ---- Running the examples --------------------------------------------------------------------------

const here = (s) => s.replaceAll("127.0.0.1:4437", `127.0.0.1:${weir.port}`)
const failures = []

function report(where, what, expected, actual) {
  failures.push(`${where}: ${what}\n--- expected\n${expected.join("\n")}\n--- got\n${actual.join("\n")}\n`)
}

// All sh blocks in one bash: each command's output (stdout and stderr) and status go to files.
async function runShell(cmds) {
  const bin = path.join(tmp, "bin")
  const work = path.join(tmp, "work")
  const out = path.join(tmp, "out")
  for (const d of [bin, work, out]) fs.mkdirSync(d, { recursive: true })
  fs.symlinkSync(weirBin, path.join(bin, "weir"))
  let script = `cd ${JSON.stringify(work)}\nexport PATH=${JSON.stringify(bin)}:"$PATH"\n`
  cmds.forEach((c, i) => {
    // A brace group runs in this shell, so `&`, `$!`, `wait` and variables carry over.
    script += `{\n${here(c.command)}\n} >${JSON.stringify(path.join(out, String(i)))} 2>&1 </dev/null\n`
    script += `echo $? >${JSON.stringify(path.join(out, i + ".rc"))}\n`
  })
  script += "wait\n"
  const r = await run("bash", ["-c", script], { timeoutMs: 120_000, cwd: work })
  if (r.status !== 0) failures.push(`sh blocks: bash ended with ${r.status ?? r.signal}: ${r.stderr}`)
  cmds.forEach((c, i) => {
    const where = `${mdFile}:${c.line}: $ ${c.command.split("\n")[0]}`
    const file = path.join(out, String(i))
    if (!fs.existsSync(file + ".rc")) {
      failures.push(`${where}: did not run (an earlier command ended the shell?)`)
      return
    }
    const actual = outputLines(fs.readFileSync(file, "utf8"))
    const status = Number(fs.readFileSync(file + ".rc", "utf8").trim())
    let expected = c.expected.map(here)
    while (expected.length && expected.at(-1) === "") expected.pop()
    let wantStatus = 0
    const st = /^\[(\d+)\]$/.exec(expected.at(-1) ?? "")
    if (st) {
      wantStatus = Number(st[1])
      expected = expected.slice(0, -1)
    }
    if (status !== wantStatus) report(where, `exit status ${status}, expected ${wantStatus}`, expected, actual)
    else if (!matches(expected, actual)) report(where, "output differs", expected, actual)
  })
}

async function runNode(block, expectedBlock) {
  const where = `${mdFile}:${block.line}: js block`
  if (!expectedBlock) {
    failures.push(`${where}: no \`\`\`text block with its expected output right after it`)
    return
  }
  const dir = path.join(tmp, "js")
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir)
    fs.symlinkSync(path.resolve(nodeDir, "node_modules"), path.join(dir, "node_modules"))
  }
  const file = path.join(dir, `example-${block.line}.mjs`)
  fs.writeFileSync(file, here(block.body.join("\n")) + "\n")
  const r = await run(process.execPath, [file], { timeoutMs: 60_000, cwd: dir })
  const actual = outputLines(r.stdout + r.stderr)
  const expected = expectedBlock.body.map(here)
  while (expected.length && expected.at(-1) === "") expected.pop()
  if (r.status !== 0) report(where, `node exited with ${r.status ?? r.signal}`, expected, actual)
  else if (!matches(expected, actual)) report(where, "output differs", expected, actual)
}

async function main() {
  const text = fs.readFileSync(mdFile, "utf8")
  const blocks = fencedBlocks(text)
  const sh = blocks.filter((b) => b.lang === "sh")
  const js = blocks.filter((b) => b.lang === "js")
  if (sh.length === 0 || js.length === 0) {
    console.error(`${mdFile}: expected \`\`\`sh and \`\`\`js examples, found ${sh.length} and ${js.length}`)
    return 1
  }
  // One vocabulary: every setting `weir serve --print-config` prints is named in the file.
  const printed = await run(weirBin, ["serve", "--print-config"], { timeoutMs: 30_000, cwd: tmp })
  const names = [...printed.stdout.matchAll(/^([a-z0-9-]+) = /gm)].map((m) => m[1])
  if (printed.status !== 0 || names.length === 0) failures.push(`weir serve --print-config failed: ${printed.stderr}`)
  for (const n of names) {
    if (!text.includes("`" + n + "`")) failures.push(`${mdFile}: the setting \`${n}\` is not documented (settings table)`)
  }

  await startWeir()
  console.log(`weir (pid ${weir.proc.pid}) on 127.0.0.1:${weir.port}`)
  const cmds = sh.flatMap(shellCommands)
  await runShell(cmds)
  for (const b of js) {
    const next = blocks[blocks.indexOf(b) + 1]
    await runNode(b, next?.lang === "text" ? next : null)
  }
  const stopped = await stopWeir()
  if (stopped.code !== 0) failures.push(`weir exited with ${stopped.code ?? stopped.signal}:\n${weir.log}`)
  for (const f of failures) console.error(f)
  console.log(`${mdFile}: ${cmds.length} shell commands, ${js.length} Node programs, ${failures.length} failures`)
  return failures.length ? 1 : 0
}

let code = 1
try {
  code = await main()
} catch (e) {
  console.error(e.message)
  await stopWeir()
}
fs.rmSync(tmp, { recursive: true, force: true })
process.exit(code)
