//! Table-driven tests of the plan, sync status, automated decisions and policy reading.
//! Fixtures mirror gitops-engine's `sync_tasks_test.go` / `sync_context_test.go` and Argo CD's
//! `appcontroller_test.go` where those exist.

use crate::auto::{AppState, Decision, NoSync, SyncReason, automated_decision};
use crate::backoff::RetryPolicy;
use crate::history::{HistoryEntry, InitiatedBy, append_history};
use crate::options::{ApplyMode, DestinationNamespace, SyncOptions};
use crate::plan::{
    Action, KIND_ORDER, ObjectMeta, Phase, PlanError, PlanResource, SkipReason, Status, StepSource,
    kind_rank, plan,
};
use crate::policy::{SyncPolicy, revision_history_limit};
use crate::status::{SyncStatusCode, only_pruning_needed, sync_status};
use plumb_core::argo::AppSource;
use plumb_core::{GroupKind, ResourceKey};
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WAVE: &str = "argocd.argoproj.io/sync-wave";
const HOOK: &str = "argocd.argoproj.io/hook";
const OPTS: &str = "argocd.argoproj.io/sync-options";
const CMP: &str = "argocd.argoproj.io/compare-options";

/// The key of `group`/`kind` `namespace`/`name` (the unit tests' shorthand).
pub(crate) fn key(group: &str, kind: &str, namespace: &str, name: &str) -> ResourceKey {
    ResourceKey {
        group: group.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// A resource builder: `r("Pod", "a")` is a Missing core Pod in namespace `ns`.
#[derive(Clone)]
struct R(PlanResource);

fn r(kind: &str, name: &str) -> R {
    R(PlanResource::new(
        key("", kind, "ns", name),
        Status::Missing,
    ))
}

impl R {
    fn group(mut self, g: &str) -> R {
        self.0.key.group = g.into();
        self
    }
    fn ns(mut self, ns: &str) -> R {
        self.0.key.namespace = ns.into();
        self
    }
    fn status(mut self, s: Status) -> R {
        let ann = self.0.obj().cloned().unwrap_or_default();
        self.0.status = s;
        self.0.target = (s != Status::Extra).then(|| ann.clone());
        self.0.live = (s != Status::Missing).then_some(ann);
        self
    }
    fn extra(self) -> R {
        self.status(Status::Extra)
    }
    /// Adds an annotation on both sides.
    fn ann(mut self, k: &str, v: &str) -> R {
        for side in [&mut self.0.target, &mut self.0.live].into_iter().flatten() {
            side.annotations.insert(k.into(), v.into());
        }
        self
    }
    fn wave(self, w: i64) -> R {
        self.ann(WAVE, &w.to_string())
    }
    fn defines(mut self, group: &str, kind: &str) -> R {
        for side in [&mut self.0.target, &mut self.0.live].into_iter().flatten() {
            side.defines = Some(GroupKind::new(group, kind));
        }
        self
    }
}

fn rs(list: &[R]) -> Vec<PlanResource> {
    list.iter().map(|r| r.0.clone()).collect()
}

fn names(p: &crate::plan::Plan) -> Vec<String> {
    p.steps.iter().map(|s| s.key.name.clone()).collect()
}

fn plan_default(list: &[R]) -> crate::plan::Plan {
    plan(&rs(list), &SyncOptions::default(), false, false, true).unwrap()
}

// ---------------------------------------------------------------- ordering

#[test]
fn kind_order_is_gitops_engines_and_unknown_kinds_go_last() {
    assert_eq!(kind_rank("Namespace"), -35);
    assert_eq!(kind_rank("APIService"), -1);
    assert_eq!(kind_rank("MyCRD"), 0);
    // Every known kind, fed in reverse, comes out in kindOrder; unknown kinds after them.
    let mut list: Vec<R> = KIND_ORDER.iter().rev().map(|k| r(k, "x")).collect();
    list.insert(3, r("Widget", "x"));
    list.push(r("Application", "x").group("argoproj.io"));
    let p = plan_default(&list);
    let kinds: Vec<&str> = p.steps.iter().map(|s| s.key.kind.as_str()).collect();
    assert_eq!(&kinds[..35], &KIND_ORDER[..]);
    let mut unknown = kinds[35..].to_vec();
    unknown.sort_unstable();
    assert_eq!(unknown, ["Application", "Widget"]);
}

#[test]
fn sorts_by_phase_then_wave_then_kind_then_name() {
    // gitops-engine TestSortSyncTask, with names to identify the tasks.
    let list = [
        r("Pod", "pod"),
        r("Service", "svc"),
        r("PersistentVolume", "pv"),
        r("Job", "syncfail").ann(HOOK, "SyncFail"),
        r("Widget", "wave1").wave(1),
        r("Widget", "b"),
        r("Widget", "a"),
        r("Widget", "wave-1").wave(-1),
        r("Job", "presync").ann(HOOK, "PreSync"),
        r("Job", "postsync").ann(HOOK, "PostSync"),
        r("ConfigMap", "cm"),
    ];
    let p = plan_default(&list);
    assert_eq!(
        names(&p),
        [
            "presync", "wave-1", "cm", "pv", "svc", "pod", "a", "b", "wave1", "postsync",
            "syncfail"
        ]
    );
    let phases: Vec<Phase> = p.steps.iter().map(|s| s.phase).collect();
    assert_eq!(phases[0], Phase::PreSync);
    assert_eq!(phases[9], Phase::PostSync);
    assert_eq!(phases[10], Phase::SyncFail);
}

#[test]
fn waves_are_integers_may_be_negative_and_default_to_zero() {
    let table: &[(&str, i64)] = &[
        ("-5", -5),
        ("0", 0),
        ("3", 3),
        ("+2", 2),
        ("abc", 0),
        (" 1", 0), // Atoi does not trim
        ("1.5", 0),
    ];
    for (text, wave) in table {
        let p = plan_default(&[r("ConfigMap", "c").ann(WAVE, text)]);
        assert_eq!(p.steps[0].wave, *wave, "sync-wave {text:?}");
    }
    // Helm's hook weight counts when sync-wave is absent or not an integer.
    let p = plan_default(&[r("ConfigMap", "c").ann("helm.sh/hook-weight", "7")]);
    assert_eq!(p.steps[0].wave, 7);
    let p = plan_default(&[r("ConfigMap", "c").ann("helm.sh/hook-weight", "7").wave(-2)]);
    assert_eq!(p.steps[0].wave, -2);

    let p = plan_default(&[
        r("Deployment", "late").wave(10),
        r("Namespace", "z").wave(-5),
        r("Deployment", "early").wave(-10),
        r("ConfigMap", "mid"),
        r("Deployment", "mid"),
    ]);
    assert_eq!(names(&p), ["early", "z", "mid", "mid", "late"]);
    assert_eq!(
        p.steps[2].key.kind, "ConfigMap",
        "same wave: ConfigMap before Deployment"
    );
}

#[test]
fn hooks_run_in_their_phases_and_skip_hooks_never_run() {
    let list = [
        r("Job", "both").ann(HOOK, "PreSync, PostSync"),
        r("Job", "helm-pre").ann("helm.sh/hook", "pre-install,pre-upgrade"),
        r("Job", "helm-post").ann("helm.sh/hook", "post-upgrade"),
        r("CustomResourceDefinition", "helm-crd")
            .group("apiextensions.k8s.io")
            .ann("helm.sh/hook", "crd-install"),
        r("ConfigMap", "skipped").ann(HOOK, "Skip"),
        r("ConfigMap", "unknown-type").ann(HOOK, "PreDelete"),
        r("Job", "argo-wins")
            .ann(HOOK, "Sync")
            .ann("helm.sh/hook", "pre-install"),
        r("Job", "old-hook").extra().ann(HOOK, "PreSync"),
    ];
    let p = plan_default(&list);
    let got: Vec<(String, Phase, Action, StepSource)> = p
        .steps
        .iter()
        .map(|s| (s.key.name.clone(), s.phase, s.action, s.source))
        .collect();
    let want = [
        ("both", Phase::PreSync, Action::Apply, StepSource::Hook),
        ("helm-pre", Phase::PreSync, Action::Apply, StepSource::Hook),
        (
            "skipped",
            Phase::Sync,
            Action::Skip(SkipReason::HookSkip),
            StepSource::Resource,
        ),
        ("helm-crd", Phase::Sync, Action::Apply, StepSource::Resource),
        ("argo-wins", Phase::Sync, Action::Apply, StepSource::Hook),
        ("both", Phase::PostSync, Action::Apply, StepSource::Hook),
        (
            "helm-post",
            Phase::PostSync,
            Action::Apply,
            StepSource::Hook,
        ),
    ];
    let want: Vec<(String, Phase, Action, StepSource)> = want
        .iter()
        .map(|(n, ph, a, s)| (n.to_string(), *ph, *a, *s))
        .collect();
    assert_eq!(
        got, want,
        "a PreDelete-only hook and a live-only hook get no step"
    );
    assert!(!p.steps[2].is_task());

    // A live-only `Skip` resource is never pruned and takes no part in prune-wave reversal.
    let p = plan_default(&[
        r("ConfigMap", "a").extra().wave(1),
        r("ConfigMap", "b").extra().wave(2),
        r("ConfigMap", "kept").extra().wave(9).ann(HOOK, "Skip"),
    ]);
    let got: Vec<(&str, i64, Action)> = p
        .steps
        .iter()
        .map(|s| (s.key.name.as_str(), s.wave, s.action))
        .collect();
    assert_eq!(
        got,
        [
            ("b", 1, Action::Prune),
            ("a", 2, Action::Prune),
            ("kept", 9, Action::Skip(SkipReason::HookSkip))
        ]
    );
}

#[test]
fn namespaces_move_before_the_first_object_in_them() {
    // gitops-engine TestSyncTasksSort_NamespaceAndObjectInNamespace.
    let list = [
        r("Job", "mySyncHookJob1")
            .ns("myNamespace1")
            .ann(HOOK, "PreSync"),
        r("Job", "mySyncHookJob2")
            .ns("myNamespace2")
            .ann(HOOK, "PreSync"),
        r("Namespace", "myNamespace1").ns("").wave(1),
        r("Namespace", "myNamespace2").ns("").wave(2),
    ];
    let p = plan_default(&list);
    assert_eq!(
        names(&p),
        [
            "myNamespace1",
            "mySyncHookJob1",
            "myNamespace2",
            "mySyncHookJob2"
        ]
    );
    for s in &p.steps {
        assert_eq!((s.phase, s.wave), (Phase::PreSync, 0), "{}", s.key.name);
    }
    // A namespace already first stays where it is, with its own wave.
    let p = plan_default(&[
        r("ConfigMap", "c").ns("a"),
        r("Namespace", "a").ns("").wave(-1),
    ]);
    assert_eq!(names(&p), ["a", "c"]);
    assert_eq!(p.steps[0].wave, -1);
}

#[test]
fn cluster_scoped_objects_count_as_in_the_destination_namespace() {
    // gitops-engine sets the destination namespace on every desired object without one
    // (cluster-scoped included) before ordering, so a declared destination Namespace moves
    // before a ClusterRole of an earlier wave.
    let list = [
        r("ClusterRole", "reader")
            .group("rbac.authorization.k8s.io")
            .ns("")
            .wave(-1),
        r("Namespace", "prod").ns(""),
    ];
    let opts = SyncOptions {
        destination_namespace: Some(DestinationNamespace {
            name: "prod".into(),
            exists: true,
        }),
        ..SyncOptions::default()
    };
    let p = plan(&rs(&list), &opts, false, false, true).unwrap();
    assert_eq!(names(&p), ["prod", "reader"]);
    assert_eq!(p.steps[0].wave, -1);
    // Without a destination namespace the ClusterRole refers to no namespace.
    assert_eq!(names(&plan_default(&list)), ["reader", "prod"]);
}

#[test]
fn crds_move_before_their_custom_resources() {
    // gitops-engine TestSyncTasksSort_CRDAndCR: the CR is a PreSync hook, the CRD a resource.
    let list = [
        r("Workflow", "wf")
            .group("argoproj.io")
            .ann(HOOK, "PreSync"),
        r("CustomResourceDefinition", "workflows.argoproj.io")
            .group("apiextensions.k8s.io")
            .ns("")
            .defines("argoproj.io", "Workflow"),
    ];
    let p = plan_default(&list);
    assert_eq!(names(&p), ["workflows.argoproj.io", "wf"]);
    assert_eq!(p.steps[0].phase, Phase::PreSync);
    // Same group/kind name in another group is not its custom resource.
    let list = [
        r("Workflow", "wf").group("example.com").wave(-1),
        r("CustomResourceDefinition", "workflows.argoproj.io")
            .group("apiextensions.k8s.io")
            .ns("")
            .defines("argoproj.io", "Workflow"),
    ];
    assert_eq!(names(&plan_default(&list)), ["wf", "workflows.argoproj.io"]);
}

// ---------------------------------------------------------------- prune order

/// gitops-engine TestWaveReorderingOfPruneTasks: (name, declared wave, desired?, live?) →
/// expected wave.
#[test]
fn prune_waves_are_reversed_and_prune_last_goes_after_the_last_wave() {
    struct Case {
        name: &'static str,
        prune_last: bool,
        // (name, wave, status, PruneLast annotation)
        objects: &'static [(&'static str, i64, Status, bool)],
        expected: &'static [(&'static str, i64)],
    }
    use Status::{Equal as E, Extra as X, Missing as M};
    let cases = [
        Case {
            name: "sameWave_allPruneTasks",
            prune_last: false,
            objects: &[
                ("ns", 0, X, false),
                ("pod-1", 0, X, false),
                ("pod-2", 0, X, false),
            ],
            expected: &[("ns", 0), ("pod-1", 0), ("pod-2", 0)],
        },
        Case {
            name: "differentWave_noPruneTasks",
            prune_last: false,
            objects: &[
                ("ns", 0, M, false),
                ("pod-1", 1, M, false),
                ("pod-2", 2, M, false),
            ],
            expected: &[("ns", 0), ("pod-1", 1), ("pod-2", 2)],
        },
        Case {
            name: "differentWave_allPruneTasks",
            prune_last: false,
            objects: &[
                ("ns", 0, X, false),
                ("pod-1", 1, X, false),
                ("pod-2", 2, X, false),
                ("pod-3", 3, X, false),
                ("pod-4", 4, X, false),
            ],
            expected: &[
                ("ns", 4),
                ("pod-1", 3),
                ("pod-2", 2),
                ("pod-3", 1),
                ("pod-4", 0),
            ],
        },
        Case {
            name: "differentWave_mixedTasks",
            prune_last: false,
            objects: &[
                ("ns", 0, E, false),
                ("pod-1", 1, X, false),
                ("pod-2", 2, M, false),
                ("pod-3", 3, X, false),
                ("pod-4", 4, X, false),
            ],
            expected: &[
                ("ns", 0),
                ("pod-1", 4),
                ("pod-2", 2),
                ("pod-3", 3),
                ("pod-4", 1),
            ],
        },
        Case {
            name: "pruneLast",
            prune_last: true,
            objects: &[
                ("ns", 0, E, false),
                ("pod-1", 1, X, false),
                ("pod-2", 2, X, false),
                ("pod-3", 3, X, false),
                ("pod-4", 4, X, false),
            ],
            expected: &[
                ("ns", 0),
                ("pod-1", 5),
                ("pod-2", 5),
                ("pod-3", 5),
                ("pod-4", 5),
            ],
        },
        Case {
            name: "pruneLastIndividualResources",
            prune_last: false,
            objects: &[
                ("ns", 0, E, false),
                ("pod-1", 1, X, false),
                ("pod-2", 2, X, true),
                ("pod-3", 3, X, false),
                ("pod-4", 4, X, false),
            ],
            expected: &[
                ("ns", 0),
                ("pod-1", 4),
                ("pod-2", 5),
                ("pod-3", 2),
                ("pod-4", 1),
            ],
        },
        Case {
            name: "mixedTasks",
            prune_last: false,
            objects: &[
                ("ns", -1, E, false),
                ("pod-1", 1, X, false),
                ("pod-2", 3, M, false),
                ("pod-3", 3, X, false),
                ("pod-4", 3, X, false),
                ("pod-5", 4, X, false),
                ("pod-6", 5, E, false),
                ("pod-7", 5, X, false),
            ],
            expected: &[
                ("ns", -1),
                ("pod-1", 5),
                ("pod-2", 3),
                ("pod-3", 4),
                ("pod-4", 4),
                ("pod-5", 3),
                ("pod-6", 5),
                ("pod-7", 1),
            ],
        },
    ];
    for c in cases {
        let list: Vec<R> = c
            .objects
            .iter()
            .map(|(name, wave, status, last)| {
                let kind = if *name == "ns" { "Namespace" } else { "Pod" };
                let res = r(kind, name).status(*status).wave(*wave);
                if *last {
                    res.ann(OPTS, "PruneLast=true")
                } else {
                    res
                }
            })
            .collect();
        let opts = SyncOptions {
            prune_last: c.prune_last,
            ..SyncOptions::default()
        };
        let p = plan(&rs(&list), &opts, false, false, true).unwrap();
        for (name, wave) in c.expected {
            let step = p.steps.iter().find(|s| s.key.name == *name).unwrap();
            assert_eq!(step.wave, *wave, "{}: {name}", c.name);
        }
    }
}

