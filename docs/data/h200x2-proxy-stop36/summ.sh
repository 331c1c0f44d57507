#!/bin/bash
# summ.sh FILE.collapsed: what the proxy loop's threads spent their samples on (async-profiler collapsed, threads)
f=$1
awk '
{
  n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
  k = split(line, fr, ";")
  th = fr[1]
  kind = (th ~ /ForkJoinPool|worker/) ? "VT" : ((th ~ /proxy|jmscclpp/) ? "PT:" th : "other:" th)
  if (line !~ /ProxyLoop/) next
  loop[kind] += n
  h = 0
  for (i = 1; i <= k; i++) if (fr[i] ~ /ProxyLoop.handle/) { h = i; break }
  if (h == 0) {
    # outside handle: the leaf
    out[kind ";" fr[k]] += n
    next
  }
  inh[kind] += n
  leaf[kind ";" fr[k]] += n
  p = ""
  for (i = h + 1; i <= k && i <= h + 7; i++) p = p ";" fr[i]
  path[kind p] += n
}
END {
  for (x in loop) printf "LOOP %s %d handle %d\n", x, loop[x], inh[x]
  for (x in leaf) printf "LEAF %d %s\n", leaf[x], x
  for (x in path) printf "PATH %d %s\n", path[x], x
  for (x in out) printf "OUT %d %s\n", out[x], x
}' "$f" > /tmp/summ.$$
grep ^LOOP /tmp/summ.$$
echo "-- leaves inside handle"; grep ^LEAF /tmp/summ.$$ | sort -k2 -nr | head -60
echo "-- paths inside handle (7 frames)"; grep ^PATH /tmp/summ.$$ | sort -k2 -nr | head -40
echo "-- leaves outside handle"; grep ^OUT /tmp/summ.$$ | sort -k2 -nr | head -30
rm -f /tmp/summ.$$
