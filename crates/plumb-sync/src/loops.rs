//! Sync-loop recognition: the same revision synced again and again, with the same fields
//! differing after each sync — something in the cluster (a mutating webhook, a policy, a
//! controller) rewrites what git declares, and self-heal fights it forever.
//!
//! Pure: no I/O, no clock (times are inputs). The controller keeps one [`Tracker`] per app
//! (in memory: a restarted controller starts counting again; the recognised loop itself is
//! kept in the Application's `status.syncLoop`) and feeds it every compare:
//!
//! - [`Tracker::synced`] after a sync, with the fields its compare-after found differing.
//!   A loop is recognised when the last [`LoopOptions::threshold`] syncs (default 3,
//!   `--loop-threshold`) were all of one revision (the controller's revision identity,
//!   [`crate::auto::revision_identity`]: every source's commit, a plain directory's content
//!   digest), lie within [`LoopOptions::window`]
//!   (10 minutes: three syncs at the self-heal backoff's cap of 300 s fit in it), and some
//!   fields differed after every one of them: those fields are the loop.
//! - [`Tracker::compared`] after any compare (a refresh or a sync): whether the app was
//!   Synced. [`Tracker::settled`] says when a recorded loop ends: once the app has been seen
//!   Synced continuously for [`LoopOptions::settle`] (the refresh interval).
//!
//! [`condition_message`] and [`guarded`] read and write the recorded loop
//! ([`plumb_core::argo::model::SyncLoop`]): the `SyncLoop` condition's message, and the
//! fields LoopGuard keeps a self-heal sync from re-applying.
//!
//! ```
//! use plumb_sync::loops::{LoopField, LoopOptions, Tracker};
//! use std::time::{Duration, UNIX_EPOCH};
//! let opts = LoopOptions::default();
//! let field = LoopField::new("apps", "Deployment", "prod", "api", "/spec/replicas");
//! let mut t = Tracker::default();
//! let mut found = None;
//! for i in 0..3 {
//!     let at = UNIX_EPOCH + Duration::from_secs(10 * i);
//!     found = t.synced("abc", at, [field.clone()].into(), &opts);
//! }
//! assert_eq!(found.expect("a loop").fields, [field].into());
//! ```

use plumb_core::ResourceKey;
use plumb_core::argo::model::{SyncLoop, SyncLoopField};
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, SystemTime};

/// The Application condition naming the loop.
pub const CONDITION: &str = "SyncLoop";
/// The sync option asking for LoopGuard on one app (a row of [`crate::options::TABLE`]).
pub const GUARD_OPTION_NAME: &str = "plumb.dev/LoopGuard";
/// [`GUARD_OPTION_NAME`] turned on.
pub const GUARD_OPTION: &str = "plumb.dev/LoopGuard=true";

/// How loops are recognised and guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopOptions {
    /// Syncs of one revision, each followed by the same fields differing, that make a loop
    /// (`--loop-threshold`; 0 turns recognition off).
    pub threshold: u32,
    /// Those syncs lie within this span.
    pub window: Duration,
    /// How long an app must stay Synced before its loop is cleared (the refresh interval).
    pub settle: Duration,
    /// `--loop-guard`: LoopGuard for every app, not only those with [`GUARD_OPTION`].
    pub guard_all: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            threshold: 3,
            window: Duration::from_secs(600),
            settle: Duration::from_secs(180),
            guard_all: false,
        }
    }
}

impl LoopOptions {
    pub fn enabled(&self) -> bool {
        self.threshold > 0
    }

    /// Whether LoopGuard applies to an app whose sync options (parsed) ask for it or not.
    pub fn guards(&self, asked: bool) -> bool {
        self.guard_all || asked
    }
}

/// A field that differs after a sync: the object and the JSON pointer into it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LoopField {
    pub key: ResourceKey,
    pub path: String,
}

impl LoopField {
    pub fn new(group: &str, kind: &str, namespace: &str, name: &str, path: &str) -> LoopField {
        LoopField {
            key: ResourceKey {
                group: group.into(),
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
            },
            path: path.into(),
        }
    }
}