#[test]
fn prunes_run_in_reverse_creation_order() {
    // gitops-engine TestWaitForCleanUpBeforeNextWave: prune order pod-3, pod-2, pod-1.
    let list = [
        r("Pod", "pod-1").extra().wave(1),
        r("Pod", "pod-2").extra().wave(2),
        r("Pod", "pod-3").extra().wave(3),
    ];
    let p = plan_default(&list);
    assert_eq!(names(&p), ["pod-3", "pod-2", "pod-1"]);
    assert!(p.steps.iter().all(|s| s.action == Action::Prune));
    assert_eq!(p.batches().len(), 3, "one wave at a time");
}

#[test]
fn prune_needs_prune_enabled_and_honours_prune_options() {
    struct Case {
        what: &'static str,
        prune_enabled: bool,
        app: &'static [&'static str],
        annotation: Option<&'static str>,
        confirmed: bool,
        action: Action,
        confirm: bool,
    }
    let cases = [
        Case {
            what: "prune on",
            prune_enabled: true,
            app: &[],
            annotation: None,
            confirmed: false,
            action: Action::Prune,
            confirm: false,
        },
        Case {
            what: "prune off",
            prune_enabled: false,
            app: &[],
            annotation: None,
            confirmed: false,
            action: Action::Skip(SkipReason::PruneDisabled),
            confirm: false,
        },
        Case {
            what: "prune off wins over Prune=false",
            prune_enabled: false,
            app: &[],
            annotation: Some("Prune=false"),
            confirmed: false,
            action: Action::Skip(SkipReason::PruneDisabled),
            confirm: false,
        },
        Case {
            what: "Prune=false",
            prune_enabled: true,
            app: &[],
            annotation: Some("Prune=false"),
            confirmed: false,
            action: Action::Skip(SkipReason::NoPrune),
            confirm: false,
        },
        Case {
            what: "app Prune=false",
            prune_enabled: true,
            app: &["Prune=false"],
            annotation: None,
            confirmed: false,
            action: Action::Skip(SkipReason::NoPrune),
            confirm: false,
        },
        Case {
            what: "resource Prune=true over app Prune=false",
            prune_enabled: true,
            app: &["Prune=false"],
            annotation: Some("Prune=true"),
            confirmed: false,
            action: Action::Prune,
            confirm: false,
        },
        Case {
            what: "Prune=confirm waits",
            prune_enabled: true,
            app: &[],
            annotation: Some("Prune=confirm"),
            confirmed: false,
            action: Action::Prune,
            confirm: true,
        },
        Case {
            what: "Prune=confirm confirmed",
            prune_enabled: true,
            app: &[],
            annotation: Some("Prune=confirm"),
            confirmed: true,
            action: Action::Prune,
            confirm: false,
        },
    ];
    for c in cases {
        let mut res = r("ConfigMap", "old").extra();
        if let Some(a) = c.annotation {
            res = res.ann(OPTS, a);
        }
        let opts = SyncOptions {
            prune_confirmed: c.confirmed,
            ..SyncOptions::parse(c.app)
        };
        let p = plan(
            &rs(&[res, r("ConfigMap", "kept")]),
            &opts,
            false,
            false,
            c.prune_enabled,
        )
        .unwrap();
        let step = p.steps.iter().find(|s| s.key.name == "old").unwrap();
        assert_eq!(step.action, c.action, "{}", c.what);
        assert_eq!(step.requires_confirmation, c.confirm, "{}", c.what);
        assert!(
            step.is_task(),
            "{}: a skipped prune is still a task (PruneSkipped)",
            c.what
        );
    }
    assert_eq!(SkipReason::NoPrune.message(), "ignored (no prune)");
    assert_eq!(
        SkipReason::PruneDisabled.message(),
        "ignored (requires pruning)"
    );
}

