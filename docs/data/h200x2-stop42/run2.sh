#!/usr/bin/env bash
# stop 42, call 2 (nvidia-h200-x2): NVLink store-rate experiment v2 (uni/bidir, CE split, CE+SM), then 2-rank reduce:
# landed push (pushReduce) vs chain on two ranks (patched native-bridge jar) vs rs, beside NCCL
set -u
export NCCL_NVLS_ENABLE=0
R=$PWD; L=$OUT/logs; mkdir -p $L
timeout 150 $R/.tmp-device/nvlbench 536870912 5 2 > $L/nvlbench-mode2.log 2>&1; echo "nvlbench exit $? at $SECONDS"; cat $L/nvlbench-mode2.log
cd /tmp && tar xzf "$R/dist/bundleA.tgz" && cp -r /tmp/jmscclpp /tmp/jb && cp $R/.tmp-device/nb-chain2.jar /tmp/jb/lib/jmscclpp-native-bridge-0.1.0-SNAPSHOT.jar
ab() { # tag bundle op algo from
  timeout 60 /tmp/$2/bin/jmscclpp bench coll $3 --ranks 2 --backend cuda -b $5 -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl --algo $4 > $L/$1-$3-$4.log 2>&1
  echo "== $1 $3 $4 exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/$1-$3-$4.log | awk '{printf "%s: %s %s %s #%s #%s | %s %s\n", $1, $6, $8, $(NF-1), $9, $13, $(NF-2), $NF}'
  grep -h "rror\|xception" $L/$1-$3-$4.log | head -5
}
for round in 1 2; do
  ab A$round jmscclpp reduce push 4M; ab B$round jb reduce push 4M; ab A$round jmscclpp reduce rs 64M
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
