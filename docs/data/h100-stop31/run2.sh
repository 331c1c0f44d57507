#!/usr/bin/env bash
# stop 31, call 2: done word by kernel vs by stream write, more rounds; profiles summarized here
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpus.txt
L=$OUT/log.txt
for round in 1 2 3; do
for v in kernel stream; do
 for k in allreduce broadcast; do
  if [ $v = stream ]; then export JMSCCLPP_X_STREAM_DONE=1; else unset JMSCCLPP_X_STREAM_DONE; fi
  echo "== done-by-$v $k round $round" >> $L
  timeout 60 bin/jmscclpp bench coll $k --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 3000 2>&1 | grep -E "Call overhead|rror" >> $L
 done
done
done
mkdir -p /tmp/prof
for v in kernel stream; do
 if [ $v = stream ]; then export JMSCCLPP_X_STREAM_DONE=1; else unset JMSCCLPP_X_STREAM_DONE; fi
 echo "== profiled allreduce done-by-$v" >> $L
 JAVA_TOOL_OPTIONS="-agentpath:$R/.tmp-device/libasyncProfiler.so=start,event=cpu,interval=100000,threads,collapsed,file=/tmp/prof/$v-%p.collapsed" timeout 120 bin/jmscclpp bench coll allreduce --ranks 2 --backend cuda -b 1K -e 1K -n 20 -w 5 -c 1 --overhead 20000 2>&1 | grep -E "Call overhead|rror|fatal" >> $L
 ls -la /tmp/prof >> $L
 for f in /tmp/prof/$v-*.collapsed; do echo "#### $f" >> $OUT/summary-$v.txt; awk -f $R/.tmp-device/summ.awk $f >> $OUT/summary-$v.txt 2>&1; done
done
unset JMSCCLPP_X_STREAM_DONE
