//! Argo CD's resource health assessment, as pure functions over `serde_json::Value`.
//!
//! [`assess`] reproduces gitops-engine's `GetResourceHealth` with no overrides: an object
//! being deleted (`metadata.deletionTimestamp`, without Argo CD's hook finalizer) is
//! Progressing `"Pending deletion"`; otherwise the built-in check for its group and kind
//! decides, with Argo CD's exact statuses and messages. One module per kind:
//!
//! | group | kind | module |
//! |---|---|---|
//! | `apps` | Deployment, StatefulSet, ReplicaSet, DaemonSet | [`deployment`], [`statefulset`], [`replicaset`], [`daemonset`] |
//! | core | Pod, Service, PersistentVolumeClaim | [`pod`], [`service`], [`pvc`] |
//! | `extensions`, `networking.k8s.io` | Ingress | [`ingress`] |
//! | `batch` | Job | [`job`] |
//! | `autoscaling` | HorizontalPodAutoscaler | [`hpa`] |
//! | `apiregistration.k8s.io` | APIService | [`apiservice`] |
//! | `argoproj.io` | Workflow | [`workflow`] |
//! | `argoproj.io`, `plumb.dev` | Application | [`application`] (see its docs: not an Argo built-in) |
//!
//! Kinds without a check yield `None`; Argo CD then leaves them out of the app's health.
//! Where a built-in check rejects the object's API version (say `apps/v1beta2` Deployment),
//! Argo CD reports Unknown with `unsupported <Kind> GVK: ...`, and so does [`assess`].
//!
//! [`worst`] folds statuses with Argo CD's `IsWorse` order (Healthy < Suspended <
//! Progressing < Missing < Degraded < Unknown); [`app_health`] applies the rest of the
//! controller's aggregation rules (`controller/health.go`: hooks, ignored and unchecked
//! resources skipped); [`app_health_by`] takes each resource's health already judged, so the
//! runner judges every resource once.
//!
//! Beyond Argo CD's built-ins: plumb's checks for operators, one module per group
//! ([`certmanager`], [`rollouts`], [`externalsecrets`], [`crossplane`], [`flux`], [`keda`],
//! [`prometheus`], [`crd`]; [`builtin`] dispatches to them and to the kinds above); the
//! [`generic`] status-conditions check; and [`lua`], Argo CD's Lua health customizations
//! (from an argocd-cm or a `resource_customizations` directory) with time and memory limits.
//! [`Checker::check`] applies them in order — ignore-healthcheck, pending deletion, Lua,
//! built-in, generic — and says which decided ([`Source`]); [`check`] uses the process's
//! checker ([`install`]ed by the CLI or the controller, else built-in + generic).
//!
//! Users: sync waves and hooks, the runner's app and resource health, the doctor's health
//! report and `plumb health` (`plumb app get` shows what the runner recorded in the status).
//!
//! **Invariant:** no I/O except [`Customizations`]' `from_*` constructors reading the scripts.
//!
//! ```
//! use plumb_health::{assess, worst, HealthStatus};
//! use serde_json::json;
//!
//! let deploy = json!({
//!     "apiVersion": "apps/v1",
//!     "kind": "Deployment",
//!     "metadata": {"name": "web", "generation": 2},
//!     "spec": {"replicas": 3},
//!     "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 1}
//! });
//! let health = assess(&deploy).expect("Deployment has a built-in check");
//! assert_eq!(health.status, HealthStatus::Progressing);
//! assert_eq!(
//!     health.message,
//!     "Waiting for rollout to finish: 1 out of 3 new replicas have been updated..."
//! );
//!
//! // A ConfigMap has no health check.
//! assert_eq!(assess(&json!({"apiVersion": "v1", "kind": "ConfigMap"})), None);
//!
//! assert_eq!(
//!     worst([HealthStatus::Healthy, HealthStatus::Progressing, HealthStatus::Suspended]),
//!     HealthStatus::Progressing
//! );
//! ```

