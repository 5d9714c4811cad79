//! Health of 50,000 objects of mixed kinds, some judged by user Lua scripts: objects/s and
//! peak memory. Times are this thread's CPU time. `cargo run --release -p plumb-health --example bench_health [N] [LUA_PERCENT]`.

use plumb_health::{Checker, Customizations, LuaCheck, LuaLimits, Source};
use serde_json::{Value, json};

const LUA: &str = r#"
hs = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for i, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message
      return hs
    end
    if c.type == "Ready" and c.status == "False" then
      hs.status = "Degraded"
      hs.message = c.message
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = "Waiting for Ready"
return hs
"#;

fn object(i: usize, lua_percent: usize) -> Value {
    let ready = json!([{"type": "Ready", "status": if i.is_multiple_of(7) { "False" } else { "True" },
                        "reason": "Reconciled", "message": format!("object {i}")}]);
    if i % 100 < lua_percent {
        return json!({"apiVersion": "db.bench.test/v1", "kind": "Database",
            "metadata": {"name": format!("db-{i}"), "namespace": "bench", "generation": 1},
            "spec": {"size": i % 10}, "status": {"observedGeneration": 1, "conditions": ready}});
    }
    match i % 8 {
        0 => json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("d-{i}"), "namespace": "bench", "generation": 2},
            "spec": {"replicas": 3},
            "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}}),
        1 => json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p-{i}"), "namespace": "bench"},
            "spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}]}}),
        2 => json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "namespace": "bench"}, "data": {"k": "v"}}),
        3 => json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": format!("c-{i}"), "namespace": "bench"}, "status": {"conditions": ready}}),
        4 => json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": format!("k-{i}"), "namespace": "bench", "generation": 1},
            "spec": {"interval": "5m"}, "status": {"observedGeneration": 1, "conditions": ready}}),
        5 => json!({"apiVersion": "widgets.bench.test/v1", "kind": "Widget",
            "metadata": {"name": format!("w-{i}"), "namespace": "bench", "generation": 1},
            "status": {"observedGeneration": 1, "conditions": ready}}),
        6 => json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": format!("pvc-{i}"), "namespace": "bench"}, "status": {"phase": "Bound"}}),
        _ => json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("s-{i}"), "namespace": "bench"},
            "spec": {"type": "ClusterIP"}, "status": {}}),
    }
}

/// This thread's CPU time so far (`/proc/thread-self/schedstat`, ns on CPU): the figures hold on
/// a busy machine, where wall time does not.
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let lua_percent: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let objects: Vec<Value> = (0..n).map(|i| object(i, lua_percent)).collect();
    let rss_objects = peak_rss_kib();

    let mut custom = Customizations::new();
    custom.push(LuaCheck {
        group: "db.bench.test".into(),
        kind: "Database".into(),
        script: LUA.into(),
        use_open_libs: false,
        origin: "bench".into(),
    });
    let checker = Checker::new(custom, LuaLimits::default());
    let without_lua = Checker::default();

    for (label, c) in [("with Lua", &checker), ("no Lua scripts", &without_lua)] {
        // Warm up (compiles the script once per thread), then measure.
        let _ = c.check(&objects[0]);
        let start = cpu_secs();
        let mut by_source = [0usize; 4];
        for o in &objects {
            let a = c.check(o);
            by_source[match a.source {
                Source::Builtin => 0,
                Source::Lua => 1,
                Source::Generic => 2,
                Source::None => 3,
            }] += 1;
        }
        let secs = cpu_secs() - start;
        println!(
            "{label}: {n} objects in {:.1} ms CPU: {:.0} objects/s per core (builtin {}, lua {}, generic {}, none {})",
            secs * 1e3,
            n as f64 / secs,
            by_source[0],
            by_source[1],
            by_source[2],
            by_source[3]
        );
    }
    let lua_only: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Database").collect();
    if !lua_only.is_empty() {
        let start = cpu_secs();
        for o in &lua_only {
            let _ = checker.check(o);
        }
        let per = (cpu_secs() - start) / lua_only.len() as f64;
        println!("Lua check: {:.1} µs per object", per * 1e6);
    }
    let builtin: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect();
    let start = cpu_secs();
    for o in &builtin {
        let _ = checker.check(o);
    }
    let per = (cpu_secs() - start) / builtin.len().max(1) as f64;
    println!("built-in Deployment check: {:.2} µs per object", per * 1e6);
    println!(
        "peak RSS: {} MiB ({} MiB holding the objects)",
        peak_rss_kib() / 1024,
        rss_objects / 1024
    );
}
