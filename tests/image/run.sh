#!/usr/bin/env bash
# The container image, built and run here: tests/image/run.sh [--no-e2e]
#
#  1. a Docker engine: started (dockerd, Debian's docker.io, installed when missing) unless one
#     answers;
#  2. a base: python:3.11-slim when the engine has it or can pull it, else a Debian bookworm base
#     bootstrapped from Debian's packages (mmdebstrap, docker import; kept by the engine, so
#     only the first run pays for it) — no container registry is needed;
#  3. the image, from a copy of the tracked files (the Dockerfile's BASE build argument; the
#     machine's CA bundle as extra-ca.pem for the build's downloads);
#  4. run as the manifests run it (user 10001, read-only root filesystem, every capability
#     dropped, no privilege escalation): /healthz, /readyz and /metrics on the health listener,
#     a verb with a captured body on the loopback verb listener (docker exec) and refused on the
#     health listener, the HEALTHCHECK healthy, SIGTERM (docker stop) exits 0;
#     every caldera command README.md and docs/ show, run from the image (as the wheel tier);
#  5. docker-compose.yml (the caldera service: its Prometheus needs a registry image) with the
#     same checks;
#  6. a derived image with a third-party plugin (docs/plugin-author-guide.md, "In the container
#     image"), serving it;
#  7. the end-to-end scenarios with Caldera running from the image (CALDERA_E2E_IMAGE), among
#     them a faulty plugin installed beside it (mounted, on the container's PYTHONPATH).
# Exit status: 0 when every step passed; 77 when no Docker engine answers and none can be started
# here (not root, or dockerd installed but failing: its log is printed), which .ci/run reports
# as not run; 1 for any failed build or check. Each step prints its duration.
# Environment: CALDERA_IMAGE (default caldera:test), CALDERA_IMAGE_BASE (a base image to use
# instead of the choice of step 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
image=${CALDERA_IMAGE:-caldera:test}
work=$(mktemp -d)
containers=()
cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  if [ -n "${compose_project:-}" ]; then
    (cd "$root" && $compose -p "$compose_project" down -v >/dev/null 2>&1) || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
t0=$SECONDS
t_step=""
step() {  # the previous step's duration, then the next step's title
  [ -z "$t_step" ] || printf '    (step: %d s)\n' $((SECONDS - t_step))
  printf '\n--- %s (at %d s)\n' "$*" $((SECONDS - t0))
  t_step=$SECONDS
}
fail() { echo "image test: $*" >&2; exit 1; }
no_engine() { echo "image test: no Docker engine: $*" >&2; exit 77; }
export DOCKER_BUILDKIT=0  # the machine's client may have no buildx; the legacy builder suffices

step "1. Docker engine"
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || no_engine "none answers, and starting dockerd needs root"
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io; } \
      >"$work/apt.log" 2>&1 || { tail -5 "$work/apt.log" >&2; no_engine "docker.io does not install"; }
  fi
  # Started for this and later runs (the engine keeps the base and the build cache); its log
  # outlives this script.
  dockerd_log=${TMPDIR:-/tmp}/caldera-dockerd.log
  setsid nohup dockerd >"$dockerd_log" 2>&1 </dev/null &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 "$dockerd_log" >&2; no_engine "dockerd did not start (log: $dockerd_log)"; }
  echo "dockerd started (log: $dockerd_log)"
fi
docker version --format 'engine {{.Server.Version}}'

step "2. base image"
base=${CALDERA_IMAGE_BASE:-}
if [ -z "$base" ]; then
  if docker image inspect python:3.11-slim >/dev/null 2>&1 \
    || timeout 300 docker pull -q python:3.11-slim >"$work/pull.log" 2>&1; then
    base=python:3.11-slim
  else
    echo "python:3.11-slim: not present and not pullable ($(tail -1 "$work/pull.log"))"
    base=caldera-base:bookworm
    if docker image inspect "$base" >/dev/null 2>&1; then
      echo "$base: bootstrapped by an earlier run, kept by the engine"
    else
      if ! command -v mmdebstrap >/dev/null 2>&1; then
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap; } \
          >"$work/apt.log" 2>&1 || { tail -5 "$work/apt.log" >&2; fail "mmdebstrap does not install"; }
      fi
      echo "bootstrapping $base from Debian's packages (mmdebstrap)"
      mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$work/base.tar" http://deb.debian.org/debian || fail "mmdebstrap failed"
      docker import "$work/base.tar" "$base" >/dev/null || fail "docker import failed"
      rm -f "$work/base.tar"
    fi
  fi
fi
echo "base: $base"

