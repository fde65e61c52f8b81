#!/bin/bash
cd /work/main
export BENCH_ARGS="--workloads seed --concurrency 64,128 --throughput-secs 5 --latency-count 50 --sse-count 50"
for i in 1 2 3; do
  for b in base new; do
    LABEL=$b bench/cluster-burst/run.sh /tmp/lead/weir-rel-$b /tmp/lead/rel 1 > /tmp/lead/rel-$b-$i.log 2>&1
  done
done
