#!/usr/bin/env bash
# stop 44, call 5 (nvidia-h200-x2): the instrumented jar again, allgather --algo ce 1 GiB, the copy proxy on a virtual
# thread (as committed) and on a platform thread (-Djmscclpp.debug.ceThread=platform, the temporary jar's switch),
# alternating, two rounds each
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
cd /tmp && tar xzf "$OLDPWD/dist/bundle-trace.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
for round in 1 2; do for th in virtual platform; do
  n=ag-$th-$round
  JMSCCLPP_JAVA_OPTS="-Djmscclpp.debug.ceTrace=$L/$n -Djmscclpp.debug.ceThread=$th" timeout 40 $J bench coll allgather --ranks 2 --backend cuda -b 1G -e 1G -n 20 -w 5 -c 1 --graph 10 --overhead 0 --algo ce > $L/$n.log 2>&1
  echo "== $n exit $?"; grep -hE "^ +[0-9]+ " $L/$n.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
  for r in 0 1; do f=$L/$n-r$r.txt; head -1 $f | cut -c1-150; tail -n 200 $f | awk '{print $7}' | sort -n | awk -v r=$r '{c[NR]=$1} END {printf "  r%s copy median %.2f p10 %.2f p90 %.2f |", r, c[int(NR/2)], c[int(NR*0.1)], c[int(NR*0.9)]}'; tail -n 200 $f | awk '{print $9}' | sort -n | awk '{c[NR]=$1} END {printf " writes median %.2f p90 %.2f\n", c[int(NR/2)], c[int(NR*0.9)]}'; done
done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
