//! The sync plan: which objects a sync applies, replaces or prunes, in gitops-engine's order.
//!
//! gitops-engine (`pkg/sync/sync_context.go` `getSyncTasks`, `sync_tasks.go`) builds one task
//! per resource and sync phase, then:
//! 1. reverses the waves of prune tasks (the prune task of the highest wave takes the lowest
//!    prune wave, and so on: a symmetric swap over the distinct prune waves), so that
//!    deletion runs in the reverse of creation order;
//! 2. moves prune tasks with `PruneLast=true` (on the live object, or app-wide) to one wave
//!    after the last wave of the Sync phase (at least wave 1);
//! 3. sorts by phase (PreSync, Sync, PostSync, SyncFail), wave, kind (Helm's install order,
//!    [`KIND_ORDER`]; unknown kinds after all known ones), then name;
//! 4. moves each Namespace before the first object in it and each CRD before the first of its
//!    custom resources, giving the moved task that object's phase and wave.
//!
//! Within one (phase, wave), gitops-engine prunes first, then applies kind by kind; see
//! [`Plan::batches`].

use crate::options::{
    ApplyMode, EffectiveOptions, PruneOption, ResourceSyncOptions, SyncOptions, annotation_csv,
};
use plumb_core::{COMPARE_OPTIONS_ANNOTATION, GroupKind, ResourceKey};
pub use plumb_core::{HELM_HOOK_ANNOTATION, HOOK_ANNOTATION};
use plumb_diff::compare::ResourceDiff;
pub use plumb_diff::compare::Status;
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

/// `argocd.argoproj.io/sync-wave`: an integer (Go `strconv.Atoi`), default 0.
pub const SYNC_WAVE_ANNOTATION: &str = "argocd.argoproj.io/sync-wave";
/// `helm.sh/hook-weight`: the wave when `sync-wave` is absent or not an integer.
pub const HELM_HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";

/// gitops-engine's `kindOrder` (from Helm's install order). A known kind ranks
/// `index - len` (negative); an unknown kind ranks 0, after every known kind.
pub const KIND_ORDER: [&str; 35] = [
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// The rank of a kind in [`KIND_ORDER`] (`Namespace` = -35 … `APIService` = -1, anything
/// else 0). Only the kind counts, not the group, as in gitops-engine.
pub fn kind_rank(kind: &str) -> i32 {
    KIND_ORDER
        .iter()
        .position(|k| *k == kind)
        .map_or(0, |i| i as i32 - KIND_ORDER.len() as i32)
}

/// A sync phase, in execution order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    PreSync,
    Sync,
    PostSync,
    /// Runs only when the sync fails.
    SyncFail,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::PreSync => "PreSync",
            Phase::Sync => "Sync",
            Phase::PostSync => "PostSync",
            Phase::SyncFail => "SyncFail",
        }
    }
}

/// What the hook annotations make of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hook {
    /// Not a hook: synced in the Sync phase.
    None,
    /// `argocd.argoproj.io/hook: Skip` (alone): never applied nor pruned.
    Skip,
    /// A hook running in these phases (sorted). Empty when the annotation names no type
    /// gitops-engine knows (such a hook is never run and never counts for sync status).
    Phases(Vec<Phase>),
}

