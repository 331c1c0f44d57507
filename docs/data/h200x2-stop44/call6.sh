#!/usr/bin/env bash
# stop 44, call 6 (nvidia-h200-x2): ce2proc, two processes (one per GPU) enqueueing copy requests alone and together
set -u
L=$OUT/logs; mkdir -p $L
for b in 4096 67108864 536870912; do timeout 60 .tmp-device/ce2proc 200 $b > $L/ce2proc-$b.log 2>&1; echo "exit $?"; cat $L/ce2proc-$b.log; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
