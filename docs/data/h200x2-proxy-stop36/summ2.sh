#!/bin/bash
# summ2.sh FILE.collapsed: samples per thread; for the thread with most samples under CallOverhead.round, the
# frames below round (10 deep) and the leaves
f=$1
awk '{n=$NF; line=$0; sub(/ [0-9]+$/,"",line); k=split(line,fr,";"); th=fr[1]; tot[th]+=n;
  r=0; for(i=1;i<=k;i++) if (fr[i] ~ /CallOverhead.round$|CallOverhead.blocking$/) {r=i; break}
  if (r>0) { rt[th]+=n; p=""; for(i=r;i<=k && i<=r+9;i++) { x=fr[i]; sub(/^.*\//,"",x); p=p ";" x } path[th p]+=n; lf=fr[k]; sub(/^.*\//,"",lf); leaf[th ";" lf]+=n }
} END { for (t in tot) if (tot[t] > 200) printf "THREAD %d round %d %s\n", tot[t], rt[t], t;
  for (x in path) printf "PATH %d %s\n", path[x], x; for (x in leaf) printf "LEAF %d %s\n", leaf[x], x }' "$f" > /tmp/s2.$$
grep ^THREAD /tmp/s2.$$ | sort -k2 -nr | head -15
echo "-- paths under round"; grep ^PATH /tmp/s2.$$ | sort -k2 -nr | head -45
echo "-- leaves under round"; grep ^LEAF /tmp/s2.$$ | sort -k2 -nr | head -40
rm -f /tmp/s2.$$
