#!/usr/bin/env python3
"""bench/jetstream/summary.py: the turns of bench/compare --peers jetstream as jetstream.json and a
section appended to results.md.

    python3 bench/jetstream/summary.py RAW/jetstream-turns.tsv --out DIR [--info KEY=VALUE ...]

Each line of the TSV (written by bench/jetstream/turns.sh) names a turn's result: weir bench's
results.json (its many-streams row) for weir-cluster, publish.mjs's JSON for jetstream. Rows are paired
by round and writer count; the ratio weir / JetStream is taken within a pair, both measured minutes
apart on the same machine.
"""
import argparse
import csv
import json
import os
import sys


def load_turn(row):
    base = {
        "round": int(row["round"]),
        "writers": int(row["writers"]),
        "target": row["target"],
        "utc": row["utc"],
        "load1": float(row["load1"]),
        "server_cpu_s_turn": float(row["server_cpu_s"]),
    }
    try:
        with open(row["result"]) as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        base["failed"] = str(err)
        return base
    if row["target"] == "weir-cluster":
        many = data["many_streams"][0]
        appends = many["counts"].get("appends", 0)
        base.update(
            ops_s=many["ops_s"],
            ops=appends,
            p50_ms=many["p50_ms"],
            p99_ms=many["p99_ms"],
            p999_ms=None,
            errors=many["errors"],
            error_kinds=many["error_kinds"],
            client_cpu_share=[many["client_cpu"]["share"]],
            client_saturated=many["client_saturated"],
            # The whole turn: creating and deleting the W streams too.
            server_cpu_us_per_op=(base["server_cpu_s_turn"] * 1e6 / appends) if appends else None,
            server_cpu_span="the whole turn (stream creation and deletion included)",
        )
    else:
        cpu = data.get("server_cpu") or {}
        base.update(
            ops_s=data["acks_s"],
            ops=data["acks"],
            p50_ms=data["p50_ms"],
            p99_ms=data["p99_ms"],
            p999_ms=data["p999_ms"],
            errors=data["errors"],
            error_kinds=data["error_kinds"],
            client_cpu_share=data["client_cpu_share"],
            client_saturated=data["client_saturated"],
            server_cpu_us_per_op=cpu.get("us_per_ack"),
            server_cpu_span="the measured window",
            stream_leader=data.get("stream_leader"),
            connections=data.get("connections"),
        )
    return base


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("turns")
    ap.add_argument("--out", required=True)
    ap.add_argument("--info", action="append", default=[])
    a = ap.parse_args()
    with open(a.turns) as f:
        turns = [load_turn(r) for r in csv.DictReader(f, delimiter="\t")]
    info = dict(kv.split("=", 1) for kv in a.info)

    # weir against each JetStream target of the same round and writer count.
    pairs = []
    for key in sorted({(t["round"], t["writers"]) for t in turns}):
        same = {t["target"]: t for t in turns if (t["round"], t["writers"]) == key}
        w = same.get("weir-cluster")
        for name, j in sorted(same.items()):
            if name == "weir-cluster":
                continue
            pair = {"round": key[0], "writers": key[1], "peer": name}
            if w and w.get("ops_s") and j.get("ops_s"):
                pair["ops_ratio"] = w["ops_s"] / j["ops_s"]
                if w.get("p99_ms") and j.get("p99_ms"):
                    pair["p99_ratio"] = w["p99_ms"] / j["p99_ms"]
            pairs.append(pair)

    with open(os.path.join(a.out, "jetstream.json"), "w") as f:
        json.dump({"info": info, "turns": turns, "pairs": pairs}, f, indent=2)
        f.write("\n")

    md = ["", "## Against NATS JetStream (`--peers jetstream`)", ""]
    md.append("Turns after the run above: weir's 3-node cluster through node 1 (weir bench many-streams, W "
              "streams x W closed-loop writers, 256 B appends, each writer waiting for its 2xx) and a 3-node "
              "JetStream cluster through its node 1 (bench/jetstream/publish.mjs: W closed-loop publishers, "
              "256 B, each waiting for its PubAck, one stream of 3 replicas; jetstream: a connection per "
              "writer, jetstream-cN: the writers share N connections). weir fdatasyncs every entry; "
              "JetStream 2.9 syncs its files on a timer.")
    md.append("")
    for k, v in info.items():
        md.append(f"- {k}: {v}")
    md.append("")
    md.append("| round | writers | target | ops/s | p50 ms | p99 ms | p999 ms | errors | server CPU us/op "
              "| client CPU | load1 | UTC |")
    md.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for t in sorted(turns, key=lambda t: (t["round"], t["writers"], t["utc"])):
        if "failed" in t:
            md.append(f"| {t['round']} | {t['writers']} | {t['target']} | failed: {t['failed']} "
                      "| | | | | | | | |")
            continue
        client = " + ".join(f"{100 * c:.0f}%" for c in t["client_cpu_share"])
        if t["client_saturated"]:
            client += " (saturated)"
        md.append(f"| {t['round']} | {t['writers']} | {t['target']} | {fmt(t['ops_s'])} | {fmt(t['p50_ms'])} "
                  f"| {fmt(t['p99_ms'])} | {fmt(t['p999_ms'])} | {t['errors']} "
                  f"| {fmt(t['server_cpu_us_per_op'])} | {client} | {t['load1']} | {t['utc']} |")
    md.append("")
    md.append("| round | writers | peer | ops/s weir / peer | p99 weir / peer |")
    md.append("|---:|---:|---|---:|---:|")
    for p in pairs:
        md.append(f"| {p['round']} | {p['writers']} | {p['peer']} | {fmt(p.get('ops_ratio'))}x "
                  f"| {fmt(p.get('p99_ratio'))}x |")
    md.append("")
    md.append("Server CPU per op: weir's three nodes over the whole turn (its W streams' creation and deletion "
              "included), JetStream's three nodes over the measured window.")
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "results.md"), "a") as f:
        f.write(text)
    sys.stderr.write(text)


if __name__ == "__main__":
    main()
