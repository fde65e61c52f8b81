#!/usr/bin/env python3
"""bench/cluster-burst/summarize.py RUN_DIR NAME START_UTC LOAD1: one tab-separated summary line of a
run of run.sh (the columns of summary.tsv's header line), from the nodes' GET /cluster before and after
the bench, their /metrics after it, and the bench's results.json."""
import glob, json, os, re, sys
d, name, start, load = sys.argv[1:5]
# Elections and losses during the bench: after minus before (start-up elections and leader balancing
# come before). Queue waits and read yields are since the start (the start moves little data).
lead = {"elections_started": 0, "leaderships_lost": 0, "lost_quorum": 0}
queue_ms = yields = 0
urgent_ms = -1  # -1: a build without the urgent lane
silence_ms = -1  # -1: a build that does not report it
for f in sorted(glob.glob(os.path.join(d, "cluster-[0-9].json"))):
    c = json.load(open(f))
    try:
        b = json.load(open(f.replace("cluster-", "cluster-before-")))
    except (OSError, ValueError):
        b = {}
    silence_ms = max(silence_ms, c.get("longest_leader_silence_ms", -1))
    for k in lead: lead[k] += c.get("leadership", {}).get(k, 0) - b.get("leadership", {}).get(k, 0)
    for p in c.get("peers", []):
        queue_ms = max(queue_ms, p.get("max_queue_ms", 0))
        urgent_ms = max(urgent_ms, p.get("max_urgent_queue_ms", -1))
        yields += p.get("read_yields", 0)
slow = 0
turn = 0.0
for f in sorted(glob.glob(os.path.join(d, "metrics-[0-9].txt"))):
    for line in open(f):
        m = re.match(r"weir_event_loop_slow_turns_total(?:\{[^}]*\})? (\S+)", line)
        if m: slow += int(float(m.group(1)))
        m = re.match(r"weir_event_loop_longest_turn_seconds(?:\{[^}]*\})? (\S+)", line)
        if m: turn = max(turn, float(m.group(1)))
errors = 0
kinds = {}
mib = []
small = []
try:
    r = json.load(open(os.path.join(d, "bench", "results.json")))
    for run in r.get("runs", []):
        errors += run.get("errors", 0)
        for k, n in run.get("error_kinds", {}).items(): kinds[k] = kinds.get(k, 0) + n
        mib.append("%.1f" % run.get("write_mib_s", 0))
        small.append("%.0f" % run.get("small_req_s", 0))
except (OSError, ValueError):
    errors = -1  # the bench wrote no results: see bench.log
print("\t".join(str(x) for x in [name, start, load, errors, lead["elections_started"], lead["leaderships_lost"],
      lead["lost_quorum"], slow, "%.3f" % turn, queue_ms, urgent_ms if urgent_ms >= 0 else "-",
      silence_ms if silence_ms >= 0 else "-", yields, "/".join(mib), "/".join(small),
      ",".join("%s=%d" % kv for kv in sorted(kinds.items())) or "-"]))
