#!/usr/bin/env bash
# stop 32, call 7 (32 cores): bench ethernet with rank 1's thread driving the receiving loop (X_DRIVE=1: it waits for a
# signal after each ETHERNET block) against the background thread driving it, interleaved, two runs each
R=$(pwd); cd /tmp && tar xzf $R/dist/bundle.tgz && cd /tmp/jmscclpp
nproc
for i in 1 2; do for d in bg drive; do if [ $d = drive ]; then export X_DRIVE=1; else unset X_DRIVE; fi
 echo -n "$d $i: "; timeout 100 bin/jmscclpp bench ethernet --max 16M --turns 1000 2>&1 | grep -E '^\|  *(64|256) KiB|^\|  *(1|4|16) MiB|check fail|failed' | awk -F'|' '{gsub(/ /,"",$4);gsub(/ /,"",$5);gsub(/ /,"",$6); printf "%s/%s=%s ", $4,$5,$6}'; echo
done; done