/// A recognised loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognised {
    pub revision: String,
    /// The syncs counted (at least the threshold).
    pub syncs: u32,
    /// The first of them.
    pub since: SystemTime,
    /// The fields that differed after every one of them.
    pub fields: BTreeSet<LoopField>,
}

/// Syncs a tracker keeps (at least the threshold).
const MAX_SYNCS: usize = 32;

#[derive(Debug, Clone)]
struct SyncSeen {
    at: SystemTime,
    differing: BTreeSet<LoopField>,
}

/// One app's recent syncs and compares.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    revision: String,
    /// Syncs of `revision` that left fields differing, oldest first.
    syncs: VecDeque<SyncSeen>,
    /// Since when every compare has been Synced.
    synced_since: Option<SystemTime>,
}

impl Tracker {
    /// A sync of `revision` ended at `at`; its compare found `differing` (empty: Synced).
    /// Returns the loop when these syncs make one.
    pub fn synced(
        &mut self,
        revision: &str,
        at: SystemTime,
        differing: BTreeSet<LoopField>,
        opts: &LoopOptions,
    ) -> Option<Recognised> {
        self.compared(differing.is_empty(), at);
        if self.revision != revision || differing.is_empty() {
            self.revision = revision.to_string();
            self.syncs.clear();
        }
        if differing.is_empty() || !opts.enabled() {
            return None;
        }
        self.syncs.push_back(SyncSeen { at, differing });
        // Bounded: a loop without backoff keeps at most this many.
        while self.syncs.len() > MAX_SYNCS.max(opts.threshold as usize) {
            self.syncs.pop_front();
        }
        while self
            .syncs
            .front()
            .is_some_and(|s| at.duration_since(s.at).unwrap_or_default() > opts.window)
        {
            self.syncs.pop_front();
        }
        let threshold = opts.threshold as usize;
        if self.syncs.len() < threshold {
            return None;
        }
        let last = self.syncs.iter().skip(self.syncs.len() - threshold);
        let mut fields: Option<BTreeSet<LoopField>> = None;
        for s in last {
            fields = Some(match fields {
                None => s.differing.clone(),
                Some(f) => f.intersection(&s.differing).cloned().collect(),
            });
        }
        let fields = fields.filter(|f| !f.is_empty())?;
        // The run of syncs every one of which left these fields differing.
        let run: Vec<&SyncSeen> = self
            .syncs
            .iter()
            .rev()
            .take_while(|s| fields.is_subset(&s.differing))
            .collect();
        Some(Recognised {
            revision: revision.to_string(),
            syncs: u32::try_from(run.len()).unwrap_or(u32::MAX),
            since: run.last().map_or(at, |s| s.at),
            fields,
        })
    }

    /// A compare at `at` (a refresh's or a sync's) found the app Synced or not.
    pub fn compared(&mut self, synced: bool, at: SystemTime) {
        if !synced {
            self.synced_since = None;
        } else if self.synced_since.is_none() {
            self.synced_since = Some(at);
        }
    }

    /// Whether a recorded loop is over at `now`: every compare for [`LoopOptions::settle`]
    /// has been Synced.
    pub fn settled(&self, now: SystemTime, opts: &LoopOptions) -> bool {
        self.synced_since
            .is_some_and(|since| now.duration_since(since).unwrap_or_default() >= opts.settle)
    }
}

