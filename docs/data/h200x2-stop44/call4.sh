#!/usr/bin/env bash
# stop 44, call 4 (nvidia-h200-x2): is a copy request slower to enqueue on GPU 1? cebench both directions; the
# instrumented jar's allgather --algo ce 1 GiB with the GPUs as they are and swapped (CUDA_VISIBLE_DEVICES=1,0)
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
for a in 0 1; do timeout 60 .tmp-device/cebench 200 $a > $L/cebench-from$a.log 2>&1; echo "cebench from $a exit $?"; grep -A2 "^copies\|^idle-0,\|^busy" $L/cebench-from$a.log | grep -v "^--"; done
cd /tmp && tar xzf "$OLDPWD/dist/bundle-trace.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
for v in "0,1" "1,0"; do
  CUDA_VISIBLE_DEVICES=$v JMSCCLPP_JAVA_OPTS="-Djmscclpp.debug.ceTrace=$L/ag-$v" timeout 40 $J bench coll allgather --ranks 2 --backend cuda -b 1G -e 1G -n 20 -w 5 -c 1 --graph 10 --overhead 0 --algo ce > $L/ag-$v.log 2>&1
  echo "== visible $v exit $?"; grep -hE "^ +[0-9]+ " $L/ag-$v.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
  for r in 0 1; do f=$L/ag-$v-r$r.txt; tail -n 200 $f | awk '{print $7}' | sort -n | awk -v r=$r '{c[NR]=$1} END {printf "  r%s copy median %.2f p10 %.2f p90 %.2f |", r, c[int(NR/2)], c[int(NR*0.1)], c[int(NR*0.9)]}'; tail -n 200 $f | awk '{print $9}' | sort -n | awk '{c[NR]=$1} END {printf " writes median %.2f p90 %.2f\n", c[int(NR/2)], c[int(NR*0.9)]}'; done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
