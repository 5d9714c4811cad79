//! Sharding on the test bed, with real processes in real time: three `plumb controller
//! --shards auto` replicas share the Applications of one namespace.
//!
//! - Every app is synced by exactly one replica, which records itself in `status.controller`,
//!   and the apps are spread evenly. Two witnesses: the replicas' JSON logs (one `"synced":
//!   true` line per app across the three) and the API server's audit log (`testbed/up.sh
//!   --audit`, as CI runs it): one write of each app's ConfigMap, dry runs aside.
//! - SIGKILL one: its apps are taken over (claimed by the others, a new epoch) and every app
//!   stays synced with one history entry: an interrupted operation was resumed, not run again.
//! - Start it again: only its apps move back (about a third).
//! - SIGSTOP one past its Lease, then SIGCONT: the others took its apps, and nothing it did
//!   after waking landed twice (each app still has one history entry, all Synced).
//! - An operation interrupted by its owner's death (a sync waiting for wave 0's health,
//!   after its PreSync hook): the replica that takes the app over resumes it — same start,
//!   the hook and wave 0 not created again, wave 1 only after wave 0 is healthy, one history
//!   entry.
//!
//! Skipped without the test bed (`testbed/up.sh`), unless `REQUIRE_K8S_TESTBED=1`.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use fixture::{AppBed, Controller, app, op};
use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;
use support::{apply, assign_lb, testbed, wait_until};

/// Apps in the test (the figure).
const APPS: usize = 300;
/// Seconds a member Lease lasts (renewed every 2 s, acting stops 4 s after the last
/// renewal): long enough that a busy 2-core machine renews in time.
const LEASE: &str = "6";

/// A replica `id` serving the Applications of the bed's namespace (its Leases there too),
/// refreshing every hour (only watches and membership changes make it act); its stderr (JSON
/// log lines) to `<dir>/<id>.log`.
fn replica(bed: &AppBed, id: &str) -> (Controller, PathBuf) {
    replica_every(bed, id, "3600", "0")
}

/// [`replica`] refreshing every `interval` seconds (plus up to `jitter`); a replica started
/// again appends to its log.
fn replica_every(bed: &AppBed, id: &str, interval: &str, jitter: &str) -> (Controller, PathBuf) {
    let log = bed.dir.join(format!("{id}.log"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .expect("log file");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["controller", "--app-namespace", &bed.apps_ns])
        .args(["--lease-namespace", &bed.apps_ns, "--lease-duration", LEASE])
        .args(["--interval", interval, "--jitter", jitter])
        .args(["--shards", "auto", "--shard-id", id])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(file))
        .spawn()
        .expect("plumb controller starts");
    (Controller(child), log)
}

/// Each app's `(owner, epoch)`, sync status and history length, by name.
async fn states(cluster: &Cluster, ns: &str) -> BTreeMap<String, (String, u64, String, usize)> {
    cluster
        .list_applications(Some(ns))
        .await
        .unwrap_or_default()
        .iter()
        .filter_map(|a| {
            let name = a.pointer("/metadata/name")?.as_str()?.to_string();
            let owner = a
                .pointer("/status/controller/owner")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let epoch = a
                .pointer("/status/controller/epoch")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let sync = a
                .pointer("/status/sync/status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let history = a
                .pointer("/status/history")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Some((name, (owner, epoch, sync, history)))
        })
        .collect()
}

/// The apps each log says its replica synced (`"synced": true` lines), by app name.
fn synced_in(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["synced"] == true)
        .filter_map(|v| {
            v["app"]
                .as_str()
                .and_then(|a| a.rsplit('/').next())
                .map(str::to_string)
        })
        .collect()
}