#[test]
fn allow_empty_guards_automated_prune_of_everything() {
    // (automated, prune, allowEmpty, resources all extra) → refused?
    let table: &[(bool, bool, bool, bool, bool)] = &[
        (true, true, false, true, true),
        (true, true, true, true, false),
        (true, false, false, true, false),
        (false, true, false, true, false),
        (true, true, false, false, false),
    ];
    for &(automated, prune, allow_empty, all_extra, refused) in table {
        let list = if all_extra {
            rs(&[r("ConfigMap", "a").extra(), r("Service", "b").extra()])
        } else {
            rs(&[r("ConfigMap", "a").extra(), r("Service", "b")])
        };
        let got = plan(
            &list,
            &SyncOptions::default(),
            automated,
            allow_empty,
            prune,
        );
        assert_eq!(
            got.is_err(),
            refused,
            "{automated} {prune} {allow_empty} {all_extra}"
        );
        if refused {
            let err = got.unwrap_err();
            assert_eq!(err, PlanError::WouldPruneEverything { count: 2 });
            let msg = err.to_string();
            assert!(
                msg.contains("wipe out all resources") && msg.contains("allowEmpty"),
                "{msg}"
            );
        }
    }
    // Nothing at all: nothing to refuse.
    assert!(
        plan(&[], &SyncOptions::default(), true, false, true)
            .unwrap()
            .steps
            .is_empty()
    );
    // A desired hook means the desired set is not empty.
    let list = rs(&[
        r("ConfigMap", "a").extra(),
        r("Job", "h").ann(HOOK, "PostSync"),
    ]);
    assert!(plan(&list, &SyncOptions::default(), true, false, true).is_ok());
}