step "3. build $image"
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
context() {  # a copy of the tracked files (and the CA bundle for the build's downloads)
  mkdir -p "$1"
  (cd "$root" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$1"
  if [ -f "$ca" ]; then cp "$ca" "$1/extra-ca.pem"; fi
}
context "$work/ctx"
# The source commit for caldera_build_info, as the operator guide's build line passes it (a
# checkout that is no git repository builds with "unknown").
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
docker build -q --build-arg BASE="$base" --build-arg COMMIT="$commit" -t "$image" "$work/ctx" \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; fail "docker build failed"; }
docker image inspect "$image" --format 'size {{.Size}} bytes, user {{.Config.User}}'

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_health() {  # URL
  for _ in $(seq 60); do curl -fsS "$1/healthz" >/dev/null 2>&1 && return 0; sleep 1; done
  return 1
}
fixture="$root/plugins/api/captured/volcano-1.15/onSessionOpen.request.json"
# A verb posted from inside the container to its loopback verb listener, the body on stdin.
post_inside() {  # verb exec-prefix...
  local verb=$1; shift
  "$@" python -c 'import sys, urllib.request
r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8090/" + sys.argv[1],
    data=sys.stdin.buffer.read(), headers={"Content-Type": "application/json"}), timeout=10)
print(r.status, r.read().decode())' "$verb"
}
verb_inside() { post_inside onSessionOpen "$@" <"$fixture"; }
check_listeners() {  # health-URL exec-prefix...
  local url=$1; shift
  for path in /healthz /readyz /metrics; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url$path")
    [ "$code" = 200 ] || fail "$path on the health listener: $code"
  done
  # Read whole, then searched: `curl | grep -q` fails under pipefail when grep stops reading early.
  body=$(curl -fsS "$url/readyz") || fail "/readyz: no answer"
  grep -q '"version"' <<<"$body" || fail "/readyz has no version: $body"
  body=$(curl -fsS "$url/metrics") || fail "/metrics: no answer"
  grep -q "^caldera_build_info{.*commit=\"$commit\"" <<<"$body" \
    || fail "/metrics has no caldera_build_info with commit=\"$commit\": $(grep '^caldera_build_info' <<<"$body")"
  answer=$(verb_inside "$@") || fail "onSessionOpen on the verb listener failed"
  [ "$answer" = "200 {}" ] || fail "onSessionOpen answered: $answer"
  code=$(curl -s -o /dev/null -w '%{http_code}' -XPOST --data-binary "@$fixture" "$url/onSessionOpen")
  [ "$code" = 404 ] || fail "the health listener answered a verb with $code"
  echo "listeners: probes and metrics on the health port, the verb on loopback, refused beside"
}
wait_healthy_status() {  # container
  for _ in $(seq 40); do
    [ "$(docker inspect -f '{{.State.Health.Status}}' "$1")" = healthy ] && return 0
    sleep 1
  done
  fail "$1: HEALTHCHECK never healthy"
}

step "4. run as the manifests do"
port=$(free_port)
name="caldera-image-test-$$"
containers+=("$name")
docker run -d --name "$name" --read-only --user 10001:10001 --cap-drop ALL \
  --security-opt no-new-privileges -p "127.0.0.1:$port:8091" "$image" >/dev/null
wait_health "http://127.0.0.1:$port" || { docker logs "$name" >&2; fail "no /healthz"; }
check_listeners "http://127.0.0.1:$port" docker exec -i "$name"
wait_healthy_status "$name"
docker stop -t 10 "$name" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || { docker logs "$name" >&2; fail "exit code $code after SIGTERM"; }
echo "SIGTERM: exit 0"

step "4b. every caldera command README.md and docs/ show, run from the image"
# tests/shipped/walkthrough.py: the list the wheel tier runs (serve --record driven through a
# session, explain from the image against it, replay, check-config, volcano-config, openapi).
(cd "$root" && uv run python -m tests.shipped.walkthrough --image "$image" --scratch "$work/walk") \
  || fail "a documented command failed from the image (above)"

step "5. docker-compose.yml (the caldera service)"
if docker compose version >/dev/null 2>&1; then
  compose="docker compose"
else
  if ! command -v docker-compose >/dev/null 2>&1; then
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose; } \
      >"$work/apt.log" 2>&1 || { tail -5 "$work/apt.log" >&2; fail "docker-compose does not install"; }
  fi
  compose=docker-compose
