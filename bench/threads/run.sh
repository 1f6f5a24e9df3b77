#!/bin/bash
# usage: bench/threads/run.sh THREADS PORT (runs the compiled server, dist/main.js: `npm run build` first; SERVER_JS overrides)  (DATA_DIR with the 1M-message import in BENCH_DATA, default /tmp/i12-bench/data; key JSON from `keys create --json` in BENCH_KEY, default /tmp/i12-bench/key.json; ORG the organization)
# Prints RSS, server CPU over the 10 s wrk run, wrk latency/throughput and its CPU.
T=$1; PORT=$2; APORT=$((PORT+1))
cd "$(dirname "$0")/../.."
ORG=${ORG:-97da2849-d73e-4438-a907-d090402c802d}; DATA=${BENCH_DATA:-/tmp/i12-bench/data}; KEYFILE=${BENCH_KEY:-/tmp/i12-bench/key.json}
KEY=$(node -e "console.log(JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')).key)" "$KEYFILE")
env -u REDIS_URL -u RATE_LIMIT_RPS SERVER_THREADS=$T LOG_LEVEL=warn DATA_DIR=$DATA PORT=$PORT ADMIN_PORT=$APORT HOST=127.0.0.1 node ${SERVER_JS:-dist/main.js} > ${TMPDIR:-/tmp}/threads-bench-server-$T.log 2>&1 &
SP=$!
for i in $(seq 1 120); do curl -sf localhost:$APORT/readyz >/dev/null && break; sleep 0.5; done
wrk -t1 -c32 -d2s -s bench/threads/mix.lua http://127.0.0.1:$PORT -- $ORG $KEY >/dev/null
RSS0=$(grep VmRSS /proc/$SP/status | awk '{print $2}')
C0=$(awk '{print $14+$15}' /proc/$SP/stat)
/usr/bin/time -f "wrk cpu user %U sys %S wall %e" wrk -t1 -c32 -d10s --latency -s bench/threads/mix.lua http://127.0.0.1:$PORT -- $ORG $KEY > ${TMPDIR:-/tmp}/threads-bench-wrk-$T.out 2>&1
C1=$(awk '{print $14+$15}' /proc/$SP/stat)
RSS1=$(grep VmRSS /proc/$SP/status | awk '{print $2}')
echo "threads=$T rss_before_kb=$RSS0 rss_after_kb=$RSS1 server_cpu_s=$(echo "($C1-$C0)/100" | bc -l | cut -c1-5)"
grep -E "Requests/sec|99%|50%|Non-2xx|Socket errors|wrk cpu" ${TMPDIR:-/tmp}/threads-bench-wrk-$T.out
kill -TERM $SP; wait $SP; echo "exit=$?"
