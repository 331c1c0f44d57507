#!/usr/bin/env bash
# stop 43, call 8 (nvidia-h200-x2): ce allReduce variants (fewer blocks, one lane) after the words behind only each lane's last copy (a
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
v c2b16one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=2 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=16
v c2b24one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=2 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=24
v c2b12one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=2 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=12
v c3b16one "JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=3 JMSCCLPP_X_ONELANE=1" JMSCCLPP_X_CEBLOCKS=16
v c4b16 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=16
v c4b12 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=4 JMSCCLPP_X_CEBLOCKS=12
v c6b16 JMSCCLPP_X_DEFINES=JMSCCLPP_X_CHUNKS=6 JMSCCLPP_X_CEBLOCKS=16
cd $OUT && tar czf logs.tgz logs && rm -rf logs
