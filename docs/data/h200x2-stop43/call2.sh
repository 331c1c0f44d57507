#!/usr/bin/env bash
# stop 43, call 2 (nvidia-h200-x2): the ce allReduce with two copy streams per peer (chunk k on lane k % 2):
# bench allreduce --algo ce beside NCCL, 16 MiB-1 GiB, two rounds, and push once
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
ab() { # op algo from round
  timeout 60 $J bench coll $1 --ranks 2 --backend cuda -b $3 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $2 > $L/$1-$2-$4.log 2>&1
  echo "== $1 $2 round $4 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-$2-$4.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
  grep -h "rror\|xception" $L/$1-$2-$4.log | head -5
}
ab allreduce ce 4M 1; ab allreduce push 4M 1; ab allreduce ce 4M 2
cd $OUT && tar czf logs.tgz logs && rm -rf logs
