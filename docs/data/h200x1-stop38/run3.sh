#!/bin/bash
# stop 38, call 3: ETHERNET experiment knobs on the 16-core host: SO_RCVLOWAT while a body is lent, spin before select on a full socket
set -u
cd dist && tar xzf bundle.tgz && cd ..
B=dist/jmscclpp/bin/jmscclpp
run() { # name opts
  for k in 1 2; do
    JMSCCLPP_JAVA_OPTS="$2" timeout 100 $B bench ethernet --max 4M --iters 100 > $OUT/3-eth-$1-$k.log 2>&1; echo "rc=$?" >> $OUT/3-eth-$1-$k.log
    echo "== $1 $k"; grep "KiB |\|MiB |\|rc=\|write + upd\|writeAndSig" $OUT/3-eth-$1-$k.log | grep -v "1 KiB\|4 KiB\|16 KiB"
  done
}
run base ""
run lowat256k "-Djmscclpp.ethernet.rcvLowat=262144"
run spin20 "-Djmscclpp.ethernet.sendSpinMicros=20"
run both "-Djmscclpp.ethernet.rcvLowat=262144 -Djmscclpp.ethernet.sendSpinMicros=20"
run lowat1m "-Djmscclpp.ethernet.rcvLowat=1048576"
