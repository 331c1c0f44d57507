#!/usr/bin/env bash
# stop 42, call 5 (nvidia-h200-x2): ce with the proxy spinning 10 ms after a request and 16 blocks for the own slot:
# allgather, alltoall, broadcast --algo ce against memory beside NCCL, 16 MiB-1 GiB, two rounds
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # op algo from round
  timeout 70 $J bench coll $1 --ranks 2 --backend cuda -b $3 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $2 > $L/$1-$2-$4.log 2>&1
  echo "== $1 $2 round $4 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-$2-$4.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/$1-$2-$4.log | head -5
}
for r in 1 2; do
  for op in allgather alltoall broadcast; do ab $op ce 4M $r; ab $op memory 4M $r; done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