/// Reads the hook annotations as gitops-engine's `hook.IsHook` / `hook.Types` / `syncPhases`:
/// the Argo CD annotation's known types (`PreSync`, `Sync`, `PostSync`, `SyncFail`, `Skip`);
/// if it names none, the Helm hook types (`pre-install`/`pre-upgrade` → PreSync,
/// `post-install`/`post-upgrade` → PostSync). `Skip` alone skips the object.
pub fn hook_of(annotations: &BTreeMap<String, String>) -> Hook {
    let argo = annotations.get(HOOK_ANNOTATION);
    let mut types: Vec<&str> = argo
        .map(|v| annotation_csv(v))
        .unwrap_or_default()
        .into_iter()
        .filter(|t| matches!(*t, "PreSync" | "Sync" | "PostSync" | "SyncFail" | "Skip"))
        .collect();
    if types.is_empty() {
        let helm = annotations
            .get(HELM_HOOK_ANNOTATION)
            .map(|v| annotation_csv(v))
            .unwrap_or_default();
        types = helm
            .into_iter()
            .filter_map(|t| match t {
                "pre-install" | "pre-upgrade" => Some("PreSync"),
                "post-install" | "post-upgrade" => Some("PostSync"),
                _ => None,
            })
            .collect();
    }
    let skip = types.len() == 1 && types[0] == "Skip";
    let is_hook = match argo {
        Some(_) => !skip,
        // Helm marks CRDs with `crd-install`; those are not hooks.
        None => annotations
            .get(HELM_HOOK_ANNOTATION)
            .is_some_and(|v| v != "crd-install"),
    };
    if skip {
        return Hook::Skip;
    }
    if !is_hook {
        return Hook::None;
    }
    let mut phases: Vec<Phase> = types
        .iter()
        .filter_map(|t| match *t {
            "PreSync" => Some(Phase::PreSync),
            "Sync" => Some(Phase::Sync),
            "PostSync" => Some(Phase::PostSync),
            "SyncFail" => Some(Phase::SyncFail),
            _ => None,
        })
        .collect();
    phases.sort();
    phases.dedup();
    Hook::Phases(phases)
}

/// The sync wave: `argocd.argoproj.io/sync-wave` when it is an integer, else
/// `helm.sh/hook-weight` when that is one, else 0 (gitops-engine's `syncwaves.Wave`).
pub fn wave_of(annotations: &BTreeMap<String, String>) -> i64 {
    [SYNC_WAVE_ANNOTATION, HELM_HOOK_WEIGHT_ANNOTATION]
        .iter()
        .find_map(|k| annotations.get(*k).and_then(|v| v.parse::<i64>().ok()))
        .unwrap_or(0)
}

/// What the plan needs to know about one side (desired or live) of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectMeta {
    /// `metadata.annotations` (string values).
    pub annotations: BTreeMap<String, String>,
    /// For a CustomResourceDefinition: the group and kind it defines (`spec.group`,
    /// `spec.names.kind`), so the CRD can be ordered before its custom resources.
    pub defines: Option<GroupKind>,
}

impl ObjectMeta {
    /// Reads annotations and, for a CRD, what it defines.
    pub fn from_object(obj: &Value) -> ObjectMeta {
        let annotations = obj
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let defines = is_crd(plumb_core::group_of_api_version(api_version), kind)
            .then(|| GroupKind::defined_by(obj))
            .flatten();
        ObjectMeta {
            annotations,
            defines,
        }
    }

    /// Adds an annotation (a builder for tests and callers without objects).
    pub fn with_annotation(mut self, key: &str, value: &str) -> ObjectMeta {
        self.annotations.insert(key.to_string(), value.to_string());
        self
    }
}

fn is_crd(group: &str, kind: &str) -> bool {
    group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition"
}

/// One compared resource, as the plan and the sync status read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanResource {
    pub key: ResourceKey,
    /// Equal / Modified / Missing (desired, not live) / Extra (live, not desired).
    pub status: Status,
    /// The desired object's metadata; ignored for `Extra`.
    pub target: Option<ObjectMeta>,
    /// The live object's metadata; ignored for `Missing`.
    pub live: Option<ObjectMeta>,
}

impl PlanResource {
    /// A resource without annotations on either side.
    pub fn new(key: ResourceKey, status: Status) -> PlanResource {
        let target = (status != Status::Extra).then(ObjectMeta::default);
        let live = (status != Status::Missing).then(ObjectMeta::default);
        PlanResource {
            key,
            status,
            target,
            live,
        }
    }

    /// From the desired and live objects (the exact input: annotations as rendered).
    pub fn from_objects(
        key: ResourceKey,
        status: Status,
        desired: Option<&Value>,
        live: Option<&Value>,
    ) -> PlanResource {
        PlanResource {
            key,
            status,
            target: desired
                .filter(|_| status != Status::Extra)
                .map(ObjectMeta::from_object),
            live: live
                .filter(|_| status != Status::Missing)
                .map(ObjectMeta::from_object),
        }
    }

