//! plumb doctor: why an application stays OutOfSync, field by field — who rewrites each
//! differing field (with evidence), where git declares it, whether the app is in a sync loop,
//! and the fix, in the order of the "OutOfSync right after sync" runbook: stop declaring the
//! field, ignore it narrowly, server-side diff; sync for real drift.
//!
//! **Invariants:** pure — no I/O, no clock (`now` is an input); findings are data, not
//! errors; Secret values only ever appear masked. The CLI gathers the [`Inputs`] (the
//! Application, plumb-diff's comparison, live objects with `managedFields`, the admission and
//! autoscaling objects of the cluster, the kustomizations) and prints a [`Report`].
//!
//! Attribution runs [`checks::ALL`], one check per file with a stable code (`PD001`…); each
//! proposes candidates with a score and the best becomes the finding's cause. What follows
//! from a cause's kind (admission or not, the fixes' order, the preflight, `--fix`) is one
//! table, [`cause::CauseType::info`]. [`apply::plan`] turns a report into the file edits of
//! `plumb doctor --fix`, from file contents the caller reads. The verdict comes from the
//! Application's status (`status.rs`); [`health`] adds the app's and each resource's health.
//! Fixtures and golden outputs live under `tests/fixtures` and `tests/snapshots`
//! (`UPDATE_SNAPSHOTS=1` rewrites them).
//!
//! ```
//! use plumb_doctor::{Inputs, Verdict, diagnose};
//! let app = serde_json::json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
//!     "metadata": {"name": "web"}, "status": {"sync": {"status": "Synced", "revision": "abc"}}});
//! let report = diagnose(&Inputs { app: &app, diffs: &[], live: &[], context: &[],
//!     kustomizations: &[], now: std::time::SystemTime::UNIX_EPOCH });
//! assert_eq!(report.verdict, Verdict::InSync);
//! assert_eq!(report.to_json()["verdict"], "in-sync");
//! ```

pub mod admission;
pub mod apply;
pub mod cause;
pub mod checks;
pub mod fixes;
pub mod health;
pub mod managed;
pub mod report;
/// Label selectors (shared with ApplicationSet generators: plumb-core's).
pub use plumb_core::selector;
pub mod status;

pub use health::{AppHealth, ResourceHealth};
pub use report::{
    Cause, CauseType, DeclaredAt, Finding, Fix, LoopEvidence, Report, ResourceRef, Verdict,
};

use checks::{Candidate, Ctx, Field};
use plumb_core::ResourceKey;
use plumb_diff::compare::{ResourceDiff, Status};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// What a diagnosis looks at.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The Application object (`argoproj.io` or `plumb.dev`), with its status (history, sync,
    /// operationState).
    pub app: &'a Value,
    /// plumb-diff's comparison of the app (Modified ones have `fields()`; `declared` carries
    /// the origins that give `declaredAt`).
    pub diffs: &'a [ResourceDiff],
    /// The app's live objects as the cluster returned them (with `managedFields`).
    pub live: &'a [Value],
    /// Namespaces, MutatingWebhookConfigurations, MutatingAdmissionPolicies and bindings,
    /// HPAs, VPAs, Kyverno policies, Gatekeeper mutators, CRDs.
    pub context: &'a [Value],
    /// Repository-relative kustomization file → its parsed content (optional).
    pub kustomizations: &'a [(String, Value)],
    pub now: SystemTime,
}

/// One field to explain, before attribution.
struct Pending<'a> {
    diff: &'a ResourceDiff,
    path: String,
    desired: Option<Value>,
    live: Option<Value>,
}

/// Diagnoses an application. Findings are data, never errors: whatever is missing from the
/// inputs makes a cause `unknown`, not a failure.
/// What an Application's status alone says, without a comparison (a list of many apps):
/// `Loop` when the controller recognised one (`status.syncLoop`) or the status is OutOfSync
/// after repeated syncs of its target revision; `InSync` when Synced; `OutOfSync` when
/// OutOfSync; `None` when the status says nothing (never compared). `Drift` needs the
/// comparison ([`diagnose`]).
pub fn status_verdict(app: &Value) -> Option<Verdict> {
    let (status, _) = plumb_core::argo::model::ApplicationStatus::read_lenient(app);
    if status.sync_loop.is_some() {
        return Some(Verdict::Loop);
    }
    match status.sync.status.as_str() {
        "Synced" => Some(Verdict::InSync),
        "OutOfSync" => {
            let e = status::read(app).evidence;
            let at_target = e.revision.is_some()
                && e.target_revision
                    .as_ref()
                    .is_none_or(|t| Some(t) == e.revision.as_ref());
            Some(if at_target && e.is_loop() {
                Verdict::Loop
            } else {
                Verdict::OutOfSync
            })
        }
        _ => None,
    }
}