#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

pub mod apiservice;
pub mod application;
pub mod certmanager;
mod checker;
mod conditions;
pub mod crd;
pub mod crossplane;
pub mod daemonset;
pub mod deployment;
pub mod externalsecrets;
pub mod flux;
pub mod generic;
pub mod hpa;
pub mod ingress;
pub mod job;
pub mod keda;
pub mod lua;
mod object;
pub mod pod;
pub mod prometheus;
pub mod pvc;
pub mod replicaset;
pub mod rollouts;
pub mod service;
pub mod statefulset;
pub mod workflow;

pub use checker::{Assessment, Checker, Source, builtin, check, install, installed};
pub use lua::{Customizations, LoadError, LuaCheck, LuaLimits};

use object::Gvk;

/// A health status code, with Argo CD's names.
///
/// The variants are declared in Argo CD's declaration order; that is **not** the
/// severity order. Compare with [`HealthStatus::severity`] / [`is_worse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HealthStatus {
    /// Health assessment failed; the actual status is unknown.
    Unknown,
    /// Not healthy yet, but may still become healthy.
    Progressing,
    /// Fully healthy.
    Healthy,
    /// Suspended or paused (a paused Deployment, a suspended Job).
    Suspended,
    /// Failed, or could not become healthy in time.
    Degraded,
    /// Absent from the cluster.
    Missing,
}

impl HealthStatus {
    /// All statuses, healthiest first (Argo CD's `healthOrder`).
    pub const BY_SEVERITY: [HealthStatus; 6] = [
        HealthStatus::Healthy,
        HealthStatus::Suspended,
        HealthStatus::Progressing,
        HealthStatus::Missing,
        HealthStatus::Degraded,
        HealthStatus::Unknown,
    ];

    /// The name Argo CD prints (`Healthy`, `Progressing`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            HealthStatus::Unknown => "Unknown",
            HealthStatus::Progressing => "Progressing",
            HealthStatus::Healthy => "Healthy",
            HealthStatus::Suspended => "Suspended",
            HealthStatus::Degraded => "Degraded",
            HealthStatus::Missing => "Missing",
        }
    }

    /// Position in Argo CD's `healthOrder`: 0 for Healthy up to 5 for Unknown.
    pub const fn severity(self) -> u8 {
        match self {
            HealthStatus::Healthy => 0,
            HealthStatus::Suspended => 1,
            HealthStatus::Progressing => 2,
            HealthStatus::Missing => 3,
            HealthStatus::Degraded => 4,
            HealthStatus::Unknown => 5,
        }
    }
}

impl fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error from parsing a string that is not one of Argo CD's six status names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseHealthStatusError(pub String);

impl fmt::Display for ParseHealthStatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid health status {:?}", self.0)
    }
}

impl std::error::Error for ParseHealthStatusError {}

impl FromStr for HealthStatus {
    type Err = ParseHealthStatusError;

    /// Exact, case-sensitive names, as Argo CD's `isValidHealthStatusCode` accepts them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HealthStatus::BY_SEVERITY
            .into_iter()
            .find(|h| h.as_str() == s)
            .ok_or_else(|| ParseHealthStatusError(s.to_owned()))
    }
}

/// The health of one object: a status and Argo CD's message (often empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// The status code.
    pub status: HealthStatus,
    /// The message, exactly as Argo CD words it; `""` where Argo CD gives none.
    pub message: String,
}

impl Health {
    /// A health with the given status and message.
    pub fn new(status: HealthStatus, message: impl Into<String>) -> Self {
        Health {
            status,
            message: message.into(),
        }
    }
}

