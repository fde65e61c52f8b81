#!/bin/bash
# Runs HOGS (default 1) python busy loops beside the command; stops them by PID afterwards.
pids=()
for i in $(seq 1 ${HOGS:-1}); do python3 -c 'while True: pass' & pids+=($!); done
"$@"
rc=$?
kill "${pids[@]}"
wait "${pids[@]}" 2>/dev/null
exit $rc
