#!/usr/bin/env bash
# stop 40, call 4 (nvidia-h200-x2, 32 cores): where a flat call across hosts spends its time: TRACE phases of
# bench coll allreduce --ranks 2 --hosts 2 --algo flat at 4 KiB on the cuda and host backends, and the
# bootstrap's own send/recv round trip on this host
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
timeout 120 $J bench bootstrap --procs 2 --jvm "" --no-mpi > $L/bootstrap.log 2>&1; echo "bootstrap exit $?"
grep -E "^\|" $L/bootstrap.log
for b in cuda host; do
  MSCCLPP_DEBUG=TRACE MSCCLPP_DEBUG_SUBSYS=ALL MSCCLPP_DEBUG_FILE=$L/trace-$b-%p.log timeout 60 $J bench coll allreduce \
    --ranks 2 --hosts 2 --backend $b --algo flat -b 4K -e 4K -n 2000 -w 2000 -c 1 --overhead 0 > $L/flat-$b.log 2>&1
  echo "== flat $b exit $?"; grep -hE "^ +[0-9]+ " $L/flat-$b.log
  for f in $L/trace-$b-*.log; do grep -h "all_reduce 4096 B" $f | tail -1500 | awk '{for(i=1;i<=NF;i++){if($i=="B:")t+=$(i+1); if($i=="descriptors")d+=$(i+1); if($i=="staging")st+=$(i+1); if($i=="result")r+=$(i+1)}; n++} END {if(n) printf "calls %d: mean %.1f us, descriptors %.1f, staging %.1f, result %.1f\n", n, t/n, d/n, st/n, r/n}' ; grep -h "all_reduce 4096 B" $f | tail -2; done
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