// ---------------------------------------------------------------- options in the plan

#[test]
fn apply_out_of_sync_only_applies_only_what_differs() {
    let list = [
        r("ConfigMap", "equal").status(Status::Equal),
        r("ConfigMap", "modified").status(Status::Modified),
        r("ConfigMap", "missing"),
        r("ConfigMap", "extra").extra(),
        r("Job", "hook").status(Status::Equal).ann(HOOK, "Sync"),
        r("ConfigMap", "forced")
            .status(Status::Equal)
            .ann(OPTS, "ApplyOutOfSyncOnly=false"),
    ];
    let table: &[(bool, &[(&str, Action)])] = &[
        (
            true,
            &[
                ("equal", Action::Skip(SkipReason::Synced)),
                ("modified", Action::Apply),
                ("missing", Action::Apply),
                ("extra", Action::Prune),
                ("hook", Action::Apply),
                ("forced", Action::Apply),
            ],
        ),
        (
            false,
            &[
                ("equal", Action::Apply),
                ("modified", Action::Apply),
                ("missing", Action::Apply),
                ("extra", Action::Prune),
                ("hook", Action::Apply),
                ("forced", Action::Apply),
            ],
        ),
    ];
    for (on, want) in table {
        let opts = SyncOptions {
            apply_out_of_sync_only: *on,
            ..SyncOptions::default()
        };
        let p = plan(&rs(&list), &opts, false, false, true).unwrap();
        for (name, action) in *want {
            let s = p.steps.iter().find(|s| s.key.name == *name).unwrap();
            assert_eq!(s.action, *action, "ApplyOutOfSyncOnly={on}: {name}");
        }
    }
    let opts = SyncOptions::parse(["ApplyOutOfSyncOnly=true"]);
    let p = plan(&rs(&list), &opts, false, false, true).unwrap();
    let batched: usize = p.batches().iter().map(|b| b.steps.len()).sum();
    assert_eq!(batched, 5, "the synced resource is not a task");
}

#[test]
fn a_resumed_operation_skips_what_is_in_sync_but_keeps_it_a_task() {
    let list = [
        r("ConfigMap", "equal").status(Status::Equal),
        r("ConfigMap", "modified").status(Status::Modified),
        r("ConfigMap", "missing"),
        r("Job", "hook").status(Status::Equal).ann(HOOK, "Sync"),
        r("ConfigMap", "replaced")
            .status(Status::Equal)
            .ann(OPTS, "Replace=true"),
        // ApplyOutOfSyncOnly keeps its own meaning (not a task) in a resumed run too.
        r("ConfigMap", "oos-only")
            .status(Status::Equal)
            .ann(OPTS, "ApplyOutOfSyncOnly=true"),
    ];
    let want = [
        ("equal", Action::Skip(SkipReason::InSyncOnResume)),
        ("modified", Action::Apply),
        ("missing", Action::Apply),
        ("hook", Action::Apply),
        ("replaced", Action::Skip(SkipReason::InSyncOnResume)),
        ("oos-only", Action::Skip(SkipReason::Synced)),
    ];
    let opts = SyncOptions {
        resumed: true,
        ..SyncOptions::default()
    };
    let p = plan(&rs(&list), &opts, false, false, true).unwrap();
    for (name, action) in want {
        let s = p.steps.iter().find(|s| s.key.name == name).unwrap();
        assert_eq!(s.action, action, "{name}");
    }
    let batched: usize = p.batches().iter().map(|b| b.steps.len()).sum();
    assert_eq!(
        batched, 5,
        "in sync on resume is still a task; ApplyOutOfSyncOnly's is not"
    );
    // Not resumed: everything is applied.
    let p = plan(&rs(&list[..5]), &SyncOptions::default(), false, false, true).unwrap();
    assert!(
        p.steps
            .iter()
            .all(|s| s.action == Action::Apply || s.action == Action::Replace)
    );
}

