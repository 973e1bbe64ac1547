# shellcheck shell=bash
# The image run as Airbyte and Singer runners run it (sourced by scripts/image-check.sh).
#
# Each check is a function `image_check_<name>`, run in order by the main
# script; a new check (a proxy, a private CA, ...) is one more function in a
# file of this folder and one more name in IMAGE_CHECKS. What they share:
#   IMAGE             the image built from the Dockerfile
#   DATA              a folder mounted read-only at /data (config, catalogs, state)
#   EMU_URL EMU_KEY   the emulator on this machine's loopback (containers use --network host)
#   emu_control METHOD PATH [JSON]   its control interface
#   run_image NAME [docker run options --] ARGS...   one container: stdout to $OUT/NAME.out,
#                     stderr to $OUT/NAME.err; fails on a non-zero exit
#   airbyte_checker NAME / singer_checker NAME   the protocol checker on $OUT/NAME.out
#                     (its JSON summary in $OUT/NAME.check.json; fails on any error)
#
# `restricted` runs check, read and replicate as the Kubernetes CronJob of
# docs/orchestrators.md runs the image (a restricted pod: uid 4242, group 0, a
# read-only root file system, a tmpfs /tmp, HOME unwritable, no capabilities):
# its docker options are read from that YAML by scripts/pod-options.ts.

