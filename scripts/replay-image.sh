#!/usr/bin/env bash
# Replay the Docker image's steps without a Docker engine, in a temporary folder.
#
#   scripts/replay-image.sh [WORK_DIR]
#
# 1. build stage: the Dockerfile's COPY and RUN instructions of the `build`
#    stage, run as written with the image's absolute folders (/build, /pack,
#    /out, /airbyte) mapped under WORK_DIR/root: `npm ci`, `npm run build`,
#    `npm pack`, unpack, `npm ci --omit=dev` from the lockfile;
# 2. runtime stage: COPY --from=build into WORK_DIR/root/airbyte, the final
#    stage's ENV, then the exact ENTRYPOINT (node and /airbyte mapped) from a
#    working directory like the platform's /source: spec, check, discover and
#    a read against the emulator, each checked with the project's protocol
#    checker (scripts/protocol-check.ts, compiled by `npm run build:dev`);
#    the Singer face (`--entrypoint tap-data-read`): --about, and a sync
#    checked the same way;
# 3. npm consumer: `npm install --omit=dev ./source-data-read-X.Y.Z.tgz` in an
#    empty folder, then `source-data-read spec` and `tap-data-read --about`
#    from node_modules/.bin (no `prepare`, no typescript at run time).
#
# Progress goes to stderr; the last stdout line is a JSON summary. Exit 0 when
# every step passed. A temporary WORK_DIR is removed unless KEEP=1. Needs node >= 22.19, npm, python3.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
protocol_check="$root/.build/dev/scripts/protocol-check.js"
dockerfile="$root/Dockerfile"
owned=0
if [ -n "${1:-}" ]; then work="$1"; else work="$(mktemp -d "${TMPDIR:-/tmp}/replay-image.XXXXXX")"; owned=1; fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
emulator_pid=""