/// Waits until all `n` apps are Synced, each owned by one of `owners`, as rendezvous hashing
/// over `owners` says.
async fn converged(cluster: &Cluster, ns: &str, owners: &[&str], n: usize) {
    let members: Vec<String> = owners.iter().map(|s| s.to_string()).collect();
    // Hundreds of apps synced (or handed over) by replicas that share two cores with the
    // API server: a busy machine needs more than the usual deadline. Met, it returns at once.
    let within = support::DEADLINE * 3;
    support::eventually(within, || async {
        let s = states(cluster, ns).await;
        (s.len() == n
            && s.iter().all(|(name, (owner, _, sync, _))| {
                sync == "Synced"
                    && plumb_sync::shard::owner(&members, ns, name) == Some(owner.as_str())
            }))
        .then_some(())
    })
    .await
    .unwrap_or_else(|| {
        panic!("{n} apps Synced and owned as hashing over {owners:?} says: not within {within:?}")
    });
}

/// The ConfigMaps of namespace `ns` whose name begins with `prefix`.
async fn configmaps(cluster: &Cluster, ns: &str, prefix: &str) -> Vec<Value> {
    let kind = plumb_core::GroupKind {
        group: String::new(),
        kind: "ConfigMap".into(),
    };
    cluster
        .list_live(&[kind], Some(&[ns.to_string()]), None)
        .await
        .expect("ConfigMaps")
        .into_iter()
        .filter(|c| {
            c.pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect()
}

fn signal(c: &Controller, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &c.0.id().to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill {sig}");
}

/// Waits until each replica's log shows it has seen `n` members.
async fn members_seen<'a>(logs: impl IntoIterator<Item = &'a PathBuf> + Clone, n: usize) {
    wait_until(&format!("each replica seeing {n} members"), || async {
        logs.clone()
            .into_iter()
            .all(|log| {
                std::fs::read_to_string(log)
                    .unwrap_or_default()
                    .lines()
                    .any(|l| {
                        serde_json::from_str::<Value>(l)
                            .ok()
                            .and_then(|v| v["members"].as_array().map(Vec::len))
                            == Some(n)
                    })
            })
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_and_hand_over_their_apps() {
    let Some(cluster) = testbed("three_replicas_share_and_hand_over_their_apps").await else {
        return;
    };
    let bed = AppBed::new(&cluster, "shard", json!({})).await;
    // One repository, one directory (one ConfigMap) per app.
    let repo = bed.dir.join("repo");
    for i in 0..APPS {
        fixture::write_json(
            &repo.join(format!("apps/a{i:03}")),
            "cm.json",
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:03}")}, "data": {"i": i.to_string()}}),
        );
    }
    bed.commit();
    let ids = ["s0", "s1", "s2"];
    let mut replicas: BTreeMap<&str, (Controller, PathBuf)> =
        ids.iter().map(|id| (*id, replica(&bed, id))).collect();
    // The members settled (each replica has seen the three) before the apps come.
    members_seen(replicas.values().map(|(_, log)| log), 3).await;
    let audit = support::audit_log_from_now();
    let apps: Vec<Value> = (0..APPS)
        .map(|i| {
            let name = format!("a{i:03}");
            bed.application_at(&name, &format!("apps/{name}"), json!({"automated": {}}))
        })
        .collect();
    apply(&cluster, apps).await;
    let ns = bed.apps_ns.clone();
    converged(&cluster, &ns, &ids, APPS).await;

    // Each app synced once, by the replica that owns it; the shares even.
    let mut synced_by: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (id, (_, log)) in &replicas {
        for app in synced_in(log) {
            synced_by.entry(app).or_default().push(id);
        }
    }
    let state = states(&cluster, &ns).await;
    for (name, (owner, epoch, _, history)) in &state {
        // One sync, by one replica (usually the owner; on a busy machine a late renewal can
        // move an app between its sync and now, never sync it twice).
        assert_eq!(
            synced_by.get(name).map(Vec::len),
            Some(1),
            "{name}: synced by {:?}, owned by {owner}",
            synced_by.get(name)
        );
        // Replicas starting a moment apart see the members grow: an app may have changed
        // owner before its first sync (a higher epoch), never been synced twice.
        assert!(
            *epoch >= 1 && *history == 1,
            "{name}: epoch {epoch}, {history} syncs"
        );
    }
    // The API server's word: each ConfigMap written once (its apply), by the three replicas
    // together; dry runs change nothing and are not counted.
    if let Some((log, from)) = &audit {
        let mut writes: BTreeMap<String, usize> = BTreeMap::new();
        for e in support::audited_since(log, *from) {
            if e.is_write()
                && e.resource == "configmaps"
                && e.namespace == bed.dest
                && e.name.starts_with("cm-")
                && !e.uri.contains("dryRun")
            {
                *writes.entry(e.name).or_default() += 1;
            }
        }
        assert_eq!(writes.len(), APPS, "ConfigMaps written: {}", writes.len());
        let twice: Vec<_> = writes.iter().filter(|(_, n)| **n != 1).collect();
        assert!(twice.is_empty(), "written more than once: {twice:?}");
    }
    // Each replica owns a share (`converged` checked every owner against the hash; how even
    // the hash spreads apps is the unit test's, on fixed names: this namespace is random).
    for id in ids {
        let n = state.values().filter(|s| s.0 == id).count();
        assert!(n > 0, "{id} owns none of {APPS}");
    }

    // SIGKILL s1: the others claim its apps.
    let s1_apps: Vec<String> = state
        .iter()
        .filter(|(_, s)| s.0 == "s1")
        .map(|(n, _)| n.clone())
        .collect();
    let killed = Instant::now();
    drop(replicas.remove("s1"));
    converged(&cluster, &ns, &["s0", "s2"], APPS).await;
    println!(
        "takeover of {} apps after SIGKILL: {:.1} s (Lease {LEASE} s)",
        s1_apps.len(),
        killed.elapsed().as_secs_f64()
    );
    let after = states(&cluster, &ns).await;
    for name in &s1_apps {
        let (owner, epoch, sync, history) = &after[name];
        assert!(
            owner != "s1" && *epoch == state[name].1 + 1,
            "{name}: {owner} epoch {epoch}"
        );
        assert_eq!((sync.as_str(), *history), ("Synced", 1), "{name}");
    }

    // s1 comes back: exactly the apps hashing gives it move, to it; no other app changes owner.
    replicas.insert("s1", replica(&bed, "s1"));
    converged(&cluster, &ns, &ids, APPS).await;
    let back = states(&cluster, &ns).await;
    let moved: BTreeSet<&String> = back
        .iter()
        .filter(|(n, s)| s.0 != after[*n].0)
        .map(|(n, _)| n)
        .collect();
    let to_s1: BTreeSet<&String> = back
        .iter()
        .filter(|(_, s)| s.0 == "s1")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(moved, to_s1, "the apps that moved when s1 came back");
    for (name, s) in &back {
        assert!(s.0 != "s1" || s.1 > after[name].1, "{name}: {s:?}");
    }

    // SIGSTOP s2 past its Lease: s0 and s1 take its apps; SIGCONT: it renews, takes its
    // share back with a new epoch, and nothing was applied twice.
    let s2 = &replicas["s2"].0;
    signal(s2, "-STOP");
    let stopped = Instant::now();
    converged(&cluster, &ns, &["s0", "s1"], APPS).await;
    println!(
        "takeover after SIGSTOP: {:.1} s",
        stopped.elapsed().as_secs_f64()
    );
    signal(s2, "-CONT");
    converged(&cluster, &ns, &ids, APPS).await;
    let last = states(&cluster, &ns).await;
    for (name, (_, _, sync, history)) in &last {
        assert_eq!((sync.as_str(), *history), ("Synced", 1), "{name}");
    }
    // The ConfigMaps: one per app, each applied by one sync.
    assert_eq!(configmaps(&cluster, &bed.dest, "cm-").await.len(), APPS);
    for (_, (c, _)) in replicas.iter_mut() {
        assert!(c.alive(), "a replica exited");
    }
}

/// The owner of an app SIGKILLed while the app's sync waits for wave 0 to be healthy: the
/// other replica claims the app (a new epoch) and resumes the operation from its saved state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_its_owner_left_is_resumed_by_the_next_owner() {
    let Some(cluster) = testbed("an_operation_its_owner_left_is_resumed_by_the_next_owner").await
    else {
        return;
    };
    let bed = AppBed::new(&cluster, "shard-resume", json!({})).await;
    let dest = bed.dest.clone();
    let wave = |w: &str| json!({"argocd.argoproj.io/sync-wave": w});
    // A PreSync hook (created once: `BeforeHookCreation` would replace it on a second run),
    // wave 0 a LoadBalancer Service (Progressing until the test gives it an address: no one
    // else does), wave 1 a ConfigMap.
    bed.write(
        "hook.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "pre", "annotations": {"argocd.argoproj.io/hook": "PreSync"}},
            "data": {"k": "pre"}}),
    );
    bed.write(
        "lb.json",
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "gate", "annotations": wave("0")},
            "spec": {"type": "LoadBalancer", "selector": {"app": "gate"},
                     "ports": [{"port": 80, "targetPort": 8080}]}}),
    );
    bed.write(
        "after.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "after", "annotations": wave("1")}, "data": {"k": "after"}}),
    );
    bed.commit();
    let ids = ["s0", "s1"];
    let mut replicas: BTreeMap<&str, (Controller, PathBuf)> =
        ids.iter().map(|id| (*id, replica(&bed, id))).collect();
    members_seen(replicas.values().map(|(_, log)| log), 2).await;
    let name = "gated";
    bed.application(&cluster, name, json!({"automated": {}}))
        .await;
    let ns = bed.apps_ns.clone();
    // Its owner is in wave 0's health wait: Running, the hook and the Service created.
    let running = wait_until("the sync waiting for wave 0", || async {
        let a = app(&cluster, &ns, name).await;
        (op(&a, "phase") == "Running" && op(&a, "message").starts_with("waiting for")).then_some(a)
    })
    .await;
    let owner = running["status"]["controller"]["owner"]
        .as_str()
        .expect("status.controller.owner")
        .to_string();
    let epoch = running["status"]["controller"]["epoch"]
        .as_u64()
        .expect("status.controller.epoch");
    let get = |kind: &'static str, name: &'static str| {
        let (cluster, dest) = (&cluster, &dest);
        async move {
            cluster
                .get_object("", kind, dest, name)
                .await
                .expect("get object")
        }
    };
    let hook = get("ConfigMap", "pre").await.expect("the hook ran");
    let gate = get("Service", "gate").await.expect("wave 0 applied");
    assert!(get("ConfigMap", "after").await.is_none(), "wave 1 before 0");
    let owner_id = ids
        .iter()
        .copied()
        .find(|id| *id == owner)
        .unwrap_or_else(|| panic!("owner {owner} is not one of {ids:?}"));
    let heir = ids.iter().copied().find(|id| *id != owner_id).expect("two");
    drop(replicas.remove(owner_id));

    // The heir claims the app (a new epoch) while wave 0 is still unhealthy, and the
    // operation is still the one that started.
    let claimed = wait_until(&format!("{heir} claiming {name}"), || async {
        let a = app(&cluster, &ns, name).await;
        (a["status"]["controller"]["owner"] == heir).then_some(a)
    })
    .await;
    assert_eq!(claimed["status"]["controller"]["epoch"], epoch + 1);
    assert_eq!(op(&claimed, "startedAt"), op(&running, "startedAt"));
    assert!(get("ConfigMap", "after").await.is_none(), "wave 1 before 0");

    // Wave 0 healthy: the heir finishes the same operation.
    assign_lb(&cluster, &dest, "gate").await;
    let done = wait_until("the resumed sync ending", || async {
        let a = app(&cluster, &ns, name).await;
        (op(&a, "phase") == "Succeeded").then_some(a)
    })
    .await;
    assert_eq!(op(&done, "startedAt"), op(&running, "startedAt"));
    let history = done["status"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(history.len(), 1, "{history:?}");
    let heir_log = replicas[heir].1.clone();
    let line = format!("{ns}/{name}");
    wait_until(&format!("{heir} logging the resumed operation"), || async {
        std::fs::read_to_string(&heir_log)
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains(&line) && l.contains("\"resumed\":true"))
            .then_some(())
    })
    .await;
    // Neither the hook nor wave 0 created again; wave 1 applied.
    let uid = |o: Option<Value>| o.map(|o| o["metadata"]["uid"].clone());
    assert_eq!(
        uid(get("ConfigMap", "pre").await),
        uid(Some(hook)),
        "hook re-run"
    );
    assert_eq!(
        uid(get("Service", "gate").await),
        uid(Some(gate)),
        "wave 0 recreated"
    );
    assert!(get("ConfigMap", "after").await.is_some(), "wave 1 applied");
    assert!(replicas.get_mut(heir).expect("heir").0.alive());
}

