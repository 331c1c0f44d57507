#!/usr/bin/env bash
# stop 42, call 3 (nvidia-h200-x2), landed main fdc068f: the 2-GPU sweep of 7 ops; bench ethernet x3 on the 32-core host;
# sendrecv 256M-1G with the default scratch (32 pieces at 1 GiB) against JMSCCLPP_SCRATCH_BYTES=1G (4 pieces)
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
nproc; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 /tmp/jmscclpp/bin/gpu-sweep $L/sweep-2 2 allreduce allgather reducescatter broadcast reduce alltoall sendrecv > $L/sweep.out 2>&1
echo "sweep exit $? at $SECONDS"
for f in $L/sweep-2/*-float-graph.log; do echo "-- $(basename $f)"; grep -hE "^ +[0-9]+ " $f | awk '{printf "%s:%s ", $1, $NF} END {print ""}'; grep -hE "^ +[0-9]+ " $f | awk '{w+=$9+$13} END {print "wrong " w}'; grep -h "Mono - stream" $f | head -1 | sed 's/.*Mono - stream = /Mono-stream /'; done
for r in 1 2 3; do
  timeout 90 $J bench ethernet --max 16M --iters 100 > $L/ethernet-$r.log 2>&1; echo "ethernet $r exit $? at $SECONDS"
  grep -E "^\| +[0-9]+ [KM]iB|write|target" $L/ethernet-$r.log
done
for r in 1 2; do
  for s in default 1G; do
    if [[ $s == default ]]; then unset JMSCCLPP_SCRATCH_BYTES; else export JMSCCLPP_SCRATCH_BYTES=$s; fi
    timeout 60 $J bench coll sendrecv --ranks 2 --backend cuda -b 256M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $L/sendrecv-$s-$r.log 2>&1
    echo "== sendrecv scratch $s round $r exit $? at $SECONDS"; grep -hE "^ +[0-9]+ " $L/sendrecv-$s-$r.log | awk '{printf "%s: %s %s #%s #%s | %s %s\n", $1, $6, $8, $9, $13, $(NF-2), $NF}'
  done
done
unset JMSCCLPP_SCRATCH_BYTES
cd $OUT && tar czf logs.tgz logs && rm -rf logs
