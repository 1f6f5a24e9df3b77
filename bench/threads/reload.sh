#!/bin/bash
# usage: bench/threads/reload.sh THREADS PORT
# p99 during reloads vs steady, with SERVER_THREADS=THREADS, on the compiled server (dist/main.js:
# `npm run build` first). BENCH_DATA (default /tmp/i12-bench/data) is an embedded store holding one
# organization published at least twice; BENCH_KEY a `keys create --json` output for it.
# 1. wrk 10 s on the mix (bench/threads/mix.lua), steady: p50, p99.
# 2. wrk 10 s on the mix while the store's CURRENT pointer is switched between the two versions
#    and POST /admin/reload is sent back to back, so the whole window is inside full reloads.
# Prints both latency lines, the reloads done, and RSS steady / peak (sampled every 50 ms) / after.
T=$1; PORT=$2; APORT=$((PORT+1))
cd "$(dirname "$0")/../.."
ORG=${ORG:-97da2849-d73e-4438-a907-d090402c802d}; DATA=${BENCH_DATA:-/tmp/i12-bench/data}; KEYFILE=${BENCH_KEY:-/tmp/i12-bench/key.json}
KEY=$(node -e "console.log(JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')).key)" "$KEYFILE")
PTR=$DATA/snapshots/$ORG/CURRENT
ORIG=$(cat "$PTR")
V=$(node -e "const p=JSON.parse(process.argv[1]);console.log(p.version+' '+p.previous)" "$ORIG"); set -- $V; VA=$1; VB=$2
env -u REDIS_URL -u RATE_LIMIT_RPS SERVER_THREADS=$T LOG_LEVEL=warn DATA_DIR=$DATA PORT=$PORT ADMIN_PORT=$APORT HOST=127.0.0.1 node ${SERVER_JS:-dist/main.js} > ${TMPDIR:-/tmp}/threads-reload-server-$T.log 2>&1 &
SP=$!
for i in $(seq 1 120); do curl -sf localhost:$APORT/readyz >/dev/null && break; sleep 0.5; done
wrk -t1 -c32 -d2s -s bench/threads/mix.lua http://127.0.0.1:$PORT -- $ORG $KEY >/dev/null
rss() { grep VmRSS /proc/$SP/status | awk '{print $2}'; }
STEADY=$(rss)
echo "threads=$T steady:"
wrk -t1 -c32 -d10s --latency -s bench/threads/mix.lua http://127.0.0.1:$PORT -- $ORG $KEY | grep -E "Requests/sec|50%|99%|Non-2xx|Socket errors"
# the sampler runs while $PEAKF.run exists: testing $PEAKF itself raced with its own mv, which
# could put the file back after the rm below and sample for ever
PEAKF=$(mktemp); echo 0 > $PEAKF; touch $PEAKF.run
( while [ -e $PEAKF.run ]; do r=$(rss); p=$(cat $PEAKF 2>/dev/null || echo 0); [ "${r:-0}" -gt "${p:-0}" ] && echo $r > $PEAKF.n && mv $PEAKF.n $PEAKF; sleep 0.05; done ) 2>/dev/null &
SAMPLER=$!
( n=0; end=$(( $(date +%s) + 11 )); flip=0
  while [ $(date +%s) -lt $end ]; do
    if [ $flip = 0 ]; then echo "{\"version\":$VB,\"previous\":$VA}" > $PTR; flip=1; else echo "{\"version\":$VA,\"previous\":$VB}" > $PTR; flip=0; fi
    curl -sf -X POST localhost:$APORT/admin/reload > /dev/null && n=$((n+1))
  done
  echo "reloads done: $n" ) &
RL=$!
sleep 0.5
echo "threads=$T during back-to-back reloads:"
wrk -t1 -c32 -d10s --latency -s bench/threads/mix.lua http://127.0.0.1:$PORT -- $ORG $KEY | grep -E "Requests/sec|50%|99%|Non-2xx|Socket errors"
wait $RL
rm -f $PEAKF.run; wait $SAMPLER 2>/dev/null; PEAK=$(cat $PEAKF); rm -f $PEAKF
sleep 2
echo "rss_kb steady=$STEADY peak=$PEAK after=$(rss)"
echo "$ORIG" > $PTR
kill -TERM $SP; wait $SP; echo "exit=$?"
