//! Sharding the Applications across controller replicas, coordinated through Kubernetes
//! only.
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
//! through [`fenced::Fenced`], which re-reads the app, checks that record, and pins the write to
//! the resourceVersion it checked: a replica that lost the app fails its next write instead of
//! acting twice. And a replica whose own Lease has not been renewed within its renew deadline
//! (shorter than the Lease's duration) writes nothing at all ([`Fence::acting`]): paused,
//! partitioned or slow, it stops before another can take its apps.

pub mod fenced;

use serde_json::{Value, json};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

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

/// A replica's view of the shards: who the members are, now.
#[derive(Debug)]
pub struct ShardView {
    sharding: Sharding,
    /// The members, sorted; receivers see each change.
    members: tokio::sync::watch::Sender<Vec<String>>,
    /// Reassignments seen (apps whose owner changed with a change of members).
    reassignments: std::sync::atomic::AtomicU64,
}

impl ShardView {
    pub fn new(sharding: Sharding) -> Arc<ShardView> {
        let members = match &sharding {
            Sharding::Static { count, .. } => (0..*count).map(|i| i.to_string()).collect(),
            Sharding::Auto { me } => vec![me.clone()],
        };
        Arc::new(ShardView {
            sharding,
            members: tokio::sync::watch::Sender::new(members),
            reassignments: Default::default(),
        })
    }

    /// Whether the split is static (`--shard N --shards M`: no member Leases).
    pub fn is_static(&self) -> bool {
        matches!(self.sharding, Sharding::Static { .. })
    }

    /// This replica's member id.
    pub fn me(&self) -> String {
        match &self.sharding {
            Sharding::Static { index, .. } => index.to_string(),
            Sharding::Auto { me } => me.clone(),
        }
    }

    /// The live members, sorted.
    pub fn members(&self) -> Vec<String> {
        self.members.borrow().clone()
    }

    /// The members' changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Vec<String>> {
        self.members.subscribe()
    }

    /// Sets the live members (always including this replica, which is live while it acts);
    /// whether they changed.
    pub fn set_members(&self, mut members: Vec<String>) -> bool {
        let me = self.me();
        if !members.contains(&me) {
            members.push(me);
        }
        members.sort();
        members.dedup();
        self.members.send_if_modified(|m| {
            if *m == members {
                return false;
            }
            *m = members;
            true
        })
    }

    /// Tells the controller to look at every app again though the members seem the same:
    /// this replica's Lease lapsed (it was paused or cut off), so the others may have taken
    /// its apps meanwhile, and it must claim back what is its own.
    pub fn rejoined(&self) {
        self.members.send_modify(|_| {});
    }

    /// The owner of an app, among the current members.
    pub fn owner_of(&self, key: &AppKey) -> Option<String> {
        owner(&self.members.borrow(), &key.0, &key.1).map(str::to_string)
    }

    /// Whether this replica owns the app.
    pub fn owns(&self, key: &AppKey) -> bool {
        self.owner_of(key).is_some_and(|o| o == self.me())
    }

    /// Counts `n` apps that changed owner.
    pub fn reassigned(&self, n: u64) {
        self.reassignments
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn reassignments(&self) -> u64 {
        self.reassignments
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether this replica may act: its Lease was renewed recently enough. A replica stops a
/// margin before its Lease could expire, so it never acts after another may have taken its
/// apps.
#[derive(Debug)]
pub struct Fence {
    /// The member id written in `status.controller.owner`.
    pub me: String,
    until: RwLock<Option<Instant>>,
}

impl Fence {
    pub fn new(me: String) -> Arc<Fence> {
        Arc::new(Fence {
            me,
            until: RwLock::new(None),
        })
    }

    /// The Lease was renewed at `at` (a time taken before the renewal request was sent);
    /// acting is allowed until `at + deadline`.
    pub fn renewed(&self, at: Instant, deadline: Duration) {
        if let Ok(mut u) = self.until.write() {
            *u = Some(at + deadline);
        }
    }

    /// A fence that never expires (a static split has no Lease of its own).
    pub fn always(&self) {
        if let Ok(mut u) = self.until.write() {
            *u = Some(Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        }
    }

    /// Whether writes are allowed now.
    pub fn acting(&self) -> bool {
        self.until
            .read()
            .ok()
            .and_then(|u| *u)
            .is_some_and(|u| Instant::now() < u)
    }
}

/// `status.controller` of an Application: its owner and epoch, if recorded.
pub fn claim_of(app: &Value) -> Option<(String, u64)> {
    let c = app.pointer("/status/controller")?;
    Some((
        c.get("owner")?.as_str()?.to_string(),
        c.get("epoch").and_then(Value::as_u64).unwrap_or(0),
    ))
}

/// The status patch that makes `me` the app's owner (pinned to the resourceVersion the app was
/// read at), with its new epoch; `None` when `me` owns it already.
pub fn claim_patch(app: &Value, me: &str, now: SystemTime) -> Option<(Value, u64)> {
    let previous = claim_of(app);
    if previous.as_ref().is_some_and(|(o, _)| o == me) {
        return None;
    }
    let epoch = previous.map_or(1, |(_, e)| e + 1);
    let rv = app
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    Some((
        json!({"metadata": {"resourceVersion": rv},
            "status": {"controller": {"owner": me, "epoch": epoch,
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
            "status": {"controller": {"owner": "a", "epoch": 7}}});
        let (patch, epoch) = claim_patch(&app, "b", now).expect("a claim");
        assert_eq!(epoch, 8);
        assert_eq!(patch["metadata"]["resourceVersion"], "42");
        assert_eq!(patch["status"]["controller"]["owner"], "b");
        assert!(claim_patch(&app, "a", now).is_none());
        let fresh = json!({"metadata": {"resourceVersion": "1"}});
        assert_eq!(claim_patch(&fresh, "a", now).map(|c| c.1), Some(1));
    }

    #[test]
    fn a_static_split_is_the_same_hashing_over_numbered_members() {
        let view = ShardView::new(Sharding::Static { index: 1, count: 3 });
        let owned = apps(3_000).iter().filter(|k| view.owns(k)).count();
        assert!((owned as f64 / 3_000.0 - 1.0 / 3.0).abs() < 0.05, "{owned}");
        assert_eq!(view.members(), ["0", "1", "2"]);
    }

    #[test]
    fn a_fence_stops_acting_at_its_deadline() {
        let f = Fence::new("a".into());
        assert!(!f.acting(), "not before the first renewal");
        f.renewed(Instant::now(), Duration::from_secs(60));
        assert!(f.acting());
        f.renewed(
            Instant::now() - Duration::from_secs(61),
            Duration::from_secs(60),
        );
        assert!(!f.acting());
    }
}
