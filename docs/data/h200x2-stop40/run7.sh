#!/usr/bin/env bash
# stop 40, call 7 (nvidia-h200-x2): ll16's fewest blocks (jmscclpp.collectives.llMinBlocks 16 = default, 32, 64)
# for every kind at 1-256 KiB, beside NCCL, two rounds
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
for round in 1 2; do
  for op in reduce broadcast allreduce allgather reducescatter alltoall; do
    for b in 16 32 64; do
      if (( SECONDS > 420 )); then echo 'out of time'; break 3; fi
      JMSCCLPP_JAVA_OPTS="-Djmscclpp.collectives.llMinBlocks=$b" timeout 60 $J bench coll $op --ranks 2 --backend cuda \
        -b 1K -e 256K -f 4 -n 40 -w 10 -c 1 --graph 10 --overhead 0 --baseline nccl > $L/ll-$op-$b-$round.log 2>&1
      echo "== $op llMinBlocks $b round $round exit $?"; grep -hE "^ +[0-9]+ " $L/ll-$op-$b-$round.log | awk '{printf "%s: %s %s %s | ", $1, $6, $10, $14} END {print ""}'
    done
  done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
