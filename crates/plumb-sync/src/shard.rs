//! Sharding the Applications across controller replicas, coordinated through Kubernetes
//! only: the decisions (pure; the controller's side is `controller::shard`).
//!
//! **Who owns an app.** Every replica holds a Lease `plumb-controller-member-<id>` in the
//! lease namespace; the live members are the Leases with a holder whose renewal has not
//! expired. An Application is owned by the member with the highest weight for it
//! (rendezvous, or highest-random-weight, hashing): the weight of member `m` for app `ns/name`
//! is the first 8 bytes, big-endian, of SHA-256(`m` NUL `ns` NUL `name`). SHA-256 is fixed and
//! named, so every replica (and anyone with `sha256sum`) computes the same owner, and a change
//! of membership moves only the apps of the member that came or went. A static split
//! (`--shard N --shards M`) is the same hashing over the members `0` … `M-1`.
//!
//! **Fencing.** A replica taking an app over records itself and an epoch (the previous epoch
//! plus one) in `status.controller`, with a write pinned to the resourceVersion it read: of two
//! replicas that believe they own an app, one claim lands. Every later write about the app goes
//! through `controller::shard::Fenced`, which re-reads the app, checks that record, and pins the write to
//! the resourceVersion it checked: a replica that lost the app fails its next write instead of
//! acting twice. And a replica whose own Lease has not been renewed within its renew deadline
//! (shorter than the Lease's duration) writes nothing at all (`controller::shard::Fence`): paused,
//! partitioned or slow, it stops before another can take its apps.

use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// The prefix of a member's Lease name; the rest is its id.
pub const MEMBER_LEASE_PREFIX: &str = "plumb-controller-member-";

/// `(namespace, name)` of an Application.
pub type AppKey = (String, String);

/// The weight of `member` for the app `namespace/name`.
pub fn weight(member: &str, namespace: &str, name: &str) -> u64 {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(member.as_bytes());
    ctx.update(&[0]);
    ctx.update(namespace.as_bytes());
    ctx.update(&[0]);
    ctx.update(name.as_bytes());
    let digest = ctx.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_be_bytes(first)
}

/// The member that owns `namespace/name` among `members` (ties, never seen in practice, go
/// to the smaller id); `None` without members.
pub fn owner<'a>(members: &'a [String], namespace: &str, name: &str) -> Option<&'a str> {
    members
        .iter()
        .map(|m| (weight(m, namespace, name), m))
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, m)| m.as_str())
}

