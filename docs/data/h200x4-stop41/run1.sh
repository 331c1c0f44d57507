#!/usr/bin/env bash
# stop 41, call 1 (nvidia-h200-x4): landed main 9eccbb7's bundle. every op's sweep on 4 GPUs beside NCCL;
# directBlocks 64/128 on 4 ranks for the large sizes; the 4 GPUs as 2 hosts of 2 beside NCCL over sockets; Mono overhead on 4
set -u
export NCCL_NVLS_ENABLE=0
cd /tmp && tar xzf "$OLDPWD/dist/bundle.tgz" && J=/tmp/jmscclpp/bin/jmscclpp
L=$OUT/logs; mkdir -p $L
{ nvidia-smi -L; nproc; free -g | head -2; nvidia-smi topo -m; date; } > $L/host.txt 2>&1
timeout 150 /tmp/jmscclpp/bin/gpu-sweep $L/sweep-4 4 allreduce allgather reducescatter broadcast reduce alltoall sendrecv > $L/sweep.out 2>&1
echo "sweep exit $? at $SECONDS"
for f in $L/sweep-4/*-float-graph.log; do echo "-- $(basename $f)"; grep -hE "^ +[0-9]+ " $f | awk '{printf "%s:%s ", $1, $NF} END {print ""}'; grep -h "Mono - stream" $f | head -1; done
for op in allreduce broadcast reduce allgather; do for b in 64 128; do
  if (( SECONDS > 300 )); then echo 'out of time (blocks)'; break 2; fi
  JMSCCLPP_JAVA_OPTS="-Djmscclpp.collectives.directBlocks=$b" timeout 40 $J bench coll $op --ranks 4 --backend cuda -b 64M -e 1G -f 4 -n 20 -w 5 -c 1 --graph 10 --baseline nccl > $L/blocks-$op-$b.log 2>&1
  echo "== blocks $op $b exit $?"; grep -hE "^ +[0-9]+ " $L/blocks-$op-$b.log | cut -c1-200
done; done
export NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
for op in allreduce allgather reducescatter broadcast; do
  if (( SECONDS > 500 )); then echo 'out of time (hosts)'; break; fi
  timeout 60 $J bench coll $op --ranks 4 --hosts 2 --backend cuda --baseline nccl -b 1K -e 16M -f 4 -n 100 -w 100 -c 1 --overhead 0 > $L/hosts-$op.log 2>&1
  echo "== hosts $op exit $?"; grep -hE "^ +[0-9]+ " $L/hosts-$op.log | awk '{print $1, $6, $10, $14, $16}'
done
unset NCCL_IB_DISABLE NCCL_SOCKET_IFNAME NCCL_P2P_DISABLE NCCL_SHM_DISABLE
if (( SECONDS < 540 )); then
  timeout 40 $J bench coll allreduce --ranks 4 --backend cuda -b 1K -e 1K --overhead 3000 > $L/ov4-allreduce.log 2>&1; echo "== ov4 exit $?"; grep -h "overhead\|Mono" $L/ov4-allreduce.log | head -5
fi
echo "end at $SECONDS"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