pub fn diagnose(inputs: &Inputs<'_>) -> Report {
    let app = inputs
        .app
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let app_ref = fixes::AppRef::of(inputs.app);
    let sync = status::read(inputs.app);
    let namespaces = inputs
        .context
        .iter()
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Namespace")
                && o.get("apiVersion").and_then(Value::as_str) == Some("v1")
        })
        .filter_map(|o| {
            let name = o.pointer("/metadata/name")?.as_str()?.to_string();
            let mut labels = selector::labels_of(o);
            labels
                .entry("kubernetes.io/metadata.name")
                .or_insert_with(|| Value::String(name.clone()));
            Some((name, labels))
        })
        .collect();
    let ctx = Ctx {
        context: inputs.context,
        namespaces,
        last_sync: sync.last_sync_at,
    };
    let live_by_key: BTreeMap<ResourceKey, &Value> = inputs
        .live
        .iter()
        .filter_map(|o| Some((ResourceKey::of(o)?, o)))
        .collect();

    let mut pending = Vec::new();
    for d in inputs.diffs {
        match d.status {
            Status::Equal => {}
            Status::Modified => {
                for c in d.fields() {
                    pending.push(Pending {
                        diff: d,
                        path: c.path,
                        desired: c.desired,
                        live: c.live,
                    });
                }
            }
            Status::Missing | Status::Extra => pending.push(Pending {
                diff: d,
                path: String::new(),
                desired: None,
                live: None,
            }),
        }
    }

    // Attribution.
    struct Attributed<'a> {
        p: Pending<'a>,
        cause: Cause,
        admission: bool,
        foreign_after_sync: bool,
        person_after_sync: bool,
    }
    let mut attributed = Vec::new();
    // Each live object's managedFields, resolved once for all its fields.
    let mut indexes: std::collections::HashMap<&ResourceKey, managed::Index> =
        std::collections::HashMap::new();
    for p in pending {
        let raw_live = live_by_key.get(&p.diff.key).copied();
        if p.path.is_empty() {
            let (what, why) = match p.diff.status {
                Status::Missing => ("missing", "in git, not in the cluster: a sync creates it"),
                _ => (
                    "extra",
                    "tracked by the app, not in git: a sync with prune deletes it",
                ),
            };
            attributed.push(Attributed {
                cause: Cause {
                    kind: CauseType::Unknown,
                    name: what.into(),
                    manager: None,
                    evidence: vec![why.into()],
                },
                admission: false,
                foreign_after_sync: true,
                person_after_sync: false,
                p,
            });
            continue;
        }
        let owners = raw_live
            .map(|l| {
                indexes
                    .entry(&p.diff.key)
                    .or_insert_with(|| managed::Index::of(l))
                    .owners(&p.path)
            })
            .unwrap_or_default();
        let foreign_after_sync = owners.iter().any(|o| {
            !managed::is_gitops(&o.manager)
                && match (o.at, ctx.last_sync) {
                    (Some(at), Some(s)) => at > s,
                    _ => false,
                }
        });
        let person_after_sync = owners.iter().any(|o| {
            managed::is_person(&o.manager)
                && match (o.at, ctx.last_sync) {
                    (Some(at), Some(s)) => at > s,
                    _ => true,
                }
        });
        let field = Field {
            key: &p.diff.key,
            pointer: &p.path,
            desired: p.desired.as_ref(),
            live_value: p.live.as_ref(),
            live: raw_live,
            desired_object: &p.diff.result.predicted_live,
            owners,
        };
        let mut candidates: Vec<Candidate> = checks::ALL
            .iter()
            .flat_map(|c| (c.run)(&ctx, &field))
            .collect();
        let (cause, admission) = choose(&mut candidates, &field);
        attributed.push(Attributed {
            p,
            cause,
            admission,
            foreign_after_sync,
            person_after_sync,
        });
    }

    // Verdict.
    let loop_evidence = sync.evidence.clone();
    let verdict = if attributed.is_empty() {
        Verdict::InSync
    } else if loop_evidence.revision.is_none()
        || loop_evidence
            .target_revision
            .as_ref()
            .is_some_and(|t| Some(t) != loop_evidence.revision.as_ref())
    {
        Verdict::OutOfSync
    } else if loop_evidence.is_loop() && attributed.iter().any(|a| !a.person_after_sync) {
        Verdict::Loop
    } else if attributed.iter().any(|a| a.foreign_after_sync) {
        Verdict::Drift
    } else {
        Verdict::OutOfSync
    };

    // declaredAt and fixes.
    let mut findings = Vec::new();
    let mut declared_cache = DeclaredCache::default();
    for a in &attributed {
        let d = a.p.diff;
        let (declared_at, patch_only, from_kustomization) =
            declared_at(inputs, d, &a.p.path, &mut declared_cache);
        // Drift (one sync restores git) — and a new revision not synced yet, which a sync applies.
        let drift = a.person_after_sync
            || (verdict == Verdict::Drift && a.foreign_after_sync)
            || verdict == Verdict::OutOfSync;
        // git no longer declares the field, but the last sync applied it (last-applied has
        // it): the difference is the removal the next sync makes, not a fight to settle in git.
        let pending_removal = !a.p.path.is_empty()
            && declared_at.is_none()
            && git_lacks(d, &a.p.path)
            && live_by_key
                .get(&d.key)
                .and_then(|l| plumb_diff::last_applied(l))
                .is_some_and(|la| la.pointer(&a.p.path).is_some());
        let fixes = if a.p.path.is_empty() {
            vec![fixes::sync_object(&app_ref, a.cause.name == "extra")]
        } else if pending_removal {
            vec![fixes::sync_removal(&app_ref)]
        } else {
            fixes::fixes(&fixes::FixInput {
                app: &app_ref,
                key: &d.key,
                path: &a.p.path,
                cause: a.cause.kind,
                manager: a.cause.manager.as_deref(),
                admission: a.admission,
                drift,
                declared_at: declared_at.as_ref(),
                patch_only: patch_only.as_ref(),
                from_kustomization: from_kustomization.as_ref().map(Option::as_ref),
            })
        };
        findings.push(Finding {
            resource: ResourceRef {
                group: d.key.group.clone(),
                kind: d.key.kind.clone(),
                namespace: d.key.namespace.clone(),
                name: d.key.name.clone(),
            },
            path: a.p.path.clone(),
            desired: a.p.desired.clone(),
            live: a.p.live.clone(),
            cause: a.cause.clone(),
            declared_at,
            fixes,
        });
    }
    Report {
        app,
        verdict,
        loop_evidence,
        health: Some(health::assess(inputs.diffs, &live_by_key)),
        findings,
    }
}