#[test]
fn create_namespace_creates_the_missing_destination_namespace_first() {
    let list = [
        r("ConfigMap", "c").ns("prod"),
        r("Job", "early-hook")
            .ns("prod")
            .ann(HOOK, "PreSync")
            .wave(-3),
    ];
    let with = |create: bool, exists: bool| SyncOptions {
        create_namespace: create,
        destination_namespace: Some(DestinationNamespace {
            name: "prod".into(),
            exists,
        }),
        ..SyncOptions::default()
    };
    let p = plan(&rs(&list), &with(true, false), false, false, true).unwrap();
    assert_eq!(names(&p), ["prod", "early-hook", "c"]);
    let ns = &p.steps[0];
    assert_eq!(
        (ns.key.kind.as_str(), ns.key.namespace.as_str()),
        ("Namespace", "")
    );
    assert_eq!(
        (ns.phase, ns.source, ns.action),
        (Phase::PreSync, StepSource::CreateNamespace, Action::Apply)
    );
    for (create, exists) in [(true, true), (false, false)] {
        let p = plan(&rs(&list), &with(create, exists), false, false, true).unwrap();
        assert_eq!(
            names(&p),
            ["early-hook", "c"],
            "create={create} exists={exists}"
        );
    }
    // Declared by the app: no extra step.
    let mut declared = list.to_vec();
    declared.push(r("Namespace", "prod").ns(""));
    let p = plan(&rs(&declared), &with(true, false), false, false, true).unwrap();
    assert_eq!(
        p.steps.iter().filter(|s| s.key.kind == "Namespace").count(),
        1
    );
    assert!(
        p.steps
            .iter()
            .all(|s| s.source != StepSource::CreateNamespace)
    );
}

#[test]
fn replace_and_apply_mode_are_recorded_per_step() {
    struct Case {
        app: &'static [&'static str],
        ann: Option<&'static str>,
        live_only_ann: bool,
        action: Action,
        mode: ApplyMode,
        force: bool,
    }
    let cases = [
        Case {
            app: &[],
            ann: None,
            live_only_ann: false,
            action: Action::Apply,
            mode: ApplyMode::ServerSide,
            force: false,
        },
        Case {
            app: &["Replace=true"],
            ann: None,
            live_only_ann: false,
            action: Action::Replace,
            mode: ApplyMode::ServerSide,
            force: false,
        },
        Case {
            app: &[],
            ann: Some("Replace=true"),
            live_only_ann: false,
            action: Action::Replace,
            mode: ApplyMode::ServerSide,
            force: false,
        },
        Case {
            app: &[],
            ann: Some("Replace=true"),
            live_only_ann: true,
            action: Action::Replace,
            mode: ApplyMode::ServerSide,
            force: false,
        },
        Case {
            app: &["Replace=true"],
            ann: Some("Replace=false"),
            live_only_ann: false,
            action: Action::Apply,
            mode: ApplyMode::ServerSide,
            force: false,
        },
        Case {
            app: &["ServerSideApply=false"],
            ann: None,
            live_only_ann: false,
            action: Action::Apply,
            mode: ApplyMode::ClientSide,
            force: false,
        },
        Case {
            app: &["ServerSideApply=true"],
            ann: Some("ServerSideApply=false"),
            live_only_ann: false,
            action: Action::Apply,
            mode: ApplyMode::ClientSide,
            force: false,
        },
        Case {
            app: &["ServerSideApply=false"],
            ann: Some("ServerSideApply=true"),
            live_only_ann: false,
            action: Action::Apply,
            mode: ApplyMode::ServerSide,
            force: false,
        },
        Case {
            app: &[],
            ann: Some("Force=true,Replace=true"),
            live_only_ann: false,
            action: Action::Replace,
            mode: ApplyMode::ServerSide,
            force: true,
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        let mut res = r("Deployment", "web")
            .group("apps")
            .status(Status::Modified);
        if let Some(a) = c.ann {
            if c.live_only_ann {
                res.0
                    .live
                    .as_mut()
                    .unwrap()
                    .annotations
                    .insert(OPTS.into(), a.into());
            } else {
                res = res.ann(OPTS, a);
            }
        }
        let p = plan(&rs(&[res]), &SyncOptions::parse(c.app), false, false, true).unwrap();
        let s = &p.steps[0];
        assert_eq!(
            (s.action, s.apply_mode, s.force),
            (c.action, c.mode, c.force),
            "case {i}"
        );
    }
}

#[test]
fn batches_group_each_wave_with_prunes_first() {
    let list = [
        r("Deployment", "new").group("apps"),
        r("ConfigMap", "gone").extra(),
        r("Service", "svc"),
        r("Secret", "later").wave(1),
    ];
    let p = plan_default(&list);
    assert_eq!(names(&p), ["gone", "svc", "new", "later"]);
    let batches = p.batches();
    let shape: Vec<(Phase, i64, Vec<&str>)> = batches
        .iter()
        .map(|b| {
            (
                b.phase,
                b.wave,
                b.steps.iter().map(|s| s.key.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (Phase::Sync, 0, vec!["gone", "svc", "new"]),
            (Phase::Sync, 1, vec!["later"])
        ]
    );
    // A prune of a kind ranked later still goes first within its wave.
    let p = plan_default(&[
        r("Deployment", "d").group("apps").extra(),
        r("ConfigMap", "c"),
    ]);
    let first: Vec<&str> = p.batches()[0]
        .steps
        .iter()
        .map(|s| s.key.name.as_str())
        .collect();
    assert_eq!(first, ["d", "c"]);
    assert_eq!(p.changes().count(), 2);
}

#[test]
fn plan_resources_read_objects_and_diffs() {
    let desired = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "annotations": {WAVE: "-1", "x": 1}},
        "spec": {"group": "example.com", "names": {"kind": "Widget"}}});
    let key = ResourceKey::of(&desired).unwrap();
    let pr = PlanResource::from_objects(key.clone(), Status::Missing, Some(&desired), None);
    let meta = pr.target.as_ref().unwrap();
    assert_eq!(meta.defines, Some(GroupKind::new("example.com", "Widget")));
    assert_eq!(
        meta.annotations.len(),
        1,
        "non-string annotation values are dropped"
    );
    assert!(pr.live.is_none());

    let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "old", "namespace": "ns", "annotations": {CMP: "IgnoreExtraneous"}}});
    let diff = plumb_diff::compare::ResourceDiff {
        key: ResourceKey::of(&live).unwrap(),
        status: Status::Extra,
        result: plumb_diff::DiffResult {
            modified: true,
            normalized_live: live.clone(),
            predicted_live: serde_json::Value::Null,
        },
        origin: None,
        declared: None,
    };
    let pr = PlanResource::from_diff(&diff);
    assert!(pr.target.is_none());
    assert!(pr.ignore_extraneous());
    assert_eq!(ObjectMeta::from_object(&live).defines, None);
}

