#!/usr/bin/env bash
# stop 43, call 10 (nvidia-h200-x2), the bundle of call 9: the table's choice for allreduce 128 MiB-1 GiB with 5 and
# with 50 warm-up iterations (is call 9's push-like 256 MiB row in the table run the copy proxy's first, cold calls?)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
for w in 5 50; do
  timeout 60 $J bench coll allreduce --ranks 2 --backend cuda -b 128M -e 1G -f 2 -n 20 -w $w -c 1 --graph 10 > $L/allreduce-table-w$w.log 2>&1
  echo "== warm-up $w exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/allreduce-table-w$w.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
