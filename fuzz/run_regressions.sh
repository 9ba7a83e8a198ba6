#!/bin/sh
# run_regressions.sh DRIVER DIR [DRIVER DIR]...: every kept reproducer through its target's
# entry; fails on the first driver that does not exit 0 (a crash kills it by a signal).
set -u
status=0
while [ $# -ge 2 ]; do
  driver=$1 dir=$2
  shift 2
  if ! "$driver" "$dir" > /tmp/osprey-fuzz-regression.$$ 2>&1; then
    echo "FAILED: $driver $dir; last file started:"
    tail -n 20 /tmp/osprey-fuzz-regression.$$
    status=1
  else
    tail -n 1 /tmp/osprey-fuzz-regression.$$ | sed "s|^|$(basename "$dir"): |"
  fi
done
rm -f /tmp/osprey-fuzz-regression.$$
exit $status
