#!/usr/bin/env bash
# stop 44, call 8 (nvidia-h200-x2): ce2proc, 512 MiB each way, as one copy or as two back to back (first 1/8/64/256 MiB),
# two rounds, alternating
set -u
L=$OUT/logs; mkdir -p $L
for round in 1 2; do for f in 0 1048576 8388608 67108864 268435456; do
  timeout 60 .tmp-device/ce2proc 100 536870912 $f > $L/ce2proc-$f-$round.log 2>&1; echo "first $f round $round exit $?"; grep "together\|alone" $L/ce2proc-$f-$round.log | grep -v "2 writes"
done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
