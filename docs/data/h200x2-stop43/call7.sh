#!/usr/bin/env bash
# stop 43, call 7 (nvidia-h200-x2): ce allReduce variants after the words behind only each lane's last copy (a
# temporary jar: kernel defines, block count and proxy thread kind from the environment); 64 MiB-1 GiB
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
v() { # name, env...
  local n=$1; shift
  env "$@" timeout 40 $J bench coll allreduce --ranks 2 --backend cuda -b 64M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --algo ce > $L/v-$n.log 2>&1
  echo "== $n exit $? at $SECONDS: $(grep -hE "^ +[0-9]+ " $L/v-$n.log | awk '{printf "%s: %s %s #%s | in %s %s #%s; ", $1, $6, $8, $9, $10, $12, $13}')"
}
v c8b64 X=1
v c4b64 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4
v c4b32 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=32
v c3b32 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=3 JMSCCLPP_X_CEBLOCKS=32
v c8b32 JMSCCLPP_X_CEBLOCKS=32
v c2b32one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=2 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=32
v c3b32one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=3 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=32
v c4b32one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=32
v c4b32plat JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=32 JMSCCLPP_X_PLATFORM=1
v c4b48 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=48
v c4b16 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=16
cd $OUT && tar czf logs.tgz logs && rm -rf logs
