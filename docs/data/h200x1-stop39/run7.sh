#!/bin/bash
# stop 39, call 7 (1 x H200, 16 cores): the hierarchical engine's flat against hier algorithms on CPU ranks, 4 ranks as
# two pretend hosts of two (bench coll --hosts 2, ETHERNET between), warmed up (3000 calls per size), twice each
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
start=$SECONDS
for rep in 1 2; do for k in allreduce allgather; do for a in flat hier; do
  [ $((SECONDS-start)) -gt 440 ] && { echo "$k-$a-$rep skipped" >> $OUT/log.txt; continue; }
  timeout 100 bin/jmscclpp bench coll $k --ranks 4 --hosts 2 --backend host -b 1K -e 256K -f 4 -n 1000 -w 3000 -c 1 --overhead 0 --algo $a > $OUT/$k-$a-$rep.log 2>&1
  echo "$k-$a-$rep rc=$? at $((SECONDS-start)) s" >> $OUT/log.txt
done; done; done
cd $OUT && for f in *-[12].log; do grep -E "^ +[0-9]+ " $f | awk -v n=${f%.log} '{print n, $1, $6, $10}'; done > summary.txt
