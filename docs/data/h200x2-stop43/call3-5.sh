#!/usr/bin/env bash
# stop 43, calls 3-5 (nvidia-h200-x2; call 3 printed no trace, call 4 kept the last 4096 requests, call 5 (this
# script) all of at least 1 MiB): where a ce allReduce's time goes: the copy proxy's trace (when each request was
# seen, how long its enqueue took; a temporary instrumented jar) for 1 GiB and 16 MiB calls
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
for s in 1G 16M; do
  JMSCCLPP_CE_TRACE=100000 timeout 60 $J bench coll allreduce --ranks 2 --backend cuda -b $s -e $s -n 20 -w 5 -c 1 --graph 10 --algo ce > $L/trace-$s.log 2>&1
  echo "== $s exit $?"; grep -hE "^ +[0-9]+ " $L/trace-$s.log | awk '{printf "%s: oop %s %s | in %s %s\n", $1, $6, $8, $10, $12}'
  sleep 0; cp /tmp/ce-trace-r*.txt $L/ 2>/dev/null; for f in /tmp/ce-trace-r*.txt; do mv $f $L/$s-$(basename $f); done; wc -l $L/$s-ce-trace-r0.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