emulator_start() { # LOG_DIR
  local logs="$1" i ready="$1/emulator.json"
  # --ready-file: the emulator writes its line there whole (under a temporary name, then renamed), readable by its owner only.
  "$ROOT/scripts/with-node" node "$ROOT/packages/emulator/bin/data-read-emulator" --port 0 --contacts 400 --seed 11 \
    --account-name "Image check" --ready-file "$ready" >/dev/null 2>"$logs/emulator.err" &
  EMU_PID=$!
  for i in $(seq 1 300); do
    [ -s "$ready" ] && break
    kill -0 "$EMU_PID" 2>/dev/null || { cat "$logs/emulator.err" >&2; fail "the emulator exited"; }
    sleep 0.1
  done
  read -r EMU_URL EMU_KEY EMU_CONTROL EMU_TOKEN EMU_ACCOUNT < <(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
print(e["url"], e["api_key"], e["control_url"], e["control_token"], e["account_id"])' "$ready") \
    || fail "the emulator wrote no ready file with url and api_key in 30 s"
  say "emulator: $EMU_URL (on this machine's loopback; the containers share its network)"
}

emulator_stop() {
  if [ -n "${EMU_PID:-}" ]; then kill "$EMU_PID" 2>/dev/null || true; wait "$EMU_PID" 2>/dev/null || true; fi
  EMU_PID=""
}

emu_control() { # METHOD PATH [JSON]
  python3 - "$EMU_CONTROL" "$EMU_TOKEN" "$@" <<'PY'
import sys, urllib.request
base, token, method, path = sys.argv[1:5]
body = sys.argv[5].encode() if len(sys.argv) > 5 else None
req = urllib.request.Request(base + path, data=body, method=method,
                             headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
print(urllib.request.urlopen(req, timeout=30).read().decode())
PY
}

# A file for the containers: world-readable (they run as uid 1000), in the read-only /data mount.
data_file() { # NAME (reads stdin)
  cat >"$DATA/$1"
  chmod 0644 "$DATA/$1"
}

run_image() { # NAME [OPTIONS... --] ARGS...
  local name="$1"; shift
  local opts=()
  if printf '%s\n' "$@" | grep -qx -- '--'; then
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
  fi
  dk run --rm "${opts[@]}" "$IMAGE" "$@" </dev/null >"$OUT/$name.out" 2>"$OUT/$name.err" \
    || { tail -n 20 "$OUT/$name.err" >&2; fail "$name: the container exited non-zero"; }
}

protocol_checker() { # airbyte|singer NAME
  "$ROOT/scripts/with-node" node "$PROTOCOL_CHECK" "$1" <"$OUT/$2.out" >"$OUT/$2.check.json" \
    || { head -c 3000 "$OUT/$2.check.json" >&2; fail "$2: the $1 protocol check found errors"; }
}

airbyte_checker() { protocol_checker airbyte "$1"; } # NAME
singer_checker() { protocol_checker singer "$1"; }   # NAME

# Airbyte state for --state: the last STATE of each stream of these outputs, as a JSON array.
airbyte_state_of() { # FILES...
  python3 - "$@" <<'PY'
import json, sys
last = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = json.loads(line)
        if m.get("type") == "STATE":
            last[m["state"]["stream"]["stream_descriptor"]["name"]] = m["state"]
print(json.dumps(list(last.values())))
PY
}

# --------------------------------------------------------------------- checks

IMAGE_CHECKS=(user airbyte singer restricted stop)

image_check_user() {
  local uid user
  user="$(dk image inspect --format '{{.Config.User}}' "$IMAGE")"
  run_image user-id --network none --entrypoint /usr/bin/id -- -u
  uid="$(tr -d '[:space:]' <"$OUT/user-id.out")"
  [ "$uid" = 1000 ] || fail "the image runs as uid $uid (USER $user), not 1000"
  # /airbyte is the one place it may write; the code is read-only to it.
  run_image user-write --network none --entrypoint /bin/sh -- -c \
    'touch /airbyte/probe && rm /airbyte/probe && ! touch /airbyte/integration_code/probe 2>/dev/null && echo ok'
  grep -qx ok "$OUT/user-write.out" || fail "uid 1000 cannot write /airbyte, or can write the code"
  say "user: USER $user, uid $uid; /airbyte writable, the code read-only"
}


# The account changes between two syncs: updates, new contacts with conversations, deletions.
change_account() {
  local op
  emu_control POST /clock/advance '{"ms":60000}' >/dev/null
  for op in '{"op":"update_contacts","count":15}' '{"op":"update_conversations","count":6,"close":true,"outcome":true}' \
    '{"op":"move_contacts","count":8}' '{"op":"create_contacts","count":7,"withConversation":true}' \
    '{"op":"delete_contacts","count":4}' '{"op":"delete_conversations","count":2}'; do
    emu_control POST "/accounts/$EMU_ACCOUNT/mutations" "$op" >/dev/null
  done
  emu_control POST /clock/advance '{"ms":60000}' >/dev/null
}

# Apply protocol outputs as a destination would (upserts on id, full refresh of
# pipeline_stages, deletions applied) and compare with the emulator's dump.
replica_equals_dump() { # airbyte|singer FILES...
  local face="$1"; shift
  emu_control GET "/accounts/$EMU_ACCOUNT/dump" >"$OUT/dump.json"
  python3 - "$face" "$OUT/dump.json" "$@" <<'PY'
import json, sys
face, dump_path, files = sys.argv[1], sys.argv[2], sys.argv[3:]
dump = json.load(open(dump_path))
tables = {name: {} for name in dump}
for path in files:
    refreshed = set()
    for line in open(path):
        m = json.loads(line)
        if m.get("type") != "RECORD":
            continue
        stream, data = (m["record"]["stream"], m["record"]["data"]) if face == "airbyte" else (m["stream"], m["record"])
        if stream == "pipeline_stages" and stream not in refreshed:
            tables[stream].clear(); refreshed.add(stream)
        tables[stream][data["id"]] = data
    for d in tables["deletions"].values():
        target = {"contact": "contacts", "conversation": "conversations"}.get(d.get("object_type"))
        if target:
            tables[target].pop(d.get("object_id"), None)
bad = []
for name, rows in dump.items():
    want = sorted(rows, key=lambda r: r["id"])
    got = sorted(tables[name].values(), key=lambda r: r["id"])
    if got != want:
        bad.append("%s: %d rows, the emulator has %d%s" % (name, len(got), len(want), "" if len(got) != len(want) else " (contents differ)"))
if bad:
    sys.exit("the replica differs from the emulator's dump: " + "; ".join(bad))
print(" ".join("%s %d" % (n, len(r)) for n, r in dump.items()))
PY
}

count_of() { # CHECK_NAME KEY  -> total of summary[KEY] (records / counts) of NAME.check.json
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d.get(sys.argv[2]) or {}; print(sum(v.values()) if isinstance(v, dict) else v)' "$OUT/$1.check.json" "$2"
}

image_check_airbyte() {
  # As Airbyte runs a source: the files in a read-only mount; the host's network (the emulator is on its loopback).
  local api=(--network host -v "$DATA:/data:ro")
  python3 -c 'import json,sys; print(json.dumps({"api_key": sys.argv[1], "base_url": sys.argv[2]}))' "$EMU_KEY" "$EMU_URL" | data_file config.json
  data_file catalog.json <"$ROOT/catalog/configured_catalog.json"

  run_image spec --network none -- spec
  airbyte_checker spec
  python3 - "$OUT/spec.out" "$ROOT/catalog/spec.json" <<'PY' || fail "spec: not the checked-in catalog/spec.json"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1 and json.loads(lines[0]) == {"type": "SPEC", "spec": json.load(open(sys.argv[2]))}
PY

  run_image check "${api[@]}" -- check --config /data/config.json
  airbyte_checker check
  grep -q '"status":"SUCCEEDED"' "$OUT/check.out" || { cat "$OUT/check.out" >&2; fail "check did not succeed"; }

  # Without a network the service's description cannot be had: after the configured retries (one WARN each),
  # the built-in schemas (the checked-in catalog) and one WARN saying why.
  run_image discover --network none -v "$DATA:/data:ro" -- discover --config /data/config.json
  airbyte_checker discover
  python3 - "$OUT/discover.out" "$ROOT/catalog/discovered_catalog.json" <<'PY' || fail "discover: not the checked-in catalog/discovered_catalog.json after retry WARNs and one WARN saying why"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = json.load(open(sys.argv[2]))
assert [m["type"] for m in lines] == ["LOG"] * (len(lines) - 1) + ["CATALOG"], lines
*retries, why = [m["log"] for m in lines[:-1]]
assert all(l["level"] == "WARN" and re.search(r"^Cannot reach the Data-Read API at .*; retry \d+ of \d+ in ", l["message"]) for l in retries), retries
assert why["level"] == "WARN" and "built-in stream schemas" in why["message"], why
assert lines[-1]["catalog"] == (want.get("catalog", want) if isinstance(want, dict) else want)
PY
  # On the host's network: merged with the emulator's description, which types the pipeline stages' fields.
  run_image discover-described "${api[@]}" -- discover --config /data/config.json
  airbyte_checker discover-described
  python3 - "$OUT/discover-described.out" <<'PY' || fail "discover: the service's description did not type pipeline_stages"
import json, sys
catalog = next(json.loads(l) for l in open(sys.argv[1]) if '"type":"CATALOG"' in l)["catalog"]
stages = next(s for s in catalog["streams"] if s["name"] == "pipeline_stages")["json_schema"]["properties"]
assert stages["name"]["type"] == "string" and stages["position"]["type"] == "integer", stages
PY

  run_image read "${api[@]}" -- read --config /data/config.json --catalog /data/catalog.json
  airbyte_checker read
  airbyte_state_of "$OUT/read.out" | data_file state.json
  change_account
  run_image read-incremental "${api[@]}" -- read --config /data/config.json --catalog /data/catalog.json --state /data/state.json
  airbyte_checker read-incremental
  python3 - "$OUT/read.check.json" "$OUT/read-incremental.check.json" <<'PY' || fail "a read did not complete every stream, or the incremental read re-read everything"
import json, sys
full, inc = (json.load(open(p)) for p in sys.argv[1:3])
for d in (full, inc):
    assert set(d["final_status"].values()) == {"COMPLETE"}, d["final_status"]
assert 0 < inc["records"]["contacts"] < full["records"]["contacts"], (inc["records"], full["records"])
PY
  local tables
  tables="$(replica_equals_dump airbyte "$OUT/read.out" "$OUT/read-incremental.out")" || fail "airbyte: full + incremental read"
  say "airbyte: spec; check SUCCEEDED; discover; read $(count_of read records) records; incremental read from its state $(count_of read-incremental records) records; replica = emulator ($tables)"
}

image_check_singer() {
  local tap=(--entrypoint tap-data-read)
  run_image tap-about --network none "${tap[@]}" -- --about --format json
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert a["name"] == "tap-data-read", a.get("name")' "$OUT/tap-about.out" \
    || fail "tap-data-read --about: not the tap's JSON"
  # Settings from TAP_DATA_READ_* variables (--config ENV), as an orchestrator passes them.
  (
    export TAP_DATA_READ_API_KEY="$EMU_KEY" TAP_DATA_READ_BASE_URL="$EMU_URL"
    run_image tap-discover --network none -e TAP_DATA_READ_API_KEY -e TAP_DATA_READ_BASE_URL "${tap[@]}" -- --config ENV --discover
  ) || fail "tap-data-read --config ENV --discover"
  data_file tap-catalog.json <"$OUT/tap-discover.out"

  local api=(--network host -v "$DATA:/data:ro" "${tap[@]}")
  run_image tap-sync "${api[@]}" -- --config /data/config.json --catalog /data/tap-catalog.json
  singer_checker tap-sync
  tail -n 1 "$OUT/tap-sync.out" | python3 -c 'import json,sys; m=json.loads(sys.stdin.read()); assert m["type"] == "STATE"; print(json.dumps(m["value"]))' \
    | data_file tap-state.json || fail "tap-sync: the last line is not a STATE"
  change_account
  run_image tap-sync-incremental "${api[@]}" -- --config /data/config.json --catalog /data/tap-catalog.json --state /data/tap-state.json
  singer_checker tap-sync-incremental
  local full inc tables
  full="$(grep -c '"type":"RECORD"' "$OUT/tap-sync.out")"
  inc="$(grep -c '"type":"RECORD"' "$OUT/tap-sync-incremental.out")"
  [ "$inc" -gt 0 ] && [ "$inc" -lt "$full" ] || fail "tap: the incremental sync wrote $inc records after a full one of $full"
  tables="$(replica_equals_dump singer "$OUT/tap-sync.out" "$OUT/tap-sync-incremental.out")" || fail "singer: full + incremental sync"
  say "singer: --about; --config ENV --discover; sync $full records; incremental sync from its STATE $inc records; replica = emulator ($tables)"
}

# Each table of a replica holds the emulator's dump: the same ids, each with the same version
# (updated_at, or the stream's cursor where it has one), so a change that never reached it is seen.
replica_db_equals_dump() { # DB
  emu_control GET "/accounts/$EMU_ACCOUNT/dump" >"$OUT/dump.json"
  python3 - "$OUT/dump.json" "$1" <<'PY'
import json, sqlite3, sys
dump = json.load(open(sys.argv[1]))
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[2], uri=True)
bad = []
for name, rows in dump.items():
    columns = [c[1] for c in db.execute('PRAGMA table_info("%s")' % name)]
    version = next((c for c in ("updated_at", "created_at", "deleted_at") if c in columns), None)
    select = 'SELECT id, "%s" FROM "%s"' % (version, name) if version else 'SELECT id, NULL FROM "%s"' % name
    got = sorted((r[0], r[1]) for r in db.execute(select))
    want = sorted((r["id"], r.get(version) if version else None) for r in rows)
    if got != want:
        bad.append("%s: %d rows, the emulator has %d (or a row's version differs)" % (name, len(got), len(want)))
if bad:
    sys.exit("the replica differs from the emulator's dump: " + "; ".join(bad))
print(" ".join("%s %d" % (n, len(r)) for n, r in dump.items()))
PY
}

image_check_restricted() {
  # The recipe's Secret (config.json, catalog.json: root's, mode 0440, group 0 as fsGroup 0 makes it) and
  # PersistentVolumeClaim (root's, group 0 may write), as host folders.
  local secret="$WORK/pod-secret" claim="$WORK/pod-claim" log="$OUT/termination-log" lines=() opts=() args=() image="" seen=0 line
  mkdir -p "$secret" "$claim"
  python3 -c 'import json,sys; print(json.dumps({"api_key": sys.argv[1], "base_url": sys.argv[2]}))' "$EMU_KEY" "$EMU_URL" >"$secret/config.json"
  cp "$ROOT/catalog/configured_catalog.json" "$secret/catalog.json"
  chown -R 0:0 "$secret" "$claim"
  chmod 0440 "$secret"/*.json
  chmod 0750 "$secret"
  chmod 0770 "$claim"
  : >"$log"
  chmod 0666 "$log"
  mapfile -t lines < <("$ROOT/scripts/with-node" node "$ROOT/scripts/pod-options.ts" config="$secret" replica="$claim" --termination-log "$log" 2>"$OUT/pod-options.err" || true)
  for line in "${lines[@]}"; do
    if [ "$seen" = 0 ]; then
      if [ "$line" = -- ]; then seen=1; else opts+=("$line"); fi
    elif [ -z "$image" ]; then
      image="$line"
    else
      args+=("$line")
    fi
  done
  [ -n "$image" ] || { cat "$OUT/pod-options.err" >&2; fail "restricted: no docker options from the Kubernetes recipe of docs/orchestrators.md"; }
  [ "$image" = "$IMAGE" ] || fail "restricted: the Kubernetes recipe runs $image, not the image built here ($IMAGE)"
  printf '%s\n' "${opts[*]}" >"$OUT/restricted.options"
  local o
  for o in --read-only --tmpfs --cap-drop --user; do
    printf ' %s ' "${opts[*]}" | grep -q -- " $o " || fail "restricted: the Kubernetes recipe gives no $o (options: ${opts[*]})"
  done

  # What the pod gets, whatever the image says: uid 4242 and group 0; only /tmp writable.
  run_image restricted-id --network none "${opts[@]}" --entrypoint /bin/sh -- -c \
    'id -u; id -g; touch /probe 2>/dev/null && echo root-writable; touch "$HOME/probe" 2>/dev/null && echo home-writable; touch /tmp/probe && echo tmp-writable'
  [ "$(tr '\n' ' ' <"$OUT/restricted-id.out")" = "4242 0 tmp-writable " ] \
    || fail "restricted: not uid 4242, group 0, a read-only root and HOME, a writable /tmp: $(tr '\n' ' ' <"$OUT/restricted-id.out")"

  run_image restricted-check --network host "${opts[@]}" -- check --config /config/config.json
  airbyte_checker restricted-check
  grep -q '"status":"SUCCEEDED"' "$OUT/restricted-check.out" || { cat "$OUT/restricted-check.out" >&2; fail "restricted: check did not succeed"; }
  run_image restricted-read --network host "${opts[@]}" -- read --config /config/config.json --catalog /config/catalog.json
  airbyte_checker restricted-read

  # The CronJob's own command as written: the replica on the claim, the run's summary as the termination message.
  run_image restricted-replicate --network host "${opts[@]}" -- "${args[@]}"
  [ ! -s "$OUT/restricted-replicate.out" ] || fail "restricted: replicate wrote on stdout"
  [ "$(stat -c %u "$claim/replica.db")" = 4242 ] || fail "restricted: the replica is not uid 4242's file"
  local tables
  tables="$(replica_db_equals_dump "$claim/replica.db")" || fail "restricted: replicate"
  python3 - "$log" <<'PY' || fail "restricted: the termination message is not the run's summary (succeeded, within 4 KiB)"
import json, os, sys
size = os.path.getsize(sys.argv[1])
assert 0 < size <= 4096, size
summary = json.load(open(sys.argv[1]))
assert summary["status"] == "succeeded" and summary["exit_code"] == 0, summary
assert summary["command"] == "replicate" and {s["status"] for s in summary["streams"]} == {"complete"}, summary
PY
  # The next scheduled run: incremental, from the state kept in the replica.
  change_account
  run_image restricted-replicate-again --network host "${opts[@]}" -- "${args[@]}"
  tables="$(replica_db_equals_dump "$claim/replica.db")" || fail "restricted: the second replicate"
  say "restricted: as the Kubernetes recipe's pod (${opts[*]}): check SUCCEEDED; read $(count_of restricted-read records) records; replicate twice into the claim (uid 4242's file), replica = emulator ($tables); the summary as termination message ($(stat -c %s "$log") bytes)"
}

image_check_stop() {
  # A long read: 250 ms per response, 10 records a page, one request at a time (about 2 minutes in all).
  python3 -c 'import json,sys; print(json.dumps({"api_key": sys.argv[1], "base_url": sys.argv[2], "page_size": 10, "max_concurrent_requests": 1}))' \
    "$EMU_KEY" "$EMU_URL" | data_file config-slow.json
  emu_control PUT /latency '{"ms":250}' >/dev/null
  local name="sdr-image-check-stop-$$" states=0 pid uid start end ms code
  dk run -d --name "$name" --network host -v "$DATA:/data:ro" "$IMAGE" \
    read --config /data/config-slow.json --catalog /data/catalog.json >/dev/null || fail "stop: docker run -d"
  for _ in $(seq 1 300); do
    states="$(dk logs "$name" 2>/dev/null | grep -c '"type":"STATE"' || true)"
    [ "$states" -ge 3 ] && break
    [ "$(dk inspect --format '{{.State.Running}}' "$name")" = true ] || break
    sleep 0.2
  done
  [ "$states" -ge 3 ] || { dk logs "$name" 2>&1 | tail -n 20 >&2; fail "stop: the read wrote no 3 STATEs within 60 s"; }
  pid="$(dk inspect --format '{{.State.Pid}}' "$name")"
  uid="$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")"
  start="$(date +%s%N)"
  dk stop -t 30 "$name" >/dev/null
  end="$(date +%s%N)"
  ms=$(((end - start) / 1000000))
  code="$(dk inspect --format '{{.State.ExitCode}}' "$name")"
  dk logs "$name" >"$OUT/stop.out" 2>"$OUT/stop.err"
  dk rm "$name" >/dev/null
  emu_control PUT /latency '{"ms":0}' >/dev/null
  [ "$uid" = 1000 ] || fail "stop: the read ran as uid $uid, not 1000"
  [ "$code" = 143 ] || fail "stop: exit status $code after docker stop (137: SIGKILLed after the timeout, SIGTERM was ignored)"
  [ "$ms" -lt 5000 ] || fail "stop: docker stop took $ms ms"
  airbyte_checker stop
  tail -n 1 "$OUT/stop.out" | python3 -c '
import json, sys
e = json.loads(sys.stdin.read())["trace"]["error"]
assert e["failure_type"] == "transient_error" and "SIGTERM" in e["message"], e' || fail "stop: the last line is not the transient ERROR trace"
  say "stop: docker stop of a running read (uid $uid, after $states STATEs) ended it in $ms ms, exit $code; its output passes the Airbyte protocol check and ends with a transient ERROR trace"
  STOP_MS="$ms"
}
