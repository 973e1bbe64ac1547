# source-data-read: the Airbyte source (and the Singer tap) for the Data-Read API.
#
#   docker build -t source-data-read/source-data-read:0.2.0 .
#   docker run --rm -i source-data-read/source-data-read:0.2.0 spec
#   docker run --rm -i --entrypoint tap-data-read source-data-read/source-data-read:0.2.0 --about
#
# The image holds exactly the npm package (the `files` of package.json, as
# `npm pack` makes it) plus its production dependencies from package-lock.json.
# scripts/replay-image.sh replays these steps without Docker,
# scripts/image-check.sh builds and runs the image with a real engine, and
# test/e2e/packaging/dockerfile.test.ts checks this file against metadata.yaml and
# package.json (keep ENTRYPOINT, AIRBYTE_ENTRYPOINT and the labels in step).

# ---------------------------------------------------------------- build stage
FROM node:24-slim AS build
WORKDIR /build

# Dependencies first, so that a change to the sources reuses this layer.
# --ignore-scripts: no lifecycle script runs before the sources are copied in.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json tsconfig.schemas.json rolldown.config.ts README.md LICENSE metadata.yaml icon.svg ./
COPY bin ./bin
COPY src ./src
COPY schemas ./schemas
COPY catalog ./catalog

# Compile the connector (not the emulator workspace of the repository, which
# is not in the build context: npm ci skips it), then pack what npm would
# publish (no tests, no sources), unpack it as the runtime tree and install
# the production dependencies only: the locked versions, no typescript or
# test tools, no emulator, no lifecycle scripts.
RUN npm run build:connector \
 && mkdir -p /pack /out/integration_code \
 && npm pack --ignore-scripts --pack-destination /pack \
 && tar -xzf /pack/source-data-read-*.tgz -C /out/integration_code --strip-components=1 --no-same-owner \
 && cp package-lock.json /out/integration_code/ \
 && cd /out/integration_code \
 && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund

# -------------------------------------------------------------- runtime stage
FROM node:24-slim

# Airbyte runs connector pods rootless as 1000:1000; the base image's `node`
# user holds that id, so it gives way to `airbyte`, whose home /airbyte is
# the one place it may write. The code itself stays root-owned, read-only.
# (userdel/groupdel may find nothing to remove; groupadd/useradd fail if 1000 stays taken.)
RUN (userdel --remove node 2>/dev/null || true) \
 && (groupdel node 2>/dev/null || true) \
 && groupadd --gid 1000 airbyte \
 && useradd --uid 1000 --gid airbyte --home-dir /airbyte --no-create-home --shell /usr/sbin/nologin airbyte \
 && mkdir -p /airbyte \
 && chown airbyte:airbyte /airbyte \
 && chmod 0755 /airbyte

COPY --from=build /out/integration_code /airbyte/integration_code

# Both faces on PATH: `--entrypoint tap-data-read` runs the Singer tap.
RUN ln -s /airbyte/integration_code/bin/source-data-read /usr/local/bin/source-data-read \
 && ln -s /airbyte/integration_code/bin/tap-data-read /usr/local/bin/tap-data-read

# The Node flags the executables give themselves from PATH (bin/source-data-read): a heap
# that stays the size of a page or two however long the read; and, as they do too, two
# glibc malloc arenas rather than one per thread, so that the native memory of a long
# `replicate` stays flat (docs/performance.md). `docker run -e MALLOC_ARENA_MAX=N` overrides it.
ENV NODE_ENV=production
ENV MALLOC_ARENA_MAX=2
ENV AIRBYTE_ENTRYPOINT="/usr/local/bin/node --max-semi-space-size=2 --heap-growing-percent=10 /airbyte/integration_code/bin/source-data-read"
ENTRYPOINT ["/usr/local/bin/node", "--max-semi-space-size=2", "--heap-growing-percent=10", "/airbyte/integration_code/bin/source-data-read"]

WORKDIR /airbyte
USER airbyte

LABEL io.airbyte.name="source-data-read/source-data-read" \
      io.airbyte.version="0.2.0" \
      org.opencontainers.image.title="source-data-read" \
      org.opencontainers.image.description="Airbyte source and Singer tap for the Data-Read API" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.source="https://github.com/source-data-read/source-data-read"