cleanup() {
  if [ -n "$emulator_pid" ]; then kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; fi
  if [ "$owned" = 1 ] && [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

say() { printf 'replay-image: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

node_bin="$(command -v node)" || fail "node is not on PATH"
version="$("$node_bin" -p 'process.versions.node')"
"$node_bin" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)' \
  || fail "node $version is older than 22.19 (try scripts/with-node scripts/replay-image.sh)"
[ -d "$root/node_modules/ajv" ] || fail "no node_modules/ in $root: run npm ci first (the protocol checker needs the devDependencies)"
[ -f "$root/packages/emulator/dist/cli.js" ] || fail "the emulator is not built: run npm run build first (it runs from the checkout, outside the image)"
(cd "$root" && npm run --silent build:dev) >&2 || fail "npm run build:dev failed: the protocol checker (scripts/protocol-check.ts) did not compile"
export npm_config_prefer_offline=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

# ---------------------------------------------------------------- the Dockerfile as a plan
# One JSON object: the build stage's steps (COPY/WORKDIR/RUN, absolute folders
# mapped), the runtime's COPY --from, ENV, ENTRYPOINT (mapped and as written),
# AIRBYTE_ENTRYPOINT, USER and labels.
plan="$work/plan.json"
python3 - "$dockerfile" "$work/root" "$node_bin" >"$plan" <<'PY'
import json, re, shlex, sys

path, fake_root, node_bin = sys.argv[1], sys.argv[2], sys.argv[3]
MAPPED = ("build", "pack", "out", "airbyte")       # the image's own folders
SYSTEM = ("usr", "bin", "dev", "etc", "tmp", "lib", "sbin")  # read, never written by the build stage

def instructions(text):
    logical, buf = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append((buf + line).strip())
        buf = ""
    if buf:
        logical.append(buf.strip())
    out = []
    for item in logical:
        word, _, rest = item.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out

def remap(text):
    def sub(m):
        return fake_root + m.group(0)
    mapped = re.sub(r"(?<![\w./-])/(?:%s)(?=[/\s\"']|$)" % "|".join(MAPPED), sub, text)
    for m in re.finditer(r"(?<![\w./$-])/([A-Za-z_][\w.-]*)", mapped.replace(fake_root, "")):
        if m.group(1) not in SYSTEM and m.group(1) not in MAPPED:
            sys.exit("Dockerfile step uses /%s, which the replay does not map: %s" % (m.group(1), text))
    return mapped

stages, current = [], None
for word, rest in instructions(open(path, encoding="utf8").read()):
    if word == "FROM":
        parts = rest.split()
        current = {"from": parts[0], "name": parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else None, "steps": []}
        stages.append(current)
    elif current is not None:
        current["steps"].append((word, rest))

build = next(s for s in stages if s["name"] == "build")
final = stages[-1]
plan = {"build": [], "runtime_copy": [], "env": {}, "labels": {}}
for word, rest in build["steps"]:
    if word == "WORKDIR":
        plan["build"].append({"op": "workdir", "dir": remap(rest)})
    elif word == "COPY":
        args = shlex.split(rest)
        if any(a.startswith("--") for a in args):
            sys.exit("unsupported COPY flags in the build stage: " + rest)
        plan["build"].append({"op": "copy", "src": args[:-1], "dest": args[-1]})
    elif word == "RUN":
        plan["build"].append({"op": "run", "cmd": remap(rest)})
    elif word in ("ENV", "ARG", "LABEL"):
        sys.exit("the replay does not handle %s in the build stage" % word)

for word, rest in final["steps"]:
    if word == "COPY" and rest.startswith("--from=build"):
        src, dest = shlex.split(rest)[1:]
        plan["runtime_copy"].append({"src": remap(src), "dest": remap(dest)})
    elif word == "ENV":
        for pair in shlex.split(rest):
            key, _, value = pair.partition("=")
            plan["env"][key] = value
    elif word == "ENTRYPOINT":
        entry = json.loads(rest)
        plan["entrypoint"] = entry
    elif word == "USER":
        plan["user"] = rest
    elif word == "WORKDIR":
        plan["workdir"] = rest
    elif word == "LABEL":
        for pair in shlex.split(rest):
            key, _, value = pair.partition("=")
            plan["labels"][key] = value

entry = plan.get("entrypoint")
if not isinstance(entry, list) or not all(isinstance(a, str) and (a.startswith("/") or a.startswith("--")) for a in entry):
    sys.exit("ENTRYPOINT must be exec form: absolute paths and Node flags")
if plan["env"].get("AIRBYTE_ENTRYPOINT") != " ".join(entry):
    sys.exit("AIRBYTE_ENTRYPOINT (%r) differs from the ENTRYPOINT joined (%r)" % (plan["env"].get("AIRBYTE_ENTRYPOINT"), " ".join(entry)))
mapped = [node_bin if a == "/usr/local/bin/node" else remap(a) for a in entry]
if mapped[0] != node_bin:
    sys.exit("the replay expects the ENTRYPOINT to start with /usr/local/bin/node")
plan["entrypoint_mapped"] = mapped
print(json.dumps(plan))
PY
say "plan: $(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(" ".join(p["entrypoint"]))' "$plan")"

# ---------------------------------------------------------------- 1. build stage
mkdir -p "$work/root"
build_dir=""
step=0
while IFS= read -r line; do
  step=$((step + 1))
  op="$(printf '%s' "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["op"])')"
  case "$op" in
    workdir)
      build_dir="$(printf '%s' "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dir"])')"
      mkdir -p "$build_dir"
      say "build $step: WORKDIR -> $build_dir"
      ;;
    copy)
      [ -n "$build_dir" ] || fail "COPY before WORKDIR"
      mapfile -t parts < <(printf '%s' "$line" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("\n".join(d["src"] + [d["dest"]]))')
      dest="${parts[${#parts[@]}-1]}"
      unset 'parts[${#parts[@]}-1]'
      case "$dest" in /*) fail "absolute COPY destination $dest" ;; esac
      for src in "${parts[@]}"; do
        [ -e "$root/$src" ] || fail "COPY $src: not in the build context (run npm run generate?)"
        if [ -d "$root/$src" ]; then
          mkdir -p "$build_dir/$dest"; cp -R "$root/$src/." "$build_dir/$dest/"
        else
          mkdir -p "$build_dir/$dest"; cp "$root/$src" "$build_dir/$dest/"
        fi
      done
      say "build $step: COPY ${parts[*]} $dest"
      ;;
    run)
      cmd="$(printf '%s' "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cmd"])')"
      say "build $step: RUN $cmd"
      # As in `docker build`: /bin/sh -c in WORKDIR, and no NODE_ENV in the build stage.
      (cd "$build_dir" && env -u NODE_ENV sh -c "$cmd") >"$work/build-$step.log" 2>&1 || { tail -n 40 "$work/build-$step.log" >&2; fail "build step $step"; }
      ;;
  esac
done < <(python3 -c 'import json,sys; [print(json.dumps(s)) for s in json.load(open(sys.argv[1]))["build"]]' "$plan")

tarball="$(ls "$work"/root/pack/*.tgz 2>/dev/null | head -n 1)"
[ -n "$tarball" ] || fail "the build stage made no tarball in /pack"
tarball_bytes="$(wc -c <"$tarball" | tr -d ' ')"
tar -tzf "$tarball" | sed 's|^package/||' | sort >"$work/tarball-files.txt"
# No sources (the type declarations of the package's exports, dist/**/*.d.ts, excepted), no tests, no emulator.
if grep -vE '^dist/.*\.d\.ts$' "$work/tarball-files.txt" \
  | grep -E '^(test|bench|src|scripts|docs|packages|\.ci|node_modules|dist/tools)/|\.ts$|\.test\.js$|^tsconfig|^vitest|emulator|openapi' >&2; then
  fail "the tarball carries files that do not run (above)"