    /// From a comparison result: desired metadata from the predicted live object, live
    /// metadata from the normalized live object. Predicted live keeps live-only annotations,
    /// so prefer [`PlanResource::from_objects`] with the rendered object when there is one.
    pub fn from_diff(diff: &ResourceDiff) -> PlanResource {
        let side = |v: &Value| (!v.is_null()).then(|| ObjectMeta::from_object(v));
        PlanResource {
            key: diff.key.clone(),
            status: diff.status,
            target: if diff.status == Status::Extra {
                None
            } else {
                side(&diff.result.predicted_live)
            },
            live: if diff.status == Status::Missing {
                None
            } else {
                side(&diff.result.normalized_live)
            },
        }
    }

    /// The object gitops-engine reads hook and wave annotations from: the desired object,
    /// or the live one for a resource being pruned.
    pub fn obj(&self) -> Option<&ObjectMeta> {
        if self.status == Status::Extra {
            self.live.as_ref()
        } else {
            self.target.as_ref()
        }
    }

    fn annotations(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.obj().map_or(&EMPTY, |o| &o.annotations)
    }

    /// What the hook annotations make of this resource.
    pub fn hook(&self) -> Hook {
        hook_of(self.annotations())
    }

    /// Whether its compare options (`argocd.argoproj.io/compare-options`) include
    /// `IgnoreExtraneous`.
    pub fn ignore_extraneous(&self) -> bool {
        self.annotations()
            .get(COMPARE_OPTIONS_ANNOTATION)
            .is_some_and(|v| annotation_csv(v).contains(&"IgnoreExtraneous"))
    }
}

/// Why a step does nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `ApplyOutOfSyncOnly=true` and the resource is Synced.
    Synced,
    /// Needs pruning, but the sync does not prune ("ignored (requires pruning)").
    PruneDisabled,
    /// Needs pruning, but `Prune=false` ("ignored (no prune)"); it stays OutOfSync.
    NoPrune,
    /// `argocd.argoproj.io/hook: Skip`: never applied, never pruned.
    HookSkip,
    /// A resumed operation (one an earlier run left `Running`: a stopped controller, a
    /// replica fenced mid-sync) finds the resource already as git declares it: the run it
    /// resumes applied it before it stopped, or nothing had to. Not applied again, but still a
    /// task: recorded `Synced`, and the next wave waits for its health as after an apply.
    InSyncOnResume,
}

impl SkipReason {
    /// Argo CD's result message, where it records one.
    pub fn message(self) -> &'static str {
        match self {
            SkipReason::Synced => "skipped (ApplyOutOfSyncOnly: resource is synced)",
            SkipReason::PruneDisabled => "ignored (requires pruning)",
            SkipReason::NoPrune => "ignored (no prune)",
            SkipReason::HookSkip => "skipped (hook Skip)",
            SkipReason::InSyncOnResume => "unchanged (in sync when the operation resumed)",
        }
    }
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Apply (server-side or client-side, see [`Step::apply_mode`]).
    Apply,
    /// `Replace=true`: `kubectl replace` (create when missing). Argo CD updates instead of
    /// replacing an existing CRD or Namespace, which a replace would delete with everything
    /// in it; the executor must do the same.
    Replace,
    /// Delete the live object.
    Prune,
    /// Nothing, for this reason.
    Skip(SkipReason),
}

/// Where a step comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSource {
    /// A managed resource.
    Resource,
    /// A hook (created in its phase, every sync).
    Hook,
    /// `CreateNamespace=true`: the destination namespace, created first.
    CreateNamespace,
}

/// One planned step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub key: ResourceKey,
    pub action: Action,
    pub phase: Phase,
    /// The wave the step runs in (after prune reversal, PruneLast and dependency moves).
    pub wave: i64,
    /// How applies and hooks are applied (recorded on every step).
    pub apply_mode: ApplyMode,
    /// `Force=true`.
    pub force: bool,
    /// `Validate=false` makes this `false`: the apply is sent with `fieldValidation=Ignore`.
    pub validate: bool,
    /// `SkipDryRunOnMissingResource=true`: a dry run of a kind the cluster does not serve yet
    /// is skipped, not failed.
    pub skip_dry_run_on_missing_resource: bool,
    pub source: StepSource,
    /// `Prune=confirm` without confirmation: the sync waits here until pruning is confirmed.
    pub requires_confirmation: bool,
}