// ---------------------------------------------------------------- sync status

#[test]
fn sync_status_follows_argo_rules() {
    use Status::*;
    struct Case {
        what: &'static str,
        resources: Vec<R>,
        want: SyncStatusCode,
    }
    let cases = [
        Case {
            what: "no resources",
            resources: vec![],
            want: SyncStatusCode::Synced,
        },
        Case {
            what: "all equal",
            resources: vec![r("A", "a").status(Equal), r("B", "b").status(Equal)],
            want: SyncStatusCode::Synced,
        },
        Case {
            what: "modified",
            resources: vec![r("A", "a").status(Equal), r("B", "b").status(Modified)],
            want: SyncStatusCode::OutOfSync,
        },
        Case {
            what: "missing",
            resources: vec![r("A", "a").status(Missing)],
            want: SyncStatusCode::OutOfSync,
        },
        Case {
            what: "extra",
            resources: vec![r("A", "a").status(Extra)],
            want: SyncStatusCode::OutOfSync,
        },
        Case {
            what: "extra with Prune=false stays OutOfSync",
            resources: vec![r("A", "a").status(Extra).ann(OPTS, "Prune=false")],
            want: SyncStatusCode::OutOfSync,
        },
        Case {
            what: "extra with IgnoreExtraneous",
            resources: vec![r("A", "a").status(Extra).ann(CMP, "IgnoreExtraneous")],
            want: SyncStatusCode::Synced,
        },
        Case {
            what: "modified with IgnoreExtraneous",
            resources: vec![
                r("A", "a")
                    .status(Modified)
                    .ann(CMP, "ServerSideDiff=true, IgnoreExtraneous"),
            ],
            want: SyncStatusCode::OutOfSync,
        },
        Case {
            what: "missing hook",
            resources: vec![r("Job", "h").status(Missing).ann(HOOK, "PreSync")],
            want: SyncStatusCode::Synced,
        },
        Case {
            what: "skip hook",
            resources: vec![r("A", "a").status(Modified).ann(HOOK, "Skip")],
            want: SyncStatusCode::Synced,
        },
    ];
    for c in cases {
        assert_eq!(sync_status(&rs(&c.resources)), c.want, "{}", c.what);
    }
}

#[test]
fn prune_only_detection_matches_argo_including_hooks() {
    use Status::*;
    let cases: Vec<(Vec<R>, bool)> = vec![
        (
            vec![r("A", "a").status(Equal), r("B", "b").status(Extra)],
            true,
        ),
        (
            vec![r("A", "a").status(Modified), r("B", "b").status(Extra)],
            false,
        ),
        (vec![r("A", "a").status(Missing)], false),
        // A hook has no status, which Argo CD counts as "not Synced, not prune".
        (
            vec![
                r("B", "b").status(Extra),
                r("Job", "h").status(Equal).ann(HOOK, "PostSync"),
            ],
            false,
        ),
    ];
    for (i, (list, want)) in cases.into_iter().enumerate() {
        assert_eq!(only_pruning_needed(&rs(&list)), want, "case {i}");
    }
}

// ---------------------------------------------------------------- automated decisions

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_790_107_000 + secs)
}

fn synced_once(rev: &str, self_heal: bool) -> AppState {
    let mut s = AppState::new(rev);
    s.self_heal = self_heal;
    s.record_sync(SyncReason::NewRevision, rev, true, t(0));
    s.observe(rev, SyncStatusCode::OutOfSync);
    s
}

#[test]
fn automated_decisions_follow_argo_rules() {
    struct Case {
        what: &'static str,
        state: AppState,
        now: u64,
        want: Decision,
    }
    let mut in_progress = synced_once("a", true);
    in_progress.operation_in_progress = true;
    let mut synced = synced_once("a", true);
    synced.observe("a", SyncStatusCode::Synced);
    let mut new_rev = synced_once("a", false);
    new_rev.observe("b", SyncStatusCode::OutOfSync);
    let mut prune_only = synced_once("a", false);
    prune_only.observe("b", SyncStatusCode::OutOfSync);
    prune_only.prune_only = true;
    let mut prune_only_allowed = prune_only.clone();
    prune_only_allowed.automated_prune = true;
    let mut source_edit = synced_once("a", false);
    source_edit.source_changed = true;
    let mut healed_once = synced_once("a", true);
    healed_once.record_sync(SyncReason::SelfHeal, "a", true, t(10));
    let mut failed = AppState::new("a");
    failed.record_sync(SyncReason::NewRevision, "a", false, t(0));
    let mut failed_no_retry = failed.clone();
    failed_no_retry.retry.policy = RetryPolicy::none();
    let cases = [
        Case {
            what: "never synced",
            state: AppState::new("a"),
            now: 0,
            want: Decision::SyncNow {
                reason: SyncReason::NewRevision,
            },
        },
        Case {
            what: "operation running",
            state: in_progress,
            now: 100,
            want: Decision::Nothing {
                why: NoSync::OperationInProgress,
            },
        },
        Case {
            what: "synced",
            state: synced,
            now: 100,
            want: Decision::Nothing {
                why: NoSync::NotOutOfSync,
            },
        },
        Case {
            what: "new revision",
            state: new_rev,
            now: 1,
            want: Decision::SyncNow {
                reason: SyncReason::NewRevision,
            },
        },
        Case {
            what: "prune only, automated prune off",
            state: prune_only,
            now: 1,
            want: Decision::Nothing {
                why: NoSync::PruneOnlyWithoutAutomatedPrune,
            },
        },
        Case {
            what: "prune only, automated prune on",
            state: prune_only_allowed,
            now: 1,
            want: Decision::SyncNow {
                reason: SyncReason::NewRevision,
            },
        },
        Case {
            what: "source edited",
            state: source_edit,
            now: 1,
            want: Decision::SyncNow {
                reason: SyncReason::NewRevision,
            },
        },
        Case {
            what: "same revision, no self-heal",
            state: synced_once("a", false),
            now: 1000,
            want: Decision::Nothing {
                why: NoSync::AlreadySynced,
            },
        },
        Case {
            what: "self-heal, first attempt is immediate",
            state: synced_once("a", true),
            now: 0,
            want: Decision::SyncNow {
                reason: SyncReason::SelfHeal,
            },
        },
        Case {
            what: "self-heal, second waits 2s",
            state: healed_once.clone(),
            now: 11,
            want: Decision::WaitUntil {
                at: t(12),
                reason: SyncReason::SelfHeal,
            },
        },
        Case {
            what: "self-heal, due",
            state: healed_once,
            now: 12,
            want: Decision::SyncNow {
                reason: SyncReason::SelfHeal,
            },
        },
        Case {
            what: "failed: retry after 5s",
            state: failed.clone(),
            now: 1,
            want: Decision::WaitUntil {
                at: t(5),
                reason: SyncReason::Retry,
            },
        },
        Case {
            what: "failed: retry due",
            state: failed,
            now: 5,
            want: Decision::SyncNow {
                reason: SyncReason::Retry,
            },
        },
        Case {
            what: "failed, retry limit 0",
            state: failed_no_retry,
            now: 100,
            want: Decision::Nothing {
                why: NoSync::RetriesExhausted { attempts: 0 },
            },
        },
    ];
    for c in cases {
        assert_eq!(automated_decision(&c.state, t(c.now)), c.want, "{}", c.what);
    }
}