fi
say "tarball: $(basename "$tarball"), $tarball_bytes bytes, $(wc -l <"$work/tarball-files.txt" | tr -d ' ') files"

# ---------------------------------------------------------------- 2. runtime stage
while IFS=$'\t' read -r src dest; do
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest"
  cp -R "$src" "$dest"
  say "runtime: COPY --from=build $src -> $dest"
done < <(python3 -c 'import json,sys; [print(c["src"]+"\t"+c["dest"]) for c in json.load(open(sys.argv[1]))["runtime_copy"]]' "$plan")
mapfile -t entry < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["entrypoint_mapped"]))' "$plan")
mapfile -t envs < <(python3 -c 'import json,sys; [print(k+"="+v) for k,v in json.load(open(sys.argv[1]))["env"].items()]' "$plan")
code_dir="$(dirname "$(dirname "${entry[-1]}")")"   # /airbyte/integration_code, mapped
[ -d "$code_dir/node_modules" ] || fail "no production node_modules in $code_dir"
for dev in typescript vitest nock ajv; do
  [ ! -e "$code_dir/node_modules/$dev" ] || fail "devDependency $dev is in the runtime tree"
done
# The connector alone: no emulator package, and no link to it or back to the package itself (npm ci skips a missing workspace).
for part in packages node_modules/data-read-emulator node_modules/source-data-read dist/emulator; do
  [ ! -e "$code_dir/$part" ] && [ ! -L "$code_dir/$part" ] || fail "the runtime tree holds $part (the emulator's, not the connector's)"
done

# Like the platform: another working directory (/source), HOME=/airbyte, the image's ENV.
run_dir="$work/root/source"
mkdir -p "$run_dir"
image() { (cd "$run_dir" && env HOME="$work/root/airbyte" "${envs[@]}" "${entry[@]}" "$@"); }
tap_image() { (cd "$run_dir" && env HOME="$work/root/airbyte" "${envs[@]}" "$code_dir/bin/tap-data-read" "$@"); }

protocol_checker() { # airbyte|singer NAME FILE: validate, keep the summary in $work/NAME.check.json
  "$node_bin" "$protocol_check" "$1" <"$3" >"$work/$2.check.json" || { cat "$work/$2.check.json" >&2; fail "$2: the $1 protocol check found errors"; }
}
check_airbyte() { protocol_checker airbyte "$@"; } # NAME FILE

image spec >"$work/spec.out" 2>"$work/spec.err" || { cat "$work/spec.err" >&2; fail "spec exited non-zero"; }
check_airbyte spec "$work/spec.out"
python3 - "$work/spec.out" "$code_dir/catalog/spec.json" <<'PY' || fail "spec differs from the packed catalog/spec.json"
import json, sys
msg = json.loads(open(sys.argv[1]).read().splitlines()[0])
assert msg["type"] == "SPEC" and msg["spec"] == json.load(open(sys.argv[2]))
PY
say "spec: SPEC, equal to the packed catalog/spec.json"

# The emulator, from its own package in the checkout (one JSON line with url and api_key),
# seeded with enough contacts for a read of more than one page.
# --ready-file: the line is written there whole once the emulator serves.
"$node_bin" "$root/packages/emulator/bin/data-read-emulator" --port 0 --contacts 300 --seed 7 --ready-file "$work/emulator.json" >/dev/null 2>"$work/emulator.err" &
emulator_pid=$!
for _ in $(seq 1 300); do
  [ -s "$work/emulator.json" ] && break
  kill -0 "$emulator_pid" 2>/dev/null || { cat "$work/emulator.err" >&2; fail "the emulator exited"; }
  sleep 0.1