impl Step {
    /// Whether gitops-engine has a task for this step (it records a result for it and it takes
    /// part in wave sequencing). Prunes that are skipped still are tasks ("PruneSkipped");
    /// resources left alone by `ApplyOutOfSyncOnly` and `Skip` hooks are not.
    pub fn is_task(&self) -> bool {
        !matches!(
            self.action,
            Action::Skip(SkipReason::Synced) | Action::Skip(SkipReason::HookSkip)
        )
    }
}

/// The steps of one (phase, wave), in execution order: prunes first, then the rest in plan
/// order (kind by kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch<'a> {
    pub phase: Phase,
    pub wave: i64,
    pub steps: Vec<&'a Step>,
}

/// The ordered steps of a sync.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    /// The tasks grouped by consecutive (phase, wave), as gitops-engine runs them: one batch
    /// at a time, prunes of the batch before its applies. Steps that are not tasks
    /// ([`Step::is_task`]) are left out.
    pub fn batches(&self) -> Vec<Batch<'_>> {
        let mut out: Vec<Batch<'_>> = Vec::new();
        for step in self.steps.iter().filter(|s| s.is_task()) {
            match out.last_mut() {
                Some(b) if b.phase == step.phase && b.wave == step.wave => b.steps.push(step),
                _ => out.push(Batch {
                    phase: step.phase,
                    wave: step.wave,
                    steps: vec![step],
                }),
            }
        }
        for b in &mut out {
            // Stable: prunes first, each group keeps plan order.
            b.steps.sort_by_key(|s| {
                !matches!(
                    s.action,
                    Action::Prune | Action::Skip(SkipReason::PruneDisabled | SkipReason::NoPrune)
                )
            });
        }
        out
    }

    /// The steps that change something (apply, replace, prune), in order.
    pub fn changes(&self) -> impl Iterator<Item = &Step> {
        self.steps
            .iter()
            .filter(|s| matches!(s.action, Action::Apply | Action::Replace | Action::Prune))
    }
}

/// Why a sync cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Argo CD's `allowEmpty` guard for automated sync with prune.
    #[error(
        "auto-sync will wipe out all resources: nothing is desired and all {count} live resources would be pruned; set syncPolicy.automated.allowEmpty: true to allow it"
    )]
    WouldPruneEverything { count: usize },
}

/// A task while the plan is built.
#[derive(Debug, Clone)]
struct Task {
    /// Index of the resource, or `usize::MAX` for the namespace `CreateNamespace` adds.
    index: usize,
    key: ResourceKey,
    phase: Phase,
    wave: i64,
    wave_override: Option<i64>,
    prune: bool,
    source: StepSource,
    /// The namespace the desired object lands in (`metadata.namespace`, else the destination
    /// namespace, which gitops-engine sets on every desired object lacking one).
    target_namespace: Option<String>,
    defines: Option<GroupKind>,
    /// A `Skip` hook: not a task, listed for the record.
    hook_skip: bool,
}

impl Task {
    fn wave(&self) -> i64 {
        self.wave_override.unwrap_or(self.wave)
    }

    fn has_target(&self) -> bool {
        !self.prune && !self.hook_skip
    }
}

fn compare_tasks(a: &Task, b: &Task) -> Ordering {
    a.phase
        .cmp(&b.phase)
        .then(a.wave().cmp(&b.wave()))
        .then(kind_rank(&a.key.kind).cmp(&kind_rank(&b.key.kind)))
        .then_with(|| a.key.name.cmp(&b.key.name))
        // gitops-engine's sort is not stable; these make plumb's order deterministic.
        .then_with(|| a.key.namespace.cmp(&b.key.namespace))
        .then_with(|| a.key.group.cmp(&b.key.group))
        .then(a.index.cmp(&b.index))
}

