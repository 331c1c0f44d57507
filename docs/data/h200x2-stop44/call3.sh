#!/usr/bin/env bash
# stop 44, call 3 (nvidia-h200-x2): a temporary jar with the copy proxy instrumented (per request: when it was seen,
# the gap since the one before, how long cuMemcpyAsync and the stream writes took to enqueue; written at close):
# allgather and allreduce --algo ce at 1 GiB and 64 MiB, no call-overhead runs
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
cd /tmp && tar xzf "$OLDPWD/dist/bundle-trace.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
for op in allgather allreduce; do for b in 1G 64M; do
  JMSCCLPP_JAVA_OPTS="-Djmscclpp.debug.ceTrace=$L/$op-$b" timeout 40 $J bench coll $op --ranks 2 --backend cuda -b $b -e $b -n 20 -w 5 -c 1 --graph 10 --overhead 0 --algo ce > $L/$op-$b.log 2>&1
  echo "== $op $b exit $?"; grep -hE "^ +[0-9]+ " $L/$op-$b.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s\n", $1, $6, $8, $10, $12, $9, $13}'
  for r in 0 1; do f=$L/$op-$b-r$r.txt; [ -f $f ] || continue
    echo "r$r: $(head -1 $f)"; tail -n +2 $f | awk '{c[NR]=$9; w[NR]=$11; g[NR]=$5} END {n=asort(c); asort(w); printf "  copy enqueue median %.2f p90 %.2f max %.2f; writes median %.2f p90 %.2f\n", c[int(n/2)+1], c[int(n*0.9)], c[n], w[int(n/2)+1], w[int(n*0.9)]}'
  done
done; done
tail -n 12 $L/allgather-1G-r0.txt; tail -n 12 $L/allreduce-1G-r0.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