/// Picks the cause among the candidates. PD008 (the sync's own manager owns a value git never
/// sent) raises every admission candidate and joins its evidence; alone, it is the cause.
/// Returns the cause and whether the rewrite happened during admission.
fn choose(candidates: &mut Vec<Candidate>, field: &Field<'_>) -> (Cause, bool) {
    let rewrite = candidates
        .iter()
        .position(|c| c.code == checks::admission_rewrite::CHECK.code)
        .map(|i| candidates.remove(i));
    let has_admission = candidates.iter().any(|c| c.kind.is_admission());
    if let Some(r) = &rewrite {
        for c in candidates.iter_mut().filter(|c| c.kind.is_admission()) {
            c.score += checks::admission_rewrite::BOOST;
            c.evidence.extend(r.evidence.iter().cloned());
        }
        if !has_admission {
            candidates.push(r.clone());
        }
    }
    // Highest score first; ties in check order (stable sort).
    candidates.sort_by_key(|c| std::cmp::Reverse(c.score));
    let admission = rewrite.is_some();
    let Some(best) = candidates.first().cloned() else {
        let mut evidence = Vec::new();
        if field.owners.is_empty() {
            evidence.push(match (field.desired, field.live_value) {
                (Some(_), None) => "the cluster does not have the field and no manager owns it: something removes it, or the API server drops it".into(),
                _ => "no managedFields entry owns the field".into(),
            });
        } else {
            for o in &field.owners {
                evidence.push(format!("owned by {}", o.describe()));
            }
        }
        return (
            Cause {
                kind: CauseType::Unknown,
                name: "unknown".into(),
                manager: field.owners.first().map(|o| o.manager.clone()),
                evidence,
            },
            admission,
        );
    };
    let mut evidence = best.evidence.clone();
    for other in candidates.iter().skip(1) {
        evidence.push(format!(
            "[{}] also possible: {} {}",
            other.code,
            other.kind.as_str(),
            other.name
        ));
    }
    let manager = best
        .manager
        .clone()
        .or_else(|| field.owners.first().map(|o| o.manager.clone()));
    (
        Cause {
            kind: best.kind,
            name: best.name,
            manager,
            evidence,
        },
        admission || best.kind.is_admission(),
    )
}

/// Identity fields of a rendered object: they name the object or a list element, and a patch
/// repeats them without declaring anything.
fn is_identity(pointer: &str) -> bool {
    if matches!(
        pointer,
        "/apiVersion" | "/kind" | "/metadata/name" | "/metadata/namespace"
    ) {
        return true;
    }
    let toks = checks::tokens(pointer);
    match toks.as_slice() {
        [.., idx, last] => {
            idx.parse::<usize>().is_ok()
                && plumb_core::origin::ELEMENT_KEYS.contains(&last.as_str())
        }
        _ => false,
    }
}