/// gitops-engine's `adjustDeps`: walking the sorted tasks, a dependency (a Namespace, a CRD)
/// that comes after the first task depending on it moves just before that task, taking its
/// phase and wave.
fn adjust_deps(
    tasks: &mut Vec<Task>,
    is_dep: impl Fn(&Task) -> Option<String>,
    refs_dep: impl Fn(&Task) -> Option<String>,
) {
    let mut first_index: HashMap<String, usize> = HashMap::new();
    for i in 0..tasks.len() {
        if !tasks[i].has_target() {
            continue;
        }
        if let Some(dep) = is_dep(&tasks[i]) {
            if let Some(&index) = first_index.get(&dep) {
                let wave = tasks[index].wave();
                let phase = tasks[index].phase;
                let mut t = tasks.remove(i);
                t.wave_override = Some(wave);
                t.phase = phase;
                tasks.insert(index, t);
                for v in first_index.values_mut() {
                    if *v >= index {
                        *v += 1;
                    }
                }
            }
        } else if let Some(dep) = refs_dep(&tasks[i]) {
            first_index.entry(dep).or_insert(i);
        }
    }
}

/// Plans a sync of `resources`.
///
/// - `opts`: the Application's sync options (and the destination namespace / prune
///   confirmation inputs);
/// - `automated`: whether this is an automated sync (the `allowEmpty` guard applies);
/// - `allow_empty`: `syncPolicy.automated.allowEmpty`;
/// - `prune_enabled`: whether the sync prunes (`automated.prune`, or `--prune`).
///
/// Errors with [`PlanError::WouldPruneEverything`] when an automated, pruning sync without
/// `allowEmpty` would delete every resource because nothing is desired.
pub fn plan(
    resources: &[PlanResource],
    opts: &SyncOptions,
    automated: bool,
    allow_empty: bool,
    prune_enabled: bool,
) -> Result<Plan, PlanError> {
    if automated
        && prune_enabled
        && !allow_empty
        && !resources.is_empty()
        && resources.iter().all(|r| r.status == Status::Extra)
    {
        return Err(PlanError::WouldPruneEverything {
            count: resources.len(),
        });
    }

    let dest_ns = opts.destination_namespace.as_ref();
    let effective: Vec<EffectiveOptions> = resources
        .iter()
        .map(|r| {
            let t = (r.status != Status::Extra)
                .then_some(r.target.as_ref())
                .flatten()
                .map(|m| ResourceSyncOptions::from_annotations(&m.annotations));
            let l = (r.status != Status::Missing)
                .then_some(r.live.as_ref())
                .flatten()
                .map(|m| ResourceSyncOptions::from_annotations(&m.annotations));
            EffectiveOptions::resolve(opts, t.as_ref(), l.as_ref())
        })
        .collect();

    let mut tasks: Vec<Task> = Vec::new();
    for (index, r) in resources.iter().enumerate() {
        let annotations = r.annotations();
        let wave = wave_of(annotations);
        let prune = r.status == Status::Extra;
        let target_namespace = if prune {
            None
        } else if r.key.namespace.is_empty() {
            dest_ns.map(|d| d.name.clone())
        } else {
            Some(r.key.namespace.clone())
        };
        let base = Task {
            index,
            key: r.key.clone(),
            phase: Phase::Sync,
            wave,
            wave_override: None,
            prune,
            source: StepSource::Resource,
            target_namespace,
            defines: r.obj().and_then(|o| o.defines.clone()),
            hook_skip: false,
        };
        match r.hook() {
            Hook::None => tasks.push(base),
            // Not a task (not even a prune task): listed for the record only.
            Hook::Skip => tasks.push(Task {
                hook_skip: true,
                prune: false,
                ..base
            }),
            // A live-only hook is never pruned: gitops-engine skips hooks among resources and
            // runs only the desired ones.
            Hook::Phases(_) if prune => {}
            Hook::Phases(phases) => {
                for phase in phases {
                    tasks.push(Task {
                        phase,
                        source: StepSource::Hook,
                        ..base.clone()
                    });
                }
            }
        }
    }

    // CreateNamespace=true: a PreSync task for the destination namespace, unless it exists or
    // the app declares it.
    if opts.create_namespace
        && let Some(ns) = dest_ns.filter(|d| !d.name.is_empty() && !d.exists)
    {
        let declared = resources.iter().any(|r| {
            r.status != Status::Extra
                && r.key.group.is_empty()
                && r.key.kind == "Namespace"
                && r.key.name == ns.name
        });
        if !declared {
            tasks.push(Task {
                index: usize::MAX,
                key: ResourceKey {
                    group: String::new(),
                    kind: "Namespace".into(),
                    namespace: String::new(),
                    name: ns.name.clone(),
                },
                phase: Phase::PreSync,
                wave: 0,
                wave_override: None,
                prune: false,
                source: StepSource::CreateNamespace,
                target_namespace: None,
                defines: None,
                hook_skip: false,
            });
        }
    }

    // Prune waves in reverse: symmetric swap over the distinct prune waves.
    let mut prune_waves: Vec<i64> = tasks.iter().filter(|t| t.prune).map(|t| t.wave).collect();
    prune_waves.sort_unstable();
    prune_waves.dedup();
    if prune_waves.len() > 1 {
        let reversed: HashMap<i64, i64> = prune_waves
            .iter()
            .zip(prune_waves.iter().rev())
            .map(|(a, b)| (*a, *b))
            .collect();
        for t in tasks.iter_mut().filter(|t| t.prune) {
            t.wave_override = Some(reversed[&t.wave]);
        }
    }

    // PruneLast: one wave after the last wave of the Sync phase (prunes included), at least 1.
    let last_sync_wave = tasks
        .iter()
        .filter(|t| t.phase == Phase::Sync && !t.hook_skip)
        .map(Task::wave)
        .fold(0, i64::max)
        .saturating_add(1);
    for t in tasks.iter_mut().filter(|t| t.prune) {
        if effective[t.index].prune_last {
            t.wave_override = Some(last_sync_wave);
        }
    }

    tasks.sort_by(compare_tasks);
    adjust_deps(
        &mut tasks,
        |t| (t.key.group.is_empty() && t.key.kind == "Namespace").then(|| t.key.name.clone()),
        |t| t.target_namespace.clone().filter(|ns| !ns.is_empty()),
    );
    adjust_deps(
        &mut tasks,
        |t| {
            if is_crd(&t.key.group, &t.key.kind) {
                t.defines
                    .as_ref()
                    .map(|gk| format!("{}/{}", gk.group, gk.kind))
            } else {
                None
            }
        },
        |t| Some(format!("{}/{}", t.key.group, t.key.kind)),
    );
    // gitops-engine creates the destination namespace before anything else (even the dry run).
    if let Some(i) = tasks
        .iter()
        .position(|t| t.source == StepSource::CreateNamespace)
    {
        let t = tasks.remove(i);
        tasks.insert(0, t);
    }

    let steps = tasks
        .into_iter()
        .map(|t| {
            let default_eff = EffectiveOptions::resolve(opts, None, None);
            let eff = effective.get(t.index).copied().unwrap_or(default_eff);
            let status = resources.get(t.index).map(|r| r.status);
            let mut requires_confirmation = false;
            let action = if t.hook_skip {
                Action::Skip(SkipReason::HookSkip)
            } else if t.prune {
                if !prune_enabled {
                    Action::Skip(SkipReason::PruneDisabled)
                } else {
                    match eff.prune {
                        PruneOption::False => Action::Skip(SkipReason::NoPrune),
                        PruneOption::Confirm => {
                            requires_confirmation = !opts.prune_confirmed;
                            Action::Prune
                        }
                        PruneOption::True => Action::Prune,
                    }
                }
            } else if t.source == StepSource::Resource
                && eff.apply_out_of_sync_only
                && status == Some(Status::Equal)
            {
                Action::Skip(SkipReason::Synced)
            } else if t.source == StepSource::Resource
                && opts.resumed
                && status == Some(Status::Equal)
            {
                Action::Skip(SkipReason::InSyncOnResume)
            } else if eff.replace && t.source != StepSource::CreateNamespace {
                Action::Replace
            } else {
                Action::Apply
            };
            Step {
                wave: t.wave(),
                key: t.key,
                action,
                phase: t.phase,
                apply_mode: eff.apply_mode,
                force: eff.force,
                validate: eff.validate,
                skip_dry_run_on_missing_resource: eff.skip_dry_run_on_missing_resource,
                source: t.source,
                requires_confirmation,
            }
        })
        .collect();
    Ok(Plan { steps })
}