fi
# The image the caldera service names, tagged from the one just built (no build by compose).
compose_image=$(awk '/^  caldera:/ {c = 1} c && /^    image:/ {print $2; exit}' "$root/docker-compose.yml")
[ -n "$compose_image" ] || fail "docker-compose.yml: no image for the caldera service"
docker tag "$image" "$compose_image"
compose_project="calderaimagetest$$"
# Only the caldera service: naming it starts it alone (prometheus depends on caldera, not the
# reverse), since prometheus' image comes from a registry that is not reachable here.
(cd "$root" && $compose -p "$compose_project" up -d --no-build caldera) >"$work/compose.log" 2>&1 \
  || { cat "$work/compose.log" >&2; fail "compose up failed"; }
cid=$(cd "$root" && $compose -p "$compose_project" ps -q caldera)
wait_health "http://127.0.0.1:8091" || { docker logs "$cid" >&2; fail "compose: no /healthz"; }
check_listeners "http://127.0.0.1:8091" docker exec -i "$cid"
wait_healthy_status "$cid"
(cd "$root" && $compose -p "$compose_project" stop caldera) >/dev/null 2>&1
code=$(docker inspect -f '{{.State.ExitCode}}' "$cid")
[ "$code" = 0 ] || fail "compose: exit code $code after stop"
(cd "$root" && $compose -p "$compose_project" down -v) >/dev/null 2>&1
compose_project=""
echo "compose: as above, exit 0"

step "6. a third-party plugin in a derived image"
plugin="$work/plugin"
mkdir -p "$plugin"
python3 - "$root" "$plugin" <<'PY'
import re, sys
from pathlib import Path
root, out = Path(sys.argv[1]), Path(sys.argv[2])
readme = (root / "README.md").read_text()
(out / "caldera_gpu_model.py").write_text(re.search(r"<!-- example-plugin -->\n```python\n(.*?)```", readme, re.S)[1])
guide = (root / "docs" / "plugin-author-guide.md").read_text()
def block(section: str, kind: str) -> str:  # the first block of that kind in that section
    text = guide[guide.index(section):]
    return re.search(rf"```{kind}\n(.*?)```", text, re.S)[1]
(out / "Dockerfile").write_text(block("## In the container image", "dockerfile"))
(out / "pyproject.toml").write_text(block("## Publishing a plugin", "toml"))
PY
if [ -f "$ca" ]; then cp "$ca" "$plugin/extra-ca.pem"; fi
docker build -q --build-arg CALDERA="$image" -t "$image-gpu-model" "$plugin" >"$work/plugin.log" 2>&1 \
  || { tail -30 "$work/plugin.log" >&2; fail "the plugin image did not build"; }
name="caldera-image-plugin-$$"
containers+=("$name")
config="$work/gpu-model.yaml"
printf 'tiers: [{plugins: [{name: gpu-model}]}]\n' >"$config"
chmod 0644 "$config"
port=$(free_port)
docker run -d --name "$name" --read-only --user 10001:10001 --cap-drop ALL \
  --security-opt no-new-privileges -p "127.0.0.1:$port:8091" -v "$config:/etc/caldera/caldera.yaml:ro" \
  "$image-gpu-model" serve --config /etc/caldera/caldera.yaml --host 127.0.0.1 --port 8090 \
  --health-host 0.0.0.0 --health-port 8091 >/dev/null
wait_health "http://127.0.0.1:$port" || { docker logs "$name" >&2; fail "plugin image: no /healthz"; }
body=$(curl -fsS "http://127.0.0.1:$port/readyz") || fail "plugin image: /readyz: no answer"
grep -q '"gpu-model"' <<<"$body" || fail "the plugin is not served: $body"
# Its predicate decides: a pod asking for an H100 does not fit a node labelled A100.
answer=$(post_inside predicate docker exec -i "$name" <<'JSON'
{"task": {"UID": "t1", "Name": "p", "Namespace": "ns",
          "Pod": {"metadata": {"name": "p", "annotations": {"example.com/gpu-model": "H100"}}}},
 "node": {"Name": "n1", "Node": {"metadata": {"name": "n1",
          "labels": {"nvidia.com/gpu.product": "A100"}}}}}
JSON
) || fail "predicate on the plugin image failed"
[ "$answer" = '200 {"status":"n1 has no H100","code":3}' ] || fail "the plugin's predicate answered: $answer"
docker stop -t 10 "$name" >/dev/null
echo "the derived image serves gpu-model: its predicate rejects an A100 node for an H100 pod"

if [ "${1:-}" = "--no-e2e" ]; then
  step "7. end to end from the image: left out (--no-e2e)"
else
  step "7. end to end with Caldera from the image"
  CALDERA_E2E_IMAGE="$image" "$root/tests/e2e/run.sh" -run 'TestE2E/(placement|preemption|preemption-faulty-abstain|preemption-faulty-fail|admission|restart)$'
fi
printf '    (step: %d s)\n\nimage test passed in %d s\n' $((SECONDS - t_step)) $((SECONDS - t0))
