"""One line per run of the burst test's output: 503s, round seconds, elections (sum over nodes),
elections by timeout, the longest wait of an urgent frame and of any frame in a peer queue (ms)."""
import ast, glob, re, sys
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d + "/*.txt"), key=lambda p: (p.split("-")[-1], p)):
        t = open(f).read()
        last = re.findall(r"so far: (\d+) outcome unknown, (\d+) nothing written", t)[-1]
        secs = sum(float(x) for x in re.findall(r"512 KiB in ([\d.]+) s", t))
        el = tmo = 0
        for m in re.finditer(r"leadership (\{.*?\});", t):
            L = ast.literal_eval(m.group(1))
            el += L["elections_started"]; tmo += L["elections_timeout"]
        urg = max(int(x) for x in re.findall(r"max_urgent_queue_ms': (\d+)", t))
        anyq = max(int(x) for x in re.findall(r"'max_queue_ms': (\d+)", t))
        ok = "passed" if "all checks passed" in t else "FAILED"
        print(f"{f}\t{last[0]}\t{last[1]}\t{secs:.1f}\t{el}\t{tmo}\t{urg}\t{anyq}\t{ok}")
