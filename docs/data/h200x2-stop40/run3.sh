#!/usr/bin/env bash
# stop 40, call 3 (nvidia-h200-x2, 32 cores): the full 2-GPU sweep of the new bundle; the two GPUs as two hosts
# (flat, hier, the table's choice) beside NCCL over sockets; bench ethernet (issue 16's command); bench proxy
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
(nvidia-smi topo -m; nproc; lscpu | head -20; date) > $L/host.txt 2>&1
timeout 200 /tmp/jmscclpp/bin/gpu-sweep $L/sweep-2 2 allreduce allgather reducescatter broadcast reduce alltoall sendrecv > $L/sweep.out 2>&1
echo "sweep exit $?"
for f in $L/sweep-2/*-float-graph.log; do echo "-- $(basename $f)"; grep -hE "^ +[0-9]+ " $f | awk '{printf "%s:%s ", $1, $NF} END {print ""}'; done
export NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
for op in allreduce allgather; do
  for algo in flat hier auto; do
    if (( SECONDS > 420 )); then echo 'out of time'; break 2; fi
    a=(); [[ $algo != auto ]] && a=(--algo $algo)
    timeout 60 $J bench coll $op --ranks 2 --hosts 2 --backend cuda --baseline nccl -b 1K -e 16M -f 4 -n 100 -w 100 -c 1 \
      --overhead 0 "${a[@]}" > $L/hosts-$op-$algo.log 2>&1
    echo "== hosts $op $algo exit $?"; grep -hE "^ +[0-9]+ " $L/hosts-$op-$algo.log | awk '{print $1, $6, $10, $14, $16}'
  done
done
unset NCCL_IB_DISABLE NCCL_SOCKET_IFNAME
if (( SECONDS < 440 )); then
  timeout 100 $J bench ethernet --max 16M --iters 100 > $L/ethernet.log 2>&1; echo "== ethernet exit $?"
  grep -vE "^#|^$" $L/ethernet.log | tail -25
fi
if (( SECONDS < 500 )); then
  timeout 70 $J bench proxy --backend cuda > $L/proxy.log 2>&1; echo "== proxy exit $?"
fi
cd $OUT && tar czf logs.tgz logs && rm -rf logs