/// Where git declares the field; the patch-only entry when the file sets nothing else that
/// does not differ; whether the file is a kustomization.
/// Whether the rendered object surely lacks the field at `path` (a pointer into live): its
/// parent maps into the rendered object and has no such key. `false` when it cannot tell
/// (no origins, or the parent does not map).
fn git_lacks(d: &ResourceDiff, path: &str) -> bool {
    let Some(declared) = &d.declared else {
        return false;
    };
    let Some((parent, leaf)) = path.rsplit_once('/') else {
        return false;
    };
    let parent_in_git = if parent.is_empty() {
        Some(String::new())
    } else {
        declared
            .translate(&d.result.normalized_live, parent)
            .or_else(|| declared.translate(&d.result.predicted_live, parent))
    };
    let leaf = plumb_core::pointer::unescape_token(leaf);
    parent_in_git
        .and_then(|p| declared.object.pointer(&p))
        .and_then(Value::as_object)
        .is_some_and(|m| !m.contains_key(leaf.as_ref()))
}

/// What [`declared_at`] computes once per resource and file rather than per field: the
/// desired pointers of a resource's differing fields, and whether a file is patch-only.
#[derive(Default)]
struct DeclaredCache<'a> {
    differing: std::collections::HashMap<&'a ResourceKey, std::collections::HashSet<String>>,
    only: std::collections::HashMap<(&'a ResourceKey, String), bool>,
}

fn declared_at<'a>(
    inputs: &Inputs<'a>,
    d: &'a ResourceDiff,
    path: &str,
    cache: &mut DeclaredCache<'a>,
) -> (
    Option<DeclaredAt>,
    Option<fixes::PulledIn>,
    Option<Option<report::KustomizationEdit>>,
) {
    let Some(declared) = &d.declared else {
        return (None, None, None);
    };
    if path.is_empty() {
        return (None, None, None);
    }
    let r = &d.result;
    let origin = declared
        .locate(&r.normalized_live, path)
        .or_else(|| declared.locate(&r.predicted_live, path));
    let Some(origin) = origin else {
        return (None, None, None);
    };
    let file = origin.file.to_string();
    let pulled = fixes::pulled_in(&file, inputs.kustomizations);
    let from_kustomization = inputs
        .kustomizations
        .iter()
        .find(|(k, _)| *k == file)
        .map(|(k, value)| fixes::kustomization_entry(k, value, &d.key, path));
    let at = DeclaredAt {
        file: file.clone(),
        line: origin.line,
        kustomization: pulled.as_ref().map(|p| p.kustomization.clone()),
    };
    // Patch-only: every origin in this file, over every resource, is an identity field or a
    // differing field of this resource.
    let only = pulled.as_ref().is_some_and(|p| p.is_patch()) && {
        let differing = cache.differing.entry(&d.key).or_insert_with(|| {
            d.fields()
                .iter()
                .filter_map(|c| {
                    declared
                        .translate(&r.normalized_live, &c.path)
                        .or_else(|| declared.translate(&r.predicted_live, &c.path))
                })
                .collect()
        });
        *cache.only.entry((&d.key, file.clone())).or_insert_with(|| {
            inputs.diffs.iter().all(|other| {
                let Some(od) = &other.declared else {
                    return true;
                };
                od.origins.iter().all(|(ptr, o)| {
                    *o.file != *file
                        || is_identity(ptr)
                        || (other.key == d.key && differing.contains(ptr))
                })
            })
        })
    };
    (Some(at), pulled.filter(|_| only), from_kustomization)
}

#[cfg(test)]
mod tests {
    use super::is_identity;

    /// The element keys are plumb-core's (`origin::ELEMENT_KEYS`); the doctor's own list
    /// lacked `topologyKey` and `type`, which a strategic-merge patch repeats to name a
    /// topology spread constraint or a condition just as it repeats a container's `name`.
    #[test]
    fn identity_fields_are_names_and_element_keys() {
        for (pointer, identity) in [
            ("/metadata/name", true),
            ("/kind", true),
            ("/spec/template/spec/containers/0/name", true),
            (
                "/spec/template/spec/containers/0/ports/1/containerPort",
                true,
            ),
            (
                "/spec/template/spec/containers/0/volumeMounts/0/mountPath",
                true,
            ),
            ("/spec/template/spec/hostAliases/0/ip", true),
            ("/spec/template/spec/tolerations/0/key", true),
            (
                "/spec/template/spec/topologySpreadConstraints/0/topologyKey",
                true,
            ),
            ("/status/conditions/0/type", true),
            ("/spec/template/spec/containers/0/image", false),
            ("/spec/replicas", false),
            ("/spec/strategy/type", false),
            ("/spec/template/spec/volumes/0/hostPath/type", false),
        ] {
            assert_eq!(is_identity(pointer), identity, "{pointer}");
        }
    }
}
