# summarizes async-profiler collapsed stacks: per thread group totals, top leaf frames per group,
# and inclusive counts of frames in the rank's main-thread stacks under CallOverhead.round (by form)
{
  n = $NF; line = $0; sub(/ [0-9]+$/, "", line);
  k = split(line, f, ";");
  th = f[1]; gsub(/[0-9]+/, "#", th);
  T[th] += n; ALL += n;
  L[th " | " f[k]] += n;
  if (line ~ /CallOverhead\.round/ || line ~ /CallOverhead\.blocking/) {
    form = "other";
    if (line ~ /CallOverhead\.blocking/) form = "blocking";
    else if (line ~ /Mono\.when|MonoWhen|Mono\.block/) form = "mono-pipelined";
    else if (line ~ /JmscclppTarget\.issue|StreamCollectives/) form = "stream";
    else if (line ~ /synchron/) form = "sync";
    F[form] += n;
    delete seen;
    for (i = 2; i <= k; i++) { fr = f[i]; gsub(/0x[0-9a-f]+/, "", fr); if (!(fr in seen)) { seen[fr] = 1; I[form " | " fr] += n } }
    LF[form " | " f[k]] += n;
  }
}
END {
  printf("ALL %d\n", ALL);
  for (t in T) printf("THREAD %8d %s\n", T[t], t) | "sort -k2 -nr | head -25"; close("sort -k2 -nr | head -25");
  for (l in L) printf("LEAF %8d %s\n", L[l], l) | "sort -k2 -nr | head -60"; close("sort -k2 -nr | head -60");
  for (x in F) printf("FORM %8d %s\n", F[x], x);
  for (l in LF) printf("FLEAF %8d %s\n", LF[l], l) | "sort -k2 -nr | head -80"; close("sort -k2 -nr | head -80");
  for (l in I) if (I[l] * 200 > ALL) printf("INCL %8d %s\n", I[l], l) | "sort -k2 -nr | head -250"; close("sort -k2 -nr | head -250");
}