#[test]
fn a_terminated_sync_is_not_retried_but_a_new_revision_syncs() {
    let mut s = AppState::new("a");
    s.record_sync(SyncReason::NewRevision, "a", false, t(0));
    if let Some(last) = s.last_sync.as_mut() {
        last.terminated = true;
    }
    assert_eq!(
        automated_decision(&s, t(600)),
        Decision::Nothing {
            why: NoSync::Terminated
        }
    );
    s.observe("b", SyncStatusCode::OutOfSync);
    assert_eq!(
        automated_decision(&s, t(600)),
        Decision::SyncNow {
            reason: SyncReason::NewRevision
        }
    );
}

#[test]
fn failed_syncs_are_retried_with_backoff_until_the_limit() {
    // Default automated policy: limit 5, 5s × 2^n capped at 3m.
    let mut s = AppState::new("a");
    let mut now = t(0);
    assert_eq!(
        automated_decision(&s, now),
        Decision::SyncNow {
            reason: SyncReason::NewRevision
        }
    );
    s.record_sync(SyncReason::NewRevision, "a", false, now);
    let mut gaps = Vec::new();
    loop {
        match automated_decision(&s, now) {
            Decision::WaitUntil { at, reason } => {
                assert_eq!(reason, SyncReason::Retry);
                gaps.push(at.duration_since(now).unwrap().as_secs());
                now = at;
            }
            Decision::SyncNow { reason } => {
                assert_eq!(reason, SyncReason::Retry);
                s.record_sync(reason, "a", false, now);
            }
            Decision::Nothing { why } => {
                assert_eq!(why, NoSync::RetriesExhausted { attempts: 5 });
                break;
            }
        }
    }
    assert_eq!(gaps, [5, 10, 20, 40, 80]);

    // A success resets the retry count; a new revision starts over too.
    let mut s = AppState::new("a");
    s.retry.policy = RetryPolicy::from_value(
        &json!({"limit": 2, "backoff": {"duration": "1m", "factor": 3, "maxDuration": "2m"}}),
    )
    .unwrap();
    s.record_sync(SyncReason::NewRevision, "a", false, t(0));
    assert_eq!(
        automated_decision(&s, t(0)),
        Decision::WaitUntil {
            at: t(60),
            reason: SyncReason::Retry
        }
    );
    s.record_sync(SyncReason::Retry, "a", false, t(60));
    assert_eq!(
        automated_decision(&s, t(60)),
        Decision::WaitUntil {
            at: t(180),
            reason: SyncReason::Retry
        }
    );
    s.record_sync(SyncReason::Retry, "a", false, t(180));
    assert_eq!(
        automated_decision(&s, t(999)),
        Decision::Nothing {
            why: NoSync::RetriesExhausted { attempts: 2 }
        }
    );
    // A manual sync of the same revision starts a fresh operation: retries start over.
    let mut manual = s.clone();
    manual.record_manual_sync("a", false, t(999));
    assert_eq!(
        automated_decision(&manual, t(999)),
        Decision::WaitUntil {
            at: t(1059),
            reason: SyncReason::Retry
        }
    );
    s.observe("b", SyncStatusCode::OutOfSync);
    assert_eq!(
        automated_decision(&s, t(999)),
        Decision::SyncNow {
            reason: SyncReason::NewRevision
        }
    );
    s.record_sync(SyncReason::NewRevision, "b", false, t(1000));
    assert_eq!(s.retry.attempts, 0);
    assert_eq!(
        automated_decision(&s, t(1000)),
        Decision::WaitUntil {
            at: t(1060),
            reason: SyncReason::Retry
        }
    );
}