/// The fields of a recorded loop that LoopGuard keeps a sync of `revision` from re-applying
/// (none when the loop is of another revision). Both are the controller's revision identity
/// ([`crate::auto::revision_identity`]), not the bare commit: a plain directory has none, and
/// one edited to stop the fight is another revision, guarded no more.
pub fn guarded(recorded: Option<&SyncLoop>, revision: &str) -> BTreeSet<LoopField> {
    recorded
        .filter(|l| l.revision == revision)
        .map(|l| {
            l.fields
                .iter()
                .map(|f| LoopField::new(&f.group, &f.kind, &f.namespace, &f.name, &f.path))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether LoopGuard leaves nothing for a sync to do: every difference is a guarded field.
pub fn only_guarded(differing: &BTreeSet<LoopField>, guarded: &BTreeSet<LoopField>) -> bool {
    !differing.is_empty() && differing.is_subset(guarded)
}

/// A loop's revision (the identity the controller keys on: a commit, several sources'
/// commits joined by `,`, a plain directory's `sha256:` content digest, or a commit and a
/// digest with a space between) shortened for a message: 7 characters of each commit and of
/// each digest's hex.
pub fn short_revision(revision: &str) -> String {
    let short = |s: &str| s.get(..7).unwrap_or(s).to_string();
    revision
        .split(' ')
        .map(|part| match part.strip_prefix("sha256:") {
            Some(hex) => format!("sha256:{}", short(hex)),
            None => part.split(',').map(short).collect::<Vec<_>>().join(","),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `SyncLoop` condition's message: the loop, then per field the object, the path, who
/// rewrites it, where git declares it and the first fix.
pub fn condition_message(l: &SyncLoop) -> String {
    let short = short_revision(&l.revision);
    let mut out = format!(
        "revision {short} synced {} times and the same fields differ after each sync: ",
        l.syncs
    );
    let fields: Vec<String> = l.fields.iter().map(field_line).collect();
    out.push_str(&fields.join("; and "));
    out
}

fn field_line(f: &SyncLoopField) -> String {
    let mut s = format!(
        "{}/{} {}/{} {}: rewritten by {}",
        f.group, f.kind, f.namespace, f.name, f.path, f.rewritten_by
    );
    if !f.declared_at.is_empty() {
        s.push_str(&format!("; declared at {}", f.declared_at));
    }
    if !f.fix.is_empty() {
        s.push_str(&format!("; fix: {}", f.fix));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    fn pull() -> LoopField {
        LoopField::new(
            "apps",
            "Deployment",
            "pay-prod",
            "payments-api",
            "/spec/template/spec/containers/0/imagePullPolicy",
        )
    }

    fn selector() -> LoopField {
        LoopField::new(
            "",
            "Service",
            "pay-prod",
            "payments-api",
            "/spec/selector/app",
        )
    }

    fn set(f: &[LoopField]) -> BTreeSet<LoopField> {
        f.iter().cloned().collect()
    }

    /// Feeds syncs `(revision, second, differing)`; the recognitions, one per sync.
    fn run(opts: &LoopOptions, syncs: &[(&str, u64, &[LoopField])]) -> Vec<Option<Recognised>> {
        let mut t = Tracker::default();
        syncs
            .iter()
            .map(|(rev, s, d)| t.synced(rev, at(*s), set(d), opts))
            .collect()
    }

    #[test]
    fn the_same_fields_after_three_syncs_of_one_revision_are_a_loop() {
        let opts = LoopOptions::default();
        let out = run(
            &opts,
            &[
                ("a", 0, &[pull()]),
                ("a", 0, &[pull(), selector()]),
                ("a", 2, &[pull()]),
                ("a", 8, &[pull()]),
            ],
        );
        assert_eq!(out[0], None);
        assert_eq!(out[1], None);
        let third = out[2].clone().expect("recognised at the threshold");
        assert_eq!(
            third.fields,
            set(&[pull()]),
            "only what differed every time"
        );
        assert_eq!((third.syncs, third.since), (3, at(0)));
        assert_eq!(out[3].clone().map(|r| r.syncs), Some(4));
    }

    #[test]
    fn no_loop_without_the_same_fields_the_same_revision_or_within_the_window() {
        let opts = LoopOptions::default();
        // Different fields each time: drift, not a fight.
        let out = run(
            &opts,
            &[
                ("a", 0, &[pull()]),
                ("a", 5, &[selector()]),
                ("a", 9, &[pull()]),
            ],
        );
        assert!(out.iter().all(Option::is_none), "{out:?}");
        // A new revision starts the count again.
        let out = run(
            &opts,
            &[
                ("a", 0, &[pull()]),
                ("b", 5, &[pull()]),
                ("b", 9, &[pull()]),
            ],
        );
        assert!(out.iter().all(Option::is_none), "{out:?}");
        // A sync that ends Synced ends the run.
        let out = run(
            &opts,
            &[
                ("a", 0, &[pull()]),
                ("a", 5, &[]),
                ("a", 9, &[pull()]),
                ("a", 12, &[pull()]),
            ],
        );
        assert!(out.iter().all(Option::is_none), "{out:?}");
        // Further apart than the window.
        let out = run(
            &opts,
            &[
                ("a", 0, &[pull()]),
                ("a", 400, &[pull()]),
                ("a", 800, &[pull()]),
            ],
        );
        assert!(out.iter().all(Option::is_none), "{out:?}");
        // Recognition off.
        let off = LoopOptions {
            threshold: 0,
            ..opts
        };
        let pulls: &[LoopField] = &[pull()];
        let out = run(&off, &[("a", 0, pulls); 5]);
        assert!(out.iter().all(Option::is_none), "{out:?}");
        // A threshold of 2.
        let two = LoopOptions {
            threshold: 2,
            ..opts
        };
        let out = run(&two, &[("a", 0, &[pull()]), ("a", 2, &[pull()])]);
        assert!(out[1].is_some());
    }

    #[test]
    fn a_loop_settles_after_staying_synced_for_the_refresh_interval() {
        let opts = LoopOptions {
            settle: Duration::from_secs(30),
            ..LoopOptions::default()
        };
        let mut t = Tracker::default();
        for s in [0, 2, 8] {
            t.synced("a", at(s), set(&[pull()]), &opts);
        }
        assert!(!t.settled(at(100), &opts));
        // The fix: a sync of the new revision is Synced, and stays so.
        t.synced("b", at(100), BTreeSet::new(), &opts);
        t.compared(true, at(110));
        assert!(!t.settled(at(129), &opts));
        // OutOfSync meanwhile starts the wait again.
        t.compared(false, at(120));
        t.compared(true, at(125));
        assert!(!t.settled(at(150), &opts));
        assert!(t.settled(at(155), &opts));
    }

    #[test]
    fn a_short_revision_keeps_seven_characters_of_each_commit_and_digest() {
        assert_eq!(short_revision("b5e2be1aa"), "b5e2be1");
        assert_eq!(short_revision("abc"), "abc");
        assert_eq!(short_revision("sha256:0123456789ab"), "sha256:0123456");
        assert_eq!(short_revision("aaaaaaaaa,bbbbbbbbb"), "aaaaaaa,bbbbbbb");
        assert_eq!(
            short_revision(",bbbbbbbbb sha256:0123456789ab"),
            ",bbbbbbb sha256:0123456"
        );
        assert_eq!(short_revision(""), "");
    }

    #[test]
    fn guard_options_and_guarded_fields() {
        let opts = LoopOptions::default();
        let parsed = |o: &[&str]| crate::options::SyncOptions::parse(o).loop_guard;
        assert!(!opts.guards(parsed(&["ServerSideApply=true"])));
        assert!(opts.guards(parsed(&[GUARD_OPTION])));
        assert!(!opts.guards(parsed(&["plumb.dev/LoopGuard=false"])));
        let all = LoopOptions {
            guard_all: true,
            ..opts
        };
        assert!(all.guards(false));

        let recorded = SyncLoop {
            revision: "abc".into(),
            syncs: 3,
            fields: vec![SyncLoopField {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: "pay-prod".into(),
                name: "payments-api".into(),
                path: "/spec/template/spec/containers/0/imagePullPolicy".into(),
                rewritten_by: "mutating webhook platform-policy-mutate".into(),
                declared_at: "overlays/prod/pull-policy.yaml:10".into(),
                fix: "stop declaring it".into(),
                ..SyncLoopField::default()
            }],
            ..SyncLoop::default()
        };
        let g = guarded(Some(&recorded), "abc");
        assert_eq!(g, set(&[pull()]));
        assert!(
            guarded(Some(&recorded), "def").is_empty(),
            "another revision"
        );
        assert!(only_guarded(&set(&[pull()]), &g));
        assert!(!only_guarded(&set(&[pull(), selector()]), &g));
        assert!(!only_guarded(&BTreeSet::new(), &g));
        assert_eq!(
            condition_message(&recorded),
            "revision abc synced 3 times and the same fields differ after each sync: \
             apps/Deployment pay-prod/payments-api /spec/template/spec/containers/0/imagePullPolicy: \
             rewritten by mutating webhook platform-policy-mutate; declared at \
             overlays/prod/pull-policy.yaml:10; fix: stop declaring it"
        );
    }
}
