# uWebSockets.js ships glibc binaries only: a Debian-based image, not Alpine.
# Build stage: all dependencies, `npm ci` runs `prepare` (tsc to dist/, then the server's
# bundles), then the dev dependencies (TypeScript, tsx, esbuild, Biome) are pruned away.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/bundle-server.mjs ./scripts/
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund && npm cache clean --force

# Runtime stage: compiled JavaScript and production dependencies only; no TypeScript at run time.
FROM node:20-bookworm-slim

# MALLOC_ARENA_MAX=2: glibc gives every thread that mallocs an arena of its own (V8's compiler and
# GC threads, libuv's pool, the serving threads); two are enough. RSS at ready, 1M messages:
# ~1.2 MiB less with two serving threads, 0.3-0.7 with one, no change in requests/s measured
# (bench/RESULTS.md, session 33; 2 cores). With many serving threads, compare requests/s without it.
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=3000 \
    ADMIN_PORT=9464

WORKDIR /app
COPY --from=build /app/package.json ./
# loglevel=silent: `npm run keys -- ... --json` prints the JSON alone (no npm banner on stdout)
COPY .npmrc ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist

RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000

# The admin listener stays on 127.0.0.1 inside the container by default; the health check asks it
# there, or at ADMIN_HOST when that names one address (a wildcard bind answers on loopback).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "const h=process.env.ADMIN_HOST;const a=!h||h==='0.0.0.0'||h==='::'?'127.0.0.1':h.includes(':')?'['+h+']':h;fetch('http://'+a+':'+(process.env.ADMIN_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"

# node directly (not npm) so SIGTERM reaches the server and shuts it down cleanly.
CMD ["node", "--enable-source-maps", "dist/main.js"]
