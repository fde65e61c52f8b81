#!/bin/bash
# Alternates the burst test under ASan beside one busy loop: base, new, base, new ...
cd /work/main
out=${OUT:-/tmp/lead/ab}; mkdir -p $out
for i in $(seq 1 ${PAIRS:-4}); do
  for b in base new; do
    bin=/tmp/lead/weir-asan-$b
    f=$out/$b-$i.txt
    date -u +%H:%M:%S > $f
    taskset -c 0 /tmp/lead/hog.sh python3 tests/integration/cluster/cluster_burst_test.py $bin >> $f 2>&1
    echo "rc $?" >> $f
    date -u +%H:%M:%S >> $f
  done
done