/// Health of one live object, as Argo CD's built-in checks assess it; `None` when Argo CD
/// has no check for the kind (it then counts as healthy for the app).
///
/// An object with `metadata.deletionTimestamp` and without the
/// `argocd.argoproj.io/hook-finalizer` finalizer is Progressing `"Pending deletion"`,
/// whatever its kind (a ConfigMap being deleted included), as in Argo CD.
pub fn assess(obj: &Value) -> Option<Health> {
    if object::is_deleting(obj) && !object::has_hook_finalizer(obj) {
        return Some(Health::new(HealthStatus::Progressing, "Pending deletion"));
    }
    let gvk = Gvk::of(obj);
    let check: fn(&Value, &Gvk<'_>) -> Health = match (gvk.group, gvk.kind) {
        ("apps", "Deployment") => deployment::health,
        ("apps", "StatefulSet") => statefulset::health,
        ("apps", "ReplicaSet") => replicaset::health,
        ("apps", "DaemonSet") => daemonset::health,
        ("extensions" | "networking.k8s.io", "Ingress") => ingress::health,
        ("argoproj.io", "Workflow") => workflow::health,
        ("argoproj.io" | "plumb.dev", "Application") => application::health,
        ("apiregistration.k8s.io", "APIService") => apiservice::health,
        ("", "Service") => service::health,
        ("", "PersistentVolumeClaim") => pvc::health,
        ("", "Pod") => pod::health,
        ("batch", "Job") => job::health,
        ("autoscaling", "HorizontalPodAutoscaler") => hpa::health,
        _ => return None,
    };
    Some(check(obj, &gvk))
}

/// Argo CD's `IsWorse(current, new)`: whether `new` is worse than `current`.
pub fn is_worse(current: HealthStatus, new: HealthStatus) -> bool {
    new.severity() > current.severity()
}

/// App health: the worst of the resources' health by Argo CD's ordering
/// (Healthy < Suspended < Progressing < Missing < Degraded < Unknown, `IsWorse`);
/// Healthy for no resources. A `Missing` input counts as Missing.
///
/// This is the plain fold. Argo CD's controller additionally skips hooks, missing
/// resources and more before folding; [`app_health`] does that.
pub fn worst(iter: impl IntoIterator<Item = HealthStatus>) -> HealthStatus {
    iter.into_iter().fold(HealthStatus::Healthy, |acc, h| {
        if is_worse(acc, h) { h } else { acc }
    })
}

/// gitops-engine `hook.IsHook`: an Argo CD hook (not only `Skip`) or a Helm hook (not
/// `crd-install`). Hooks have no place in an app's health or its resource list.
pub fn is_hook(obj: &Value) -> bool {
    object::is_hook(obj)
}

/// Annotation that keeps a resource out of the app's health (`"true"`).
pub const ANNOTATION_IGNORE_HEALTHCHECK: &str = "argocd.argoproj.io/ignore-healthcheck";

/// One resource of an application, as the controller pairs them for aggregation.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppResource<'a> {
    /// The desired object (rendered from git), if any.
    pub target: Option<&'a Value>,
    /// The live object, if it exists in the cluster.
    pub live: Option<&'a Value>,
}

/// App health as Argo CD's controller aggregates it (`setApplicationHealth`):
///
/// - resources whose target is a `Skip` hook, and live hooks (Argo or Helm) are left out;
/// - a live object annotated `argocd.argoproj.io/ignore-healthcheck: "true"` is left out;
/// - a resource absent from the cluster is Missing but does **not** make the app worse;
/// - live objects without a check ([`check`] gives [`Source::None`]) are left out; every
///   other object is judged by [`check`] (user Lua, built-in, generic);
/// - a child `Application` (`argoproj.io`, and plumb's `plumb.dev`) that is Missing or
///   Unknown is left out;
/// - the app is the [`worst`] of the rest, starting from Healthy;
/// - if some non-hook resource was expected but none of them exists live, the app is
///   Missing (unless already worse).
///
/// Not modelled: the self-managing app (an app listing its own `Application` object,
/// which Argo CD skips) — callers should drop that resource themselves.
pub fn app_health<'a>(resources: impl IntoIterator<Item = AppResource<'a>>) -> HealthStatus {
    app_health_by(resources, |live| check(live).checked())
}

