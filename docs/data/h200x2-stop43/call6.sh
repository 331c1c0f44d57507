#!/usr/bin/env bash
# stop 43, call 6 (nvidia-h200-x2): the ce allReduce's variants (a temporary jar: kernel defines and the block count
# from the environment): chunks per share 2/4/8/16, one lane, no reduction (timing only: results wrong), 32/96/128
# blocks; 256 MiB and 1 GiB
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
v() { # name, env...
  local n=$1; shift
  env "$@" timeout 40 $J bench coll allreduce --ranks 2 --backend cuda -b 256M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --algo ce > $L/v-$n.log 2>&1
  echo "== $n exit $? at $SECONDS: $(grep -hE "^ +[0-9]+ " $L/v-$n.log | awk '{printf "%s: oop %s %s #%s | in %s %s #%s;  ", $1, $6, $8, $9, $10, $12, $13}')"
}
v base X=1
v chunks2 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=2
v chunks4 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4
v chunks16 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=16
v onelane JMSCCLPP_X_DEFINES=JMSCCLPP_X_ONELANE=1
v noreduce JMSCCLPP_X_DEFINES=JMSCCLPP_X_NOREDUCE=1
v blocks32 JMSCCLPP_X_CEBLOCKS=32
v blocks96 JMSCCLPP_X_CEBLOCKS=96
v blocks128 JMSCCLPP_X_CEBLOCKS=128
v chunks4b128 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=128
cd $OUT && tar czf logs.tgz logs && rm -rf logs
