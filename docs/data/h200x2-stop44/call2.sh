#!/usr/bin/env bash
# stop 44, call 2 (nvidia-h200-x2): cebench (what a copy request costs the host and how long until it runs, by the
# state of the copy stream), then allgather --algo ce 256 MiB-1 GiB beside NCCL as today's reference
set -u
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
timeout 60 .tmp-device/cebench 200 > $L/cebench.log 2>&1; echo "cebench exit $?"; cat $L/cebench.log
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
timeout 45 $J bench coll allgather --ranks 2 --backend cuda -b 256M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo ce > $L/allgather-ce.log 2>&1
echo "allgather exit $?"; grep -hE "^ +[0-9]+ " $L/allgather-ce.log | awk '{printf "%s: oop %s %s | in %s %s | #%s #%s | nccl %s %s t/nccl %s\n", $1, $6, $8, $10, $12, $9, $13, $(NF-2), $(NF-1), $NF}'
cd $OUT && tar czf logs.tgz logs && rm -rf logs