/// [`app_health`] with each live object's health from `judge` (what [`check`]`(live)
/// .checked()` gives): a caller that also records every resource's health judges each one
/// once and passes it here.
pub fn app_health_by<'a>(
    resources: impl IntoIterator<Item = AppResource<'a>>,
    mut judge: impl FnMut(&'a Value) -> Option<Health>,
) -> HealthStatus {
    let mut app = HealthStatus::Healthy;
    let mut contains_resources = false;
    let mut contains_live = false;
    for res in resources {
        if res.target.is_some_and(object::is_skip_hook) {
            continue;
        }
        if res
            .live
            .is_some_and(|live| object::is_hook(live) || object::is_ignored(live))
        {
            continue;
        }
        contains_resources = true;
        let Some(live) = res.live else {
            // Missing: shown per resource, but never aggregated into the app.
            continue;
        };
        contains_live = true;
        if object::annotation(live, ANNOTATION_IGNORE_HEALTHCHECK) == Some("true") {
            continue;
        }
        let Some(health) = judge(live) else {
            continue;
        };
        let gvk = Gvk::of(live);
        let child_app = gvk.kind == "Application"
            && matches!(gvk.group, "argoproj.io" | "plumb.dev")
            && matches!(health.status, HealthStatus::Missing | HealthStatus::Unknown);
        if child_app {
            continue;
        }
        if is_worse(app, health.status) {
            app = health.status;
        }
    }
    if contains_resources && !contains_live && is_worse(app, HealthStatus::Missing) {
        app = HealthStatus::Missing;
    }
    app
}

/// Shared by the per-kind test tables.
#[cfg(test)]
pub(crate) mod testutil {
    use super::{Health, HealthStatus, assess};
    use serde_json::Value;

    /// Asserts each `(name, object, status, message)` row through [`assess`].
    pub(crate) fn check_table(rows: &[(&str, Value, HealthStatus, &str)]) {
        for (name, obj, status, message) in rows {
            let got = assess(obj);
            assert_eq!(
                got,
                Some(Health::new(*status, *message)),
                "case {name}: got {got:?}"
            );
        }
    }

    /// Asserts each row through [`crate::builtin`] (Argo CD's kinds and the operator checks).
    pub(crate) fn check_builtin_table(rows: &[(&str, Value, HealthStatus, &str)]) {
        for (name, obj, status, message) in rows {
            let got = crate::builtin(obj);
            assert_eq!(
                got,
                Some(Health::new(*status, *message)),
                "case {name}: got {got:?}"
            );
        }
    }

