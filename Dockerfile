# syntax=docker/dockerfile:1
# The `custodian` command in an image: the coordinator (default command), or `signer start`, or any
# other subcommand (entrypoint `custodian`). docs/deployment.md shows how to run it.
#
# Stage 1 builds the one-package tarball of the command (scripts/pack-cli.mjs: every dependency
# bundled, the lockfile's versions, the built dashboard); stage 2 installs only that tarball, offline, as CI's test does
# (packages/cli/test/pack.slow.test.ts), on a clean Node.js image.
#
# Runs as the unprivileged user `custodian` (uid/gid 10001) and works with a read-only root file
# system: everything it writes is under /var/lib/custodian (a volume) and /tmp (mount a tmpfs);
# /var/lib/custodian-state is for a signer's generation state file, in a volume of its own (it must
# never come back with a restored data volume).

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
RUN npm install -g pnpm@10.34.9
COPY . .
RUN pnpm install --frozen-lockfile
RUN pnpm exec tsc -b packages/cli
# the dashboard's static files (Vite): the coordinator serves them at /; its React/Mantine/… are
# devDependencies bundled into dist/, so the tarball carries dist/ only
RUN node scripts/build-dashboard.mjs --force
RUN node scripts/pack-cli.mjs --no-build \
 && mv dist-pack/custodian-*.tgz /custodian.tgz

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
COPY --from=build /custodian.tgz /tmp/custodian.tgz
# --omit=optional: anvil (only `custodian dev` uses it) stays out of the image
RUN npm install -g --offline --omit=optional --no-audit --no-fund --cache /tmp/npm-cache /tmp/custodian.tgz \
 && rm -rf /tmp/custodian.tgz /tmp/npm-cache /root/.npm \
 && custodian --version \
 && groupadd --system --gid 10001 custodian \
 && useradd --system --uid 10001 --gid custodian --home-dir /var/lib/custodian --no-create-home \
      --shell /usr/sbin/nologin custodian \
 && install -d -o custodian -g custodian -m 0750 /var/lib/custodian /var/lib/custodian-state
USER custodian:custodian
WORKDIR /var/lib/custodian
VOLUME ["/var/lib/custodian"]
# coordinator HTTP (REST, admin API, device WebSocket, /healthz); a signer's libp2p port
EXPOSE 8080 7401
# The coordinator's liveness (GET /healthz on CUSTODIAN_HEALTH_PORT, default 8080). A signer
# container overrides it (compose.yaml).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.CUSTODIAN_HEALTH_PORT || 8080}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM: the daemons drain and exit (docker stop waits --stop-timeout, compose stop_grace_period)
STOPSIGNAL SIGTERM
ENTRYPOINT ["custodian"]
CMD ["coordinator", "start", "--mode", "production", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/var/lib/custodian/coordinator"]