/// The seed loop of `outofsync-after-sync.md`: a webhook rewrites a field git declares, so
/// the app is OutOfSync right after every sync of the same revision, with self-heal on.
/// Self-heal syncs are spaced by the backoff (0, 2, 6, 18, 54, 162, 300, 300 s) and the
/// history grows with the same revision, capped at 10.
#[test]
fn seed_loop_self_heals_with_backoff_and_caps_history() {
    let rev = "b5e2be1";
    let source = AppSource {
        repo_url: "https://git.example/payments.git".into(),
        path: "overlays/prod".into(),
        target_revision: "HEAD".into(),
        ..AppSource::default()
    };
    let mut s = AppState::new(rev);
    s.self_heal = true;
    s.automated_prune = true;
    let mut history: Vec<HistoryEntry> = Vec::new();
    let mut now = t(0);
    let mut syncs: Vec<(SystemTime, SyncReason)> = Vec::new();
    while syncs.len() < 16 {
        match automated_decision(&s, now) {
            Decision::SyncNow { reason } => {
                syncs.push((now, reason));
                // The sync succeeds instantly; the webhook mutates; the next comparison is
                // OutOfSync again.
                s.record_sync(reason, rev, true, now);
                append_history(
                    &mut history,
                    HistoryEntry::new(rev, source.clone(), now, now, InitiatedBy::automated()),
                    None,
                );
                s.observe(rev, SyncStatusCode::OutOfSync);
            }
            Decision::WaitUntil { at, reason } => {
                assert_eq!(reason, SyncReason::SelfHeal);
                assert!(at > now);
                now = at;
            }
            Decision::Nothing { why } => panic!("the loop stopped: {why:?}"),
        }
    }
    assert_eq!(syncs[0].1, SyncReason::NewRevision);
    assert!(syncs[1..].iter().all(|(_, r)| *r == SyncReason::SelfHeal));
    let gaps: Vec<u64> = syncs
        .windows(2)
        .map(|w| w[1].0.duration_since(w[0].0).unwrap().as_secs())
        .collect();
    assert_eq!(&gaps[..8], &[0, 2, 6, 18, 54, 162, 300, 300]);
    assert!(gaps[8..].iter().all(|g| *g == 300));

    assert_eq!(history.len(), 10);
    assert!(
        history
            .iter()
            .all(|h| h.revision == rev && h.initiated_by.automated)
    );
    let ids: Vec<i64> = history.iter().map(|h| h.id).collect();
    assert_eq!(ids, (6..16).collect::<Vec<i64>>());
    assert_eq!(
        history.last().unwrap().deployed_at,
        Some(syncs.last().unwrap().0)
    );

    // The fix lands (a new commit): the backoff starts over with one sync of the new revision,
    // which then stays Synced: no more syncs.
    s.observe("72e773b", SyncStatusCode::OutOfSync);
    assert_eq!(
        automated_decision(&s, now),
        Decision::SyncNow {
            reason: SyncReason::NewRevision
        }
    );
    s.record_sync(SyncReason::NewRevision, "72e773b", true, now);
    assert_eq!(s.self_heal_attempts, 0);
    s.observe("72e773b", SyncStatusCode::Synced);
    assert_eq!(
        automated_decision(&s, now + Duration::from_secs(3600)),
        Decision::Nothing {
            why: NoSync::NotOutOfSync
        }
    );
}

#[test]
fn seeing_synced_resets_the_self_heal_backoff() {
    let mut s = synced_once("a", true);
    for i in 0..4 {
        s.record_sync(SyncReason::SelfHeal, "a", true, t(100 * i));
    }
    assert_eq!(s.self_heal_attempts, 4);
    assert_eq!(
        automated_decision(&s, t(300)),
        Decision::WaitUntil {
            at: t(354),
            reason: SyncReason::SelfHeal
        }
    );
    // Drift fixed by the last heal; later, new drift: the backoff starts from 0 again.
    s.observe("a", SyncStatusCode::Synced);
    s.observe("a", SyncStatusCode::OutOfSync);
    assert_eq!(s.self_heal_attempts, 0);
    assert_eq!(
        automated_decision(&s, t(301)),
        Decision::SyncNow {
            reason: SyncReason::SelfHeal
        }
    );
    // A configured backoff (base 1s, factor 2, cap 4s).
    let mut s = synced_once("a", true);
    s.self_heal_backoff = crate::backoff::SelfHealBackoff {
        base: Duration::from_secs(1),
        factor: 2.0,
        cap: Duration::from_secs(4),
    };
    let mut waits = Vec::new();
    for i in 0..5u64 {
        s.record_sync(SyncReason::SelfHeal, "a", true, t(1000 * i));
        match automated_decision(&s, t(1000 * i)) {
            Decision::WaitUntil { at, .. } => {
                waits.push(at.duration_since(t(1000 * i)).unwrap().as_secs())
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(waits, [1, 2, 4, 4, 4]);
}

// ---------------------------------------------------------------- policy

#[test]
fn options_come_from_plumb_core_applications() {
    let app = plumb_core::argo::Application::from_value(&json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "a"},
        "spec": {"destination": {"namespace": "prod"},
                 "syncPolicy": {"syncOptions": ["Replace=true", "Prune=confirm"]}}}))
    .unwrap();
    let o = SyncOptions::from_application(&app);
    assert!(o.replace);
    assert_eq!(o.prune, Some(crate::options::PruneOption::Confirm));
    assert_eq!(
        o.destination_namespace,
        Some(DestinationNamespace {
            name: "prod".into(),
            exists: true
        })
    );
    let b = crate::backoff::RetryBackoff::default();
    let delays: Vec<u64> = (0..7).map(|n| b.delay(n).as_secs()).collect();
    assert_eq!(delays, [5, 10, 20, 40, 80, 160, 180]);
}

#[test]
fn sync_policy_is_read_from_the_application() {
    let app = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {"name": "payments-prod"},
    "spec": {
        "destination": {"namespace": "pay-prod"},
        "revisionHistoryLimit": 3,
        "syncPolicy": {
            "automated": {"prune": true, "selfHeal": true},
            "syncOptions": ["CreateNamespace=true", "ServerSideApply=false", "PruneLast=true"],
            "retry": {"limit": -1, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "1m"}}
        }}});
    let p = SyncPolicy::from_application(&app).unwrap();
    let auto = p.automated.unwrap();
    assert!(p.is_automated() && auto.prune && auto.self_heal && !auto.allow_empty);
    assert!(p.sync_options.create_namespace && p.sync_options.prune_last);
    assert_eq!(p.sync_options.server_side_apply, Some(false));
    assert_eq!(
        p.sync_options.destination_namespace.as_ref().unwrap().name,
        "pay-prod"
    );
    assert_eq!(
        p.retry_for(true).next_delay(3),
        Some(Duration::from_secs(60))
    );
    assert_eq!(revision_history_limit(&app), Some(3));

    let manual = json!({"kind": "Application", "spec": {}});
    let p = SyncPolicy::from_application(&manual).unwrap();
    assert!(!p.is_automated());
    assert_eq!(p.retry_for(false).limit, 0);
    assert_eq!(revision_history_limit(&manual), None);
    let disabled = json!({"spec": {"syncPolicy": {"automated": {"enabled": false}}}});
    let p = SyncPolicy::from_application(&disabled).unwrap();
    assert!(!p.is_automated());
    assert_eq!(p.retry_for(true), RetryPolicy::automated_default());
    let bad = json!({"spec": {"syncPolicy": {"automated": {"prune": "yes"}}}});
    assert_eq!(
        SyncPolicy::from_application(&bad).unwrap_err().to_string(),
        "spec.syncPolicy.automated.prune: invalid type: string \"yes\", expected a boolean"
    );
}