    /// Whether [`crate::builtin`] has a check for `obj`.
    pub(crate) fn has_builtin(obj: &Value) -> bool {
        crate::builtin(obj).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HealthStatus::*;
    use serde_json::json;

    #[test]
    fn display_and_parse_use_argo_names() {
        for h in HealthStatus::BY_SEVERITY {
            assert_eq!(h.to_string().parse::<HealthStatus>(), Ok(h));
        }
        assert_eq!(Healthy.to_string(), "Healthy");
        assert!("healthy".parse::<HealthStatus>().is_err());
        assert!("".parse::<HealthStatus>().is_err());
    }

    #[test]
    fn is_worse_follows_argo_health_order() {
        // gitops-engine TestIsWorse
        assert!(is_worse(Healthy, Progressing));
        assert!(is_worse(Healthy, Degraded));
        assert!(!is_worse(Degraded, Progressing));
        // The full order, pairwise.
        let order = HealthStatus::BY_SEVERITY;
        for (i, a) in order.iter().enumerate() {
            for (j, b) in order.iter().enumerate() {
                assert_eq!(is_worse(*a, *b), j > i, "{a} -> {b}");
            }
        }
    }

    #[test]
    fn worst_folds_by_severity() {
        let rows: &[(&[HealthStatus], HealthStatus)] = &[
            (&[], Healthy),
            (&[Healthy, Healthy], Healthy),
            (&[Healthy, Suspended], Suspended),
            (&[Suspended, Progressing], Progressing),
            (&[Progressing, Missing], Missing),
            (&[Missing, Degraded, Progressing], Degraded),
            (&[Degraded, Unknown, Healthy], Unknown),
        ];
        for (input, want) in rows {
            assert_eq!(worst(input.iter().copied()), *want, "{input:?}");
        }
    }

    #[test]
    fn pending_deletion_applies_to_any_kind_without_hook_finalizer() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "deletionTimestamp": "2026-09-22T19:57:06Z"}
        });
        assert_eq!(
            assess(&cm),
            Some(Health::new(Progressing, "Pending deletion"))
        );
        // With the hook finalizer the built-in check runs (here: none for ConfigMap).
        let hook_cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "cfg",
                "deletionTimestamp": "2026-09-22T19:57:06Z",
                "finalizers": ["argocd.argoproj.io/hook-finalizer"]
            }
        });
        assert_eq!(assess(&hook_cm), None);
    }

    #[test]
    fn kinds_without_checks_have_no_health() {
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("extensions/v1beta1", "Deployment"),
            ("serving.knative.dev/v1", "Service"),
            ("batch/v1", "CronJob"),
            ("apps/v1", "ControllerRevision"),
        ] {
            let obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
            assert_eq!(assess(&obj), None, "{api_version} {kind}");
        }
    }

    fn deploy(name: &str, ready: bool) -> Value {
        let available = i64::from(ready);
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "generation": 1},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": available}
        })
    }

    #[test]
    fn app_health_follows_controller_rules() {
        let healthy = deploy("a", true);
        let progressing = deploy("b", false);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let hook_pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "migrate", "annotations": {"argocd.argoproj.io/hook": "PreSync"}},
            "spec": {"restartPolicy": "Never"},
            "status": {"phase": "Failed", "message": "boom"}
        });
        let ignored = json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "d", "annotations": {"argocd.argoproj.io/ignore-healthcheck": "true"}},
            "status": {"phase": "Lost"}
        });
        let child_unknown = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "child"},
            "status": {"health": {"status": "Unknown"}}
        });
        let child_degraded = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "child"},
            "status": {"health": {"status": "Degraded"}}
        });
        let skip_target = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "s", "annotations": {"argocd.argoproj.io/hook": "Skip"}}
        });
        let live = |v| AppResource {
            target: Some(v),
            live: Some(v),
        };
        let missing = |v| AppResource {
            target: Some(v),
            live: None,
        };

        let rows: Vec<(&str, Vec<AppResource<'_>>, HealthStatus)> = vec![
            ("no resources", vec![], Healthy),
            ("all healthy", vec![live(&healthy), live(&cm)], Healthy),
            (
                "one progressing",
                vec![live(&healthy), live(&progressing)],
                Progressing,
            ),
            (
                "missing does not degrade",
                vec![live(&healthy), missing(&progressing)],
                Healthy,
            ),
            (
                "nothing live is Missing",
                vec![missing(&healthy), missing(&cm)],
                Missing,
            ),
            (
                "hooks are skipped",
                vec![live(&healthy), live(&hook_pod)],
                Healthy,
            ),
            (
                "missing target that is a hook still expected",
                vec![missing(&hook_pod)],
                Missing,
            ),
            (
                "ignore-healthcheck",
                vec![live(&healthy), live(&ignored)],
                Healthy,
            ),
            (
                "child app Unknown skipped",
                vec![live(&healthy), live(&child_unknown)],
                Healthy,
            ),
            (
                "child app Degraded counts",
                vec![live(&healthy), live(&child_degraded)],
                Degraded,
            ),
            (
                "Skip target left out",
                vec![missing(&skip_target), live(&healthy)],
                Healthy,
            ),
            ("only Skip targets", vec![missing(&skip_target)], Healthy),
        ];
        for (name, resources, want) in rows {
            assert_eq!(app_health(resources), want, "{name}");
        }
    }
}
