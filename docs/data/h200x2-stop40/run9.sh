#!/usr/bin/env bash
# stop 40, call 9 (nvidia-h200-x2): the Mono form's overhead at 1 KiB with ll16's fewest blocks 16 (before) and 64
# (call 8's default): bench coll allreduce|allgather -b 1K -e 1K --overhead 3000, interleaved, three rounds
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
for round in 1 2 3; do
  for op in allreduce allgather; do
    for b in 16 64; do
      if (( SECONDS > 200 )); then echo 'out of time'; break 3; fi
      JMSCCLPP_JAVA_OPTS="-Djmscclpp.collectives.llMinBlocks=$b" timeout 40 $J bench coll $op --ranks 2 --backend cuda \
        -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 > $L/ov-$op-$b-$round.log 2>&1
      echo "== $op $b $round: $(grep -h 'Mono - stream' $L/ov-$op-$b-$round.log | head -1 | sed 's/.*back to back \([0-9.]*\) us\/call, stream form enqueued back to back \([0-9.]*\) us\/call: Mono - stream = \([0-9.]*\).*/mono \1 stream \2 overhead \3/')"
    done
  done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
