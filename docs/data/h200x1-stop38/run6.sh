#!/bin/bash
# stop 38, call 6: the two-users VMM test with both ranks on the one GPU; /dev/nvidia* permissions; id/setpriv
R=$(pwd); cd /tmp && rm -rf /tmp/jmscclpp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
{ id; which setpriv; ls -l /dev/nvidia*; cat /proc/sys/kernel/yama/ptrace_scope 2>&1; } > $OUT/6-host.txt 2>&1
timeout 200 bin/gpu-tests --select-class org.jmscclpp.cuda.CudaIpcAcrossUsersGpuTest > $OUT/6-across-users.log 2>&1; echo "gpu-tests exit $?" >> $OUT/6-across-users.log
cat $OUT/6-host.txt
grep -E "vmm-across-users|pidfd|UID|OK |✘|✔|tests (successful|failed|aborted)|Assumption|gpu-tests exit" $OUT/6-across-users.log | head -40
