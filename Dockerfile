# uWebSockets.js ships glibc binaries only: a Debian-based image, not Alpine.
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=3000 \
    ADMIN_PORT=9464

WORKDIR /app
COPY package.json package-lock.json ./
# tsx is a runtime dependency (the service runs TypeScript directly), so --omit=dev is enough.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts

RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000

# The admin listener stays on 127.0.0.1 inside the container; the health check runs there too.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.ADMIN_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"

# node directly (not npm) so SIGTERM reaches the server and shuts it down cleanly.
CMD ["node", "--import", "tsx", "src/main.ts"]