/// The ids of the live members among `leases` (Lease objects of the lease namespace): a
/// member Lease with a holder, renewed less than its duration before `now`. Sorted.
pub fn live_members(leases: &[Value], now: SystemTime) -> Vec<String> {
    let mut out: Vec<String> = leases
        .iter()
        .filter_map(|l| {
            let id = l
                .pointer("/metadata/name")
                .and_then(Value::as_str)?
                .strip_prefix(MEMBER_LEASE_PREFIX)?;
            let spec = l.get("spec")?;
            let holder = spec.get("holderIdentity").and_then(Value::as_str)?;
            if holder.is_empty() {
                return None;
            }
            let renewed = crate::time::parse_rfc3339(spec.get("renewTime")?.as_str()?).ok()?;
            let valid = spec
                .get("leaseDurationSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            (renewed + Duration::from_secs(valid) > now).then(|| id.to_string())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How this replica shares the Applications with the others.
#[derive(Debug, Clone)]
pub enum Sharding {
    /// A static split (`--shard INDEX --shards COUNT`).
    Static { index: usize, count: usize },
    /// Members by Lease (`--shards auto`): this replica is `me`.
    Auto { me: String },
}

/// `status.controller` of an Application: its owner and epoch, if recorded.
pub fn claim_of(app: &Value) -> Option<(String, u64)> {
    let c = app.pointer("/status/controller")?;
    Some((
        c.get("owner")?.as_str()?.to_string(),
        c.get("epoch").and_then(Value::as_u64).unwrap_or(0),
    ))
}

/// `status.controller.instance`: which process of the owner made the claim.
pub fn claim_instance(app: &Value) -> Option<&str> {
    app.pointer("/status/controller/instance")
        .and_then(Value::as_str)
}

/// The status patch that makes the process `instance` of member `me` the app's owner (pinned to
/// the resourceVersion the app was read at), with its new epoch; `None` when that process owns
/// it already. A member's new process (a restart, or a second pod of the same name) claims again:
/// the old one's writes then fail on the epoch.
pub fn claim_patch(app: &Value, me: &str, instance: &str, now: SystemTime) -> Option<(Value, u64)> {
    let previous = claim_of(app);
    if previous.as_ref().is_some_and(|(o, _)| o == me) && claim_instance(app) == Some(instance) {
        return None;
    }
    let epoch = previous.map_or(1, |(_, e)| e + 1);
    let rv = app
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    Some((
        json!({"metadata": {"resourceVersion": rv},
            "status": {"controller": {"owner": me, "instance": instance, "epoch": epoch,
                "since": crate::time::format_rfc3339(now)}}}),
        epoch,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("plumb-{i}")).collect()
    }

    fn apps(n: usize) -> Vec<AppKey> {
        (0..n)
            .map(|i| (format!("team-{}", i % 7), format!("app-{i}")))
            .collect()
    }

    #[test]
    fn the_weight_is_sha256_of_member_namespace_and_name() {
        // printf 'a\0ns\0app' | sha256sum: the first 16 hex digits.
        let w = weight("a", "ns", "app");
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(b"a\0ns\0app");
        let d = ctx.finish();
        assert_eq!(w.to_be_bytes(), d.as_ref()[..8]);
    }

    #[test]
    fn ten_thousand_apps_over_three_members_are_balanced_within_five_percent() {
        let m = members(3);
        let mut counts = std::collections::BTreeMap::new();
        for (ns, name) in apps(10_000) {
            *counts
                .entry(owner(&m, &ns, &name).unwrap())
                .or_insert(0usize) += 1;
        }
        for (member, n) in &counts {
            let share = *n as f64 / 10_000.0;
            assert!(
                (share - 1.0 / 3.0).abs() < 0.05 / 3.0 * 3.0,
                "{member}: {n}"
            );
        }
        assert_eq!(counts.len(), 3);
    }

    #[test]
    fn a_member_leaving_moves_only_its_apps_and_coming_back_moves_a_third() {
        let three = members(3);
        let two: Vec<String> = three.iter().filter(|m| *m != "plumb-1").cloned().collect();
        let all = apps(3_000);
        let mut moved_back = 0;
        for (ns, name) in &all {
            let before = owner(&three, ns, name).unwrap();
            let after = owner(&two, ns, name).unwrap();
            if before != "plumb-1" {
                assert_eq!(before, after, "{ns}/{name} moved though its owner stayed");
            } else {
                moved_back += 1;
            }
        }
        // Coming back, it takes exactly the apps it had: about a third.
        let share = moved_back as f64 / all.len() as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.05, "{share}");
    }

    #[test]
    fn live_members_are_the_member_leases_held_and_unexpired() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |secs_ago: u64| crate::time::format_rfc3339(now - Duration::from_secs(secs_ago));
        let lease = |name: &str, holder: &str, renewed: String| {
            json!({"metadata": {"name": name},
                "spec": {"holderIdentity": holder, "renewTime": renewed, "leaseDurationSeconds": 15}})
        };
        let leases = [
            lease("plumb-controller-member-b", "b", at(3)),
            lease("plumb-controller-member-a", "a", at(14)),
            lease("plumb-controller-member-gone", "gone", at(16)),
            lease("plumb-controller-member-released", "", at(1)),
            lease("plumb-controller", "leader", at(1)),
        ];
        assert_eq!(live_members(&leases, now), ["a", "b"]);
    }

    #[test]
    fn a_claim_bumps_the_epoch_and_is_pinned() {
        let now = SystemTime::UNIX_EPOCH;
        let app = json!({"metadata": {"resourceVersion": "42"},
            "status": {"controller": {"owner": "a", "instance": "a-1", "epoch": 7}}});
        let (patch, epoch) = claim_patch(&app, "b", "b-1", now).expect("a claim");
        assert_eq!(epoch, 8);
        assert_eq!(patch["metadata"]["resourceVersion"], "42");
        assert_eq!(patch["status"]["controller"]["owner"], "b");
        assert!(claim_patch(&app, "a", "a-1", now).is_none());
        // The same member's new process claims again.
        assert_eq!(claim_patch(&app, "a", "a-2", now).map(|c| c.1), Some(8));
        let fresh = json!({"metadata": {"resourceVersion": "1"}});
        assert_eq!(claim_patch(&fresh, "a", "a-1", now).map(|c| c.1), Some(1));
    }
}