done
python3 - "$work/emulator.json" "$work/config.json" <<'PY' || { cat "$work/emulator.err" >&2; fail "the emulator wrote no ready file with url and api_key in 30 s"; }
import json, sys
first = json.load(open(sys.argv[1]))
json.dump({"api_key": first["api_key"], "base_url": first["url"]}, open(sys.argv[2], "w"))
PY
say "emulator: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_url"])' "$work/config.json")"

image check --config "$work/config.json" >"$work/check.out" 2>"$work/check.err" || { cat "$work/check.err" >&2; fail "check exited non-zero"; }
check_airbyte check "$work/check.out"
grep -q '"status":"SUCCEEDED"' "$work/check.out" || { cat "$work/check.out" >&2; fail "check did not succeed"; }
say "check: SUCCEEDED"

image discover --config "$work/config.json" >"$work/discover.out" 2>"$work/discover.err" || { cat "$work/discover.err" >&2; fail "discover exited non-zero"; }
check_airbyte discover "$work/discover.out"
say "discover: $(python3 -c 'import json,sys; print(", ".join(s["name"] for s in next(json.loads(l) for l in open(sys.argv[1]) if "\"type\":\"CATALOG\"" in l)["catalog"]["streams"]))' "$work/discover.out")"

image read --config "$work/config.json" --catalog "$code_dir/catalog/configured_catalog.json" >"$work/read.out" 2>"$work/read.err" \
  || { tail -n 20 "$work/read.err" >&2; fail "read exited non-zero"; }
check_airbyte read "$work/read.out"
say "read: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d.get("records", d.get("counts", {}))))' "$work/read.check.json")"

tap_image --about --format json >"$work/about.out" 2>"$work/about.err" || { cat "$work/about.err" >&2; fail "tap-data-read --about exited non-zero"; }
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/about.out" || fail "tap-data-read --about --format json is not JSON"
tap_image --config "$work/config.json" --discover >"$work/tap-catalog.json" 2>"$work/tap-discover.err" || { cat "$work/tap-discover.err" >&2; fail "tap-data-read --discover exited non-zero"; }
tap_image --config "$work/config.json" --catalog "$work/tap-catalog.json" >"$work/tap.out" 2>"$work/tap.err" || { tail -n 20 "$work/tap.err" >&2; fail "tap-data-read sync exited non-zero"; }
protocol_checker singer tap "$work/tap.out"
say "singer face: --about, --discover and a sync passed"

kill "$emulator_pid" 2>/dev/null || true
wait "$emulator_pid" 2>/dev/null || true
emulator_pid=""

# ---------------------------------------------------------------- 3. npm consumer
consumer="$work/consumer"
mkdir -p "$consumer"
cp "$tarball" "$consumer/"
(cd "$consumer" && npm install --omit=dev --no-package-lock "./$(basename "$tarball")") >"$work/consumer-install.log" 2>&1 \
  || { tail -n 30 "$work/consumer-install.log" >&2; fail "npm install --omit=dev of the tarball"; }
[ ! -e "$consumer/node_modules/typescript" ] || fail "typescript was installed for a production install"
(cd "$consumer" && node_modules/.bin/source-data-read spec) >"$work/consumer-spec.out" 2>"$work/consumer-spec.err" \
  || { cat "$work/consumer-spec.err" >&2; fail "installed source-data-read spec"; }
check_airbyte consumer-spec "$work/consumer-spec.out"
(cd "$consumer" && node_modules/.bin/tap-data-read --about) >"$work/consumer-about.out" 2>"$work/consumer-about.err" \
  || { cat "$work/consumer-about.err" >&2; fail "installed tap-data-read --about"; }
[ -s "$work/consumer-about.out" ] || fail "installed tap-data-read --about printed nothing"
say "npm consumer: install --omit=dev, source-data-read spec, tap-data-read --about passed"

# ---------------------------------------------------------------- summary
python3 - "$work" "$tarball" "$tarball_bytes" "$plan" <<'PY'
import json, os, sys
work, tarball, size, plan = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.load(open(sys.argv[4]))
def load(name):
    p = os.path.join(work, name)
    return json.load(open(p)) if os.path.exists(p) else None
print(json.dumps({
    "ok": True,
    "entrypoint": plan["entrypoint"],
    "airbyte_entrypoint": plan["env"].get("AIRBYTE_ENTRYPOINT"),
    "tarball": {"name": os.path.basename(tarball), "bytes": size,
                "files": open(os.path.join(work, "tarball-files.txt")).read().split()},
    "checks": {name: load(name + ".check.json") for name in ("spec", "check", "discover", "read", "tap", "consumer-spec")},
}))
PY