/// Chaos: three replicas, a random one SIGKILLed (and started again) every 20 s for five
/// minutes (`PLUMB_CHAOS_SECONDS`), while every app's source changes every round. At the end
/// every app is Synced at the last commit with its last content, and no revision appears
/// twice in any app's history: nothing lost, nothing synced twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_replica_killed_every_20_s_loses_and_duplicates_nothing() {
    let Some(cluster) =
        testbed("a_random_replica_killed_every_20_s_loses_and_duplicates_nothing").await
    else {
        return;
    };
    const N: usize = 60;
    let seconds: u64 = std::env::var("PLUMB_CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let bed = AppBed::new(&cluster, "chaos", json!({})).await;
    let repo = bed.dir.join("repo");
    let write_round = |round: usize| {
        for i in 0..N {
            fixture::write_json(
                &repo.join(format!("apps/c{i:02}")),
                "cm.json",
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("chaos-{i:02}")},
                    "data": {"round": round.to_string()}}),
            );
        }
    };
    write_round(0);
    bed.commit();
    // Refreshing every 10 s, so each round's commit is seen without a webhook.
    let start = |id: &str| replica_every(&bed, id, "10", "2").0;
    let ids = ["s0", "s1", "s2"];
    let mut replicas: Vec<Controller> = ids.iter().map(|id| start(id)).collect();
    apply(
        &cluster,
        (0..N)
            .map(|i| {
                let name = format!("c{i:02}");
                bed.application_at(&name, &format!("apps/{name}"), json!({"automated": {}}))
            })
            .collect(),
    )
    .await;
    // A small LCG: the victims, printed so a failure can be replayed.
    let mut seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let rounds = (seconds / 20).max(1) as usize;
    for round in 1..=rounds {
        tokio::time::sleep(std::time::Duration::from_secs(20)).await;
        write_round(round);
        common::git(&repo, &["commit", "-qam", &format!("round {round}")]);
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let victim = (seed >> 33) as usize % ids.len();
        println!("round {round}: SIGKILL {}", ids[victim]);
        let _ = replicas[victim].0.kill();
        let _ = replicas[victim].0.wait();
        replicas[victim] = start(ids[victim]);
    }
    let head = common::git(&repo, &["rev-parse", "HEAD"]);
    let ns = bed.apps_ns.clone();
    wait_until(
        &format!("{N} apps Synced at the last commit {head}"),
        || async {
            let apps = cluster.list_applications(Some(&ns)).await.ok()?;
            (apps.len() == N
                && apps.iter().all(|a| {
                    a.pointer("/status/sync/status") == Some(&json!("Synced"))
                        && a.pointer("/status/sync/revision") == Some(&json!(head))
                }))
            .then_some(())
        },
    )
    .await;
    for a in cluster.list_applications(Some(&ns)).await.expect("apps") {
        let name = a["metadata"]["name"].as_str().unwrap_or("").to_string();
        let revisions: Vec<&str> = a
            .pointer("/status/history")
            .and_then(Value::as_array)
            .map(|h| h.iter().filter_map(|e| e["revision"].as_str()).collect())
            .unwrap_or_default();
        let mut seen = std::collections::BTreeSet::new();
        for r in &revisions {
            assert!(
                seen.insert(*r),
                "{name}: revision {r} synced twice: {revisions:?}"
            );
        }
    }
    let last = configmaps(&cluster, &bed.dest, "chaos-").await;
    assert_eq!(last.len(), N);
    for c in &last {
        assert_eq!(c["data"]["round"], rounds.to_string(), "{c}");
    }
}
