#!/usr/bin/env bash
# stop 44, call 7 (nvidia-h200-x2, 32 cores): bench ethernet --max 16M --iters 100, three runs, from the landed main's bundle
set -u
L=$OUT/logs; mkdir -p $L
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
nproc > $L/nproc.txt
for r in 1 2 3; do
  timeout 150 $J bench ethernet --max 16M --iters 100 > $L/ethernet-$r.log 2>&1; echo "ethernet $r exit $? at $SECONDS"
  grep -E "^\| +[0-9]+ [KM]iB|^\| (write|ping)|target:" $L/ethernet-$r.log | awk -F'|' '{print $2 "|" $4 "|" $5 "|" $6}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
