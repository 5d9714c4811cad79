#!/usr/bin/env bash
# Benchmark: `plumb ui`'s pages, made on the server, and a large diff page in Chromium.
#
#   bench/ui.sh [APPS] [KEYS] [RUNS]     # defaults: 1,000 Applications, 10,000 keys, 10 runs
#
# 1. The list: a snapshot of APPS Applications (status with sync, health, revision and a
#    history of five syncs each) is served by `plumb ui --live`; bench/pair.py times a whole
#    `curl` of the list page (first page: 100 rows of APPS, filtered and sorted on the server)
#    beside the same request for `?format=json` (the same data, no HTML) and for the
#    filtered page `?verdict=loop` in the same run. Each request reads the snapshot again.
# 2. The diff page: one app whose ConfigMap has KEYS keys, every value changed in the cluster
#    (2 x KEYS changed lines). Headless Chromium (Debian's chromium-driver, over plain
#    WebDriver) opens it RUNS times; the script prints the median of the navigation timings
#    the browser records (response end, DOM content loaded, load event), in milliseconds,
#    and the page's size; then the same for the app's report page beside it.
#
# Needs curl, python3, chromedriver; builds plumb in release mode (PLUMB_BIN=path skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
apps=${1:-1000}
keys=${2:-10000}
runs=${3:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-bench-ui.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
if [ -z "${PLUMB_BIN:-}" ]; then
  cargo build --release -q -p plumb-cli
  PLUMB_BIN=$PWD/target/release/plumb
fi
echo "cores: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$apps" "$keys" <<'PY'
import json, os, sys
work, apps, keys = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
live = f"{work}/fleet"
os.makedirs(live)
rev = "b5e2be1f3c9d8a7e6b5c4d3e2f1a0b9c8d7e6f5a"
for i in range(apps):
    looping = i % 10 == 0
    history = [{"id": h, "revision": rev, "deployedAt": f"2026-09-22T19:5{h}:00Z",
                "deployStartedAt": f"2026-09-22T19:5{h}:00Z", "initiatedBy": {"automated": True},
                "source": {"repoURL": "https://git.example.com/r.git", "path": f"apps/{i}"}}
               for h in range(5)]
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
           "metadata": {"name": f"app-{i:04d}", "namespace": "argocd"},
           "spec": {"project": f"team-{i % 7}", "destination": {"server": "https://kubernetes.default.svc", "namespace": f"ns-{i}"},
                    "source": {"repoURL": "https://git.example.com/r.git", "path": f"apps/{i}", "targetRevision": "HEAD"}},
           "status": {"sync": {"status": "OutOfSync" if looping else "Synced", "revision": rev},
                      "health": {"status": "Healthy"}, "history": history}}
    with open(f"{live}/app-{i:04d}.json", "w") as f:
        json.dump(app, f)
# The big diff: one app, one ConfigMap of `keys` keys, every value changed live.
os.makedirs(f"{work}/big/repo/app")
os.makedirs(f"{work}/big/live")
data = {f"key-{k:05d}": f"value-{k}" for k in range(keys)}
cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "web"}, "data": data}
with open(f"{work}/big/repo/app/cm.json", "w") as f:
    json.dump(cm, f)
live_cm = dict(cm, metadata={"name": "big", "namespace": "web", "labels": {"app.kubernetes.io/instance": "big"},
                             "managedFields": [{"manager": "kubectl-edit", "operation": "Update", "time": "2026-01-01T00:00:00Z",
                                                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {f"f:{k}": {} for k in data}}}]},
               data={k: v + "-edited" for k, v in data.items()})
with open(f"{work}/big/live/cm.json", "w") as f:
    json.dump(live_cm, f)
app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "big", "namespace": "argocd"},
       "spec": {"destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
                "source": {"repoURL": "https://git.example.com/big.git", "path": "app"}},
       "status": {"sync": {"status": "OutOfSync"}}}
with open(f"{work}/big/live/app.json", "w") as f:
    json.dump(app, f)
PY

serve() { # serve LOG ARGS...: starts plumb ui, echoes its URL
  local log=$1; shift
  "$PLUMB_BIN" ui --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do
    if [ -s "$log" ]; then head -n 1 "$log"; return; fi
    sleep 0.05
  done
  echo "plumb ui did not start: $(cat "$log")" >&2; exit 2
}

url=$(serve "$work/fleet.log" --live "$work/fleet")
echo "== the list of $apps Applications (whole curl process, paired by bench/pair.py; the page vs its JSON)"
bench/pair.py -n "$runs" --vs "curl -sf -o /dev/null ${url}?format=json" -- curl -sf -o /dev/null "$url"
echo "== the list filtered on the server (?verdict=loop) vs the first page"
bench/pair.py -n "$runs" --vs "curl -sf -o /dev/null $url" -- curl -sf -o /dev/null "${url}?verdict=loop"
printf 'page size: %s bytes\n' "$(curl -sf "$url" | wc -c)"

big=$(serve "$work/big.log" --live "$work/big/live" --repo "$work/big/repo")
driver_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
chromedriver --port="$driver_port" >/dev/null 2>&1 &
pids+=($!)
echo "== the diff page of $((2 * keys)) changed lines in headless Chromium ($runs loads)"
python3 - "http://127.0.0.1:$driver_port" "${big}apps/argocd/big/diff" "${big}apps/argocd/big" "$runs" "$work/profile" <<'PY'
import json, sys, time, urllib.request
driver, diff_url, app_url, runs, profile = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def call(method, path, body=None):
    req = urllib.request.Request(driver + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=120))["value"]
deadline = time.time() + 60
while True:
    try:
        call("GET", "/status"); break
    except Exception:
        if time.time() > deadline: raise
        time.sleep(0.1)
caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"args": [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--user-data-dir={profile}"]}}}}
sid = call("POST", "/session", caps)["sessionId"]
def timings(url):
    rows = []
    for _ in range(runs):
        call("POST", f"/session/{sid}/url", {"url": url})
        t = call("POST", f"/session/{sid}/execute/sync", {"script":
            "const n = performance.getEntriesByType('navigation')[0]; return [n.responseEnd, n.domContentLoadedEventEnd, n.loadEventEnd, n.transferSize, document.querySelectorAll('tr').length];", "args": []})
        rows.append(t)
    med = lambda i: sorted(r[i] for r in rows)[len(rows) // 2]
    return med(0), med(1), med(2), rows[-1][3], rows[-1][4]
for name, url in (("diff page", diff_url), ("report page", app_url)):
    resp, dcl, load, size, trs = timings(url)
    print(f"{name}: response end {resp:.0f} ms, DOM content loaded {dcl:.0f} ms, load {load:.0f} ms (medians of {runs}); {size} bytes, {trs} table rows")
call("DELETE", f"/session/{sid}")
PY
