//! What the ApplicationSet controller does with what [`crate::generate`] produced, pure:
//! which Applications to create, update and delete, and the ApplicationSet's status, as
//! Argo CD's ApplicationSet controller decides them.
//!
//! - An Application is the ApplicationSet's when one of its `ownerReferences` carries the
//!   ApplicationSet's `uid`. A generated name held by an Application that is not the
//!   ApplicationSet's is left alone and named in the status (never taken over).
//! - `syncPolicy.applicationsSync`: `sync` (default) creates, updates and deletes;
//!   `create-update` never deletes; `create-delete` never updates; `create-only` only
//!   creates. A controller-wide policy may only restrict it ([`Policy::restricted_by`]).
//! - An update sets the generated `spec`, `labels`, `annotations` and `finalizers` on the
//!   stored Application, keeping the annotations Argo CD keeps (`argocd.argoproj.io/refresh`,
//!   notification state) and those `spec.preservedFields` names, and the values at
//!   `ignoreApplicationDifferences` JSON pointers as they are stored; an Application already so
//!   is not written.
//! - A deletion under `syncPolicy.preserveResourcesOnDeletion` first drops the Application's
//!   resources finalizer, so its resources stay in the cluster.
//! - The status: Argo CD's conditions `ErrorOccurred`, `ParametersGenerated` and
//!   `ResourcesUpToDate` (a transition time kept while a condition's status stays), and
//!   `resources`, one entry per generated Application with its sync and health status.
//!   After an error nothing is planned: an error never deletes an Application.

use crate::AppSetError;
use serde_json::{Map, Value, json};

/// The resources finalizer of an Application (Argo CD's).
pub const RESOURCES_FINALIZER: &str = "resources-finalizer.argocd.argoproj.io";

/// The finalizers the Application controller adds for PostDelete hooks (an update keeps them).
pub const POST_DELETE_FINALIZER: &str = "post-delete-finalizer.argocd.argoproj.io";

/// Annotations of a stored Application an update keeps (Argo CD's
/// `preservedAnnotations`).
pub const PRESERVED_ANNOTATIONS: &[&str] = &[
    "argocd.argoproj.io/refresh",
    "notified.notifications.argoproj.io",
];

/// `syncPolicy.applicationsSync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApplicationsSync {
    /// Create only.
    CreateOnly,
    /// Create and update.
    CreateUpdate,
    /// Create and delete.
    CreateDelete,
    /// Create, update and delete.
    Sync,
}

impl ApplicationsSync {
    /// Parses Argo CD's spelling.
    pub fn parse(s: &str) -> Option<ApplicationsSync> {
        Some(match s {
            "create-only" => ApplicationsSync::CreateOnly,
            "create-update" => ApplicationsSync::CreateUpdate,
            "create-delete" => ApplicationsSync::CreateDelete,
            "sync" => ApplicationsSync::Sync,
            _ => return None,
        })
    }

    fn updates(self) -> bool {
        matches!(
            self,
            ApplicationsSync::CreateUpdate | ApplicationsSync::Sync
        )
    }

    fn deletes(self) -> bool {
        matches!(
            self,
            ApplicationsSync::CreateDelete | ApplicationsSync::Sync
        )
    }
}

/// How one ApplicationSet's Applications are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub sync: ApplicationsSync,
    /// `syncPolicy.preserveResourcesOnDeletion`.
    pub preserve_resources: bool,
    /// `ignoreApplicationDifferences`: `(Application name or None for all, JSON pointers)`.
    pub ignore: Vec<(Option<String>, Vec<String>)>,
    /// `preservedFields.annotations` and `.labels`.
    pub preserved_annotations: Vec<String>,
    pub preserved_labels: Vec<String>,
}

impl Policy {
    /// The policy of `appset`'s spec, or one line naming the field that is wrong.
    pub fn of(appset: &Value) -> Result<Policy, AppSetError> {
        let name = appset
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let fail = |m: String| AppSetError(format!("ApplicationSet {name}: {m}"));
        let sp = appset.pointer("/spec/syncPolicy");
        let sync = match sp.and_then(|p| p.get("applicationsSync")) {
            None | Some(Value::Null) => ApplicationsSync::Sync,
            Some(Value::String(s)) => ApplicationsSync::parse(s).ok_or_else(|| {
                fail(format!(
                    "spec.syncPolicy.applicationsSync: {s:?} is not one of create-only, create-update, create-delete, sync"
                ))
            })?,
            Some(_) => {
                return Err(fail(
                    "spec.syncPolicy.applicationsSync: expected a string".into(),
                ));
            }
        };
        let preserve_resources = sp
            .and_then(|p| p.get("preserveResourcesOnDeletion"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut ignore = Vec::new();
        if let Some(list) = appset.pointer("/spec/ignoreApplicationDifferences") {
            let items = list
                .as_array()
                .ok_or_else(|| fail("spec.ignoreApplicationDifferences: expected a list".into()))?;
            for (i, it) in items.iter().enumerate() {
                let at = format!("spec.ignoreApplicationDifferences[{i}]");
                if it
                    .get("jqPathExpressions")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
                {
                    return Err(fail(format!(
                        "{at}.jqPathExpressions: not supported by plumb (use jsonPointers)"
                    )));
                }
                let pointers = strings(it.get("jsonPointers"))
                    .map_err(|m| fail(format!("{at}.jsonPointers: {m}")))?;
                for p in &pointers {
                    if !p.is_empty() && !p.starts_with('/') {
                        return Err(fail(format!(
                            "{at}.jsonPointers: {p:?} is not a JSON pointer"
                        )));
                    }
                }
                let app = it
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string);
                ignore.push((app, pointers));
            }
        }
        let preserved = |f: &str| {
            strings(appset.pointer(&format!("/spec/preservedFields/{f}")))
                .map_err(|m| fail(format!("spec.preservedFields.{f}: {m}")))
        };
        Ok(Policy {
            sync,
            preserve_resources,
            ignore,
            preserved_annotations: preserved("annotations")?,
            preserved_labels: preserved("labels")?,
        })
    }

    /// This policy, no more permissive than `limit` (Argo CD's controller-wide `--policy`
    /// applies unless the ApplicationSet's own is stricter).
    pub fn restricted_by(mut self, limit: Option<ApplicationsSync>) -> Policy {
        if let Some(limit) = limit {
            let updates = self.sync.updates() && limit.updates();
            let deletes = self.sync.deletes() && limit.deletes();
            self.sync = match (updates, deletes) {
                (true, true) => ApplicationsSync::Sync,
                (true, false) => ApplicationsSync::CreateUpdate,
                (false, true) => ApplicationsSync::CreateDelete,
                (false, false) => ApplicationsSync::CreateOnly,
            };
        }
        self
    }
}

/// Argo CD's rule for ApplicationSets outside the control namespace: their template may not
/// choose the project per parameter set (`{{…}}` in `spec.template.spec.project`), or one
/// namespace's ApplicationSet could place Applications in any project.
pub fn check_project(appset: &Value, control_namespace: &str) -> Result<(), AppSetError> {
    let ns = appset
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let project = appset
        .pointer("/spec/template/spec/project")
        .and_then(Value::as_str)
        .unwrap_or("");
    if ns != control_namespace && project.contains("{{") {
        let name = appset
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(AppSetError(format!(
            "ApplicationSet {name}: spec.template.spec.project: a templated project ({project:?}) is only allowed for an ApplicationSet in the control namespace {control_namespace}"
        )));
    }
    Ok(())
}

fn strings(v: Option<&Value>) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| {
                s.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| "expected a list of strings".to_string())
            })
            .collect(),
        Some(_) => Err("expected a list of strings".into()),
    }
}

/// What to do with one ApplicationSet's Applications.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// New Applications (owner reference set).
    pub create: Vec<Value>,
    /// Stored Applications with the generated content set (their `resourceVersion` kept, so
    /// a write conflicts with one made in between).
    pub update: Vec<Value>,
    /// Applications to delete: `(name, drop the resources finalizer first)`.
    pub delete: Vec<(String, bool)>,
    /// Generated names held by Applications that are not this ApplicationSet's.
    pub not_owned: Vec<String>,
}

/// The owner reference an ApplicationSet's Applications carry.
pub fn owner_reference(appset: &Value) -> Value {
    json!({
        "apiVersion": appset.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": "ApplicationSet",
        "name": appset.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "uid": appset.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Whether `app` is owned by the ApplicationSet whose uid is `uid`.
pub fn owned_by(app: &Value, uid: &str) -> bool {
    !uid.is_empty()
        && app
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
            })
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The plan for `appset`, given the Applications it generated and those stored in its
/// namespace (`existing`).
pub fn plan(appset: &Value, generated: &[Value], existing: &[Value], policy: &Policy) -> Plan {
    let uid = appset
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let owner = owner_reference(appset);
    let mut out = Plan::default();
    let by_name: std::collections::HashMap<&str, &Value> =
        existing.iter().map(|e| (name_of(e), e)).collect();
    let generated_names: std::collections::HashSet<&str> = generated.iter().map(name_of).collect();
    for g in generated {
        let name = name_of(g);
        match by_name.get(name).copied() {
            None => {
                let mut app = g.clone();
                if let Some(meta) = app.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("ownerReferences".into(), json!([owner.clone()]));
                }
                out.create.push(app);
            }
            Some(e) if !owned_by(e, uid) => out.not_owned.push(name.to_string()),
            Some(e) => {
                // One being deleted is left to its finalizers (its spec and finalizers are not
                // rewritten under them); it is created again once it is gone.
                let deleting = e
                    .pointer("/metadata/deletionTimestamp")
                    .is_some_and(|t| !t.is_null());
                if !policy.sync.updates() || deleting {
                    continue;
                }
                let updated = updated(e, g, policy);
                if &updated != e {
                    out.update.push(updated);
                }
            }
        }
    }
    if policy.sync.deletes() {
        for e in existing {
            let name = name_of(e);
            if owned_by(e, uid) && !generated_names.contains(name) {
                let holds = e
                    .pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|f| {
                        f.iter().any(|x| {
                            x.as_str()
                                .is_some_and(|s| s.starts_with(RESOURCES_FINALIZER))
                        })
                    });
                out.delete
                    .push((name.to_string(), policy.preserve_resources && holds));
            }
        }
    }
    out
}

/// The stored Application `existing` with the generated content of `generated` set.
fn updated(existing: &Value, generated: &Value, policy: &Policy) -> Value {
    let mut out = existing.clone();
    let name = name_of(existing).to_string();
    let stored_meta = existing.get("metadata").cloned().unwrap_or(json!({}));
    let gen_meta = generated.get("metadata").cloned().unwrap_or(json!({}));
    let keep = |field: &str, extra: &[String], always: &[&str]| -> Value {
        let mut m: Map<String, Value> = gen_meta
            .get(field)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some(stored) = stored_meta.get(field).and_then(Value::as_object) {
            for (k, v) in stored {
                if always.contains(&k.as_str()) || extra.iter().any(|e| e == k) {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(m)
    };
    let annotations = keep(
        "annotations",
        &policy.preserved_annotations,
        PRESERVED_ANNOTATIONS,
    );
    let labels = keep("labels", &policy.preserved_labels, &[]);
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        for (field, v) in [("annotations", annotations), ("labels", labels)] {
            if v.as_object().is_some_and(Map::is_empty) {
                meta.remove(field);
            } else {
                meta.insert(field.into(), v);
            }
        }
        // The generated finalizers, plus the post-delete ones the Application controller adds
        // (Argo CD keeps those too): never a write war with it.
        let mut finalizers: Vec<Value> = gen_meta
            .get("finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for f in stored_meta
            .get("finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if f.as_str()
                .is_some_and(|s| s.starts_with(POST_DELETE_FINALIZER))
                && !finalizers.contains(f)
            {
                finalizers.push(f.clone());
            }
        }
        if finalizers.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), Value::Array(finalizers));
        }
    }
    if let Some(obj) = out.as_object_mut() {
        obj.insert(
            "spec".into(),
            generated.get("spec").cloned().unwrap_or(json!({})),
        );
    }
    // What ignoreApplicationDifferences names stays as stored.
    for (app, pointers) in &policy.ignore {
        if app.as_ref().is_some_and(|a| *a != name) {
            continue;
        }
        for p in pointers {
            match existing.pointer(p) {
                Some(v) => set_pointer(&mut out, p, v.clone()),
                None => remove_pointer(&mut out, p),
            }
        }
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("~1", "/").replace("~0", "~")
}

fn set_pointer(doc: &mut Value, pointer: &str, v: Value) {
    if pointer.is_empty() {
        *doc = v;
        return;
    }
    let parts: Vec<String> = pointer[1..].split('/').map(unescape).collect();
    let mut cur = doc;
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match cur {
            Value::Object(m) => {
                if last {
                    m.insert(p.clone(), v);
                    return;
                }
                cur = m.entry(p.clone()).or_insert_with(|| json!({}));
            }
            Value::Array(a) => {
                let Some(slot) = p.parse::<usize>().ok().and_then(|i| a.get_mut(i)) else {
                    return;
                };
                if last {
                    *slot = v;
                    return;
                }
                cur = slot;
            }
            _ => return,
        }
    }
}

fn remove_pointer(doc: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = unescape(last);
    match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(&last);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// The ApplicationSet's status after a reconcile: `result` is the generation's outcome
/// (the generated Applications, or the error), `stored` the Applications as they are now
/// (for `resources`), `now` an RFC 3339 time for new transitions.
pub fn status(
    appset: &Value,
    result: Result<&[Value], &str>,
    stored: &[Value],
    not_owned: &[String],
    now: &str,
) -> Value {
    let old: Vec<Value> = appset
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let cond = |ty: &str, status: bool, reason: &str, message: &str| -> Value {
        let st = if status { "True" } else { "False" };
        let since = old
            .iter()
            .find(|c| c["type"] == ty && c["status"] == st)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| Value::String(now.to_string()));
        json!({"type": ty, "status": st, "reason": reason, "message": message,
               "lastTransitionTime": since})
    };
    match result {
        Err(e) => json!({
            "conditions": [
                cond("ErrorOccurred", true, "ApplicationGenerationFromParamsError", e),
                cond("ParametersGenerated", false, "ErrorOccurred", e),
                cond("ResourcesUpToDate", false, "ApplicationGenerationFromParamsError", e),
            ],
            "resources": appset.pointer("/status/resources").cloned().unwrap_or(json!([])),
        }),
        Ok(generated) => {
            let up_to_date = not_owned.is_empty();
            let message = if up_to_date {
                "All applications have been generated successfully".to_string()
            } else {
                format!(
                    "Applications exist that this ApplicationSet does not own: {}",
                    not_owned.join(", ")
                )
            };
            let by_name: std::collections::HashMap<&str, &Value> =
                stored.iter().map(|a| (name_of(a), a)).collect();
            let resources: Vec<Value> = generated
                .iter()
                .map(|g| {
                    let name = name_of(g);
                    let s = by_name.get(name).copied();
                    let st = |p: &str| {
                        s.and_then(|a| a.pointer(p))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    let (group, version) = g
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .split_once('/')
                        .unwrap_or(("", ""));
                    let mut r = json!({"group": group, "version": version,
                        "kind": "Application", "name": name,
                        "namespace": g.pointer("/metadata/namespace").cloned().unwrap_or(Value::Null)});
                    if !st("/status/sync/status").is_empty() {
                        r["status"] = json!(st("/status/sync/status"));
                    }
                    if !st("/status/health/status").is_empty() {
                        r["health"] = json!({"status": st("/status/health/status")});
                    }
                    r
                })
                .collect();
            json!({
                "conditions": [
                    cond("ErrorOccurred", !up_to_date, if up_to_date { "ApplicationSetUpToDate" } else { "ApplicationNotOwned" }, &message),
                    cond("ParametersGenerated", true, "ParametersGenerated", "Successfully generated parameters for all Applications"),
                    cond("ResourcesUpToDate", up_to_date, if up_to_date { "ApplicationSetUpToDate" } else { "ApplicationNotOwned" }, &message),
                ],
                "resources": resources,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn appset(sync_policy: Value) -> Value {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "ApplicationSet",
               "metadata": {"name": "guestbook", "namespace": "plumb", "uid": "u-1"},
               "spec": {"syncPolicy": sync_policy,
                        "ignoreApplicationDifferences": [{"jsonPointers": ["/spec/source/targetRevision"]}],
                        "preservedFields": {"labels": ["team"]}}})
    }

    fn app(name: &str, rev: &str, owner: Option<&str>) -> Value {
        let mut a = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": "plumb",
                         "labels": {"gen": "yes"},
                         "finalizers": [RESOURCES_FINALIZER]},
            "spec": {"project": "default",
                     "source": {"repoURL": "https://git.example.com/r.git", "path": name, "targetRevision": rev},
                     "destination": {"server": "https://kubernetes.default.svc", "namespace": name}}});
        if let Some(uid) = owner {
            a["metadata"]["ownerReferences"] = json!([{"uid": uid, "kind": "ApplicationSet"}]);
            a["metadata"]["resourceVersion"] = json!("7");
        }
        a
    }

    #[test]
    fn each_policy_creates_updates_and_deletes_as_argo_cd() {
        let generated = vec![app("a", "HEAD", None), app("b", "HEAD", None)];
        let mut stale = app("b", "HEAD", Some("u-1"));
        stale["spec"]["source"]["path"] = json!("old");
        let existing = vec![
            stale,
            app("gone", "HEAD", Some("u-1")),
            app("c", "HEAD", None),
        ];
        let count = |sp: Value| {
            let set = appset(sp);
            let p = plan(&set, &generated, &existing, &Policy::of(&set).unwrap());
            (p.create.len(), p.update.len(), p.delete.len())
        };
        assert_eq!(count(json!({})), (1, 1, 1));
        assert_eq!(count(json!({"applicationsSync": "create-only"})), (1, 0, 0));
        assert_eq!(
            count(json!({"applicationsSync": "create-update"})),
            (1, 1, 0)
        );
        assert_eq!(
            count(json!({"applicationsSync": "create-delete"})),
            (1, 0, 1)
        );
        let set = appset(json!({}));
        let p = plan(&set, &generated, &existing, &Policy::of(&set).unwrap());
        assert_eq!(
            p.create[0]["metadata"]["ownerReferences"][0]["uid"], "u-1",
            "a created Application is owned"
        );
        assert_eq!(p.update[0]["spec"]["source"]["path"], "b");
        assert_eq!(p.update[0]["metadata"]["resourceVersion"], "7");
        assert_eq!(p.delete, vec![("gone".to_string(), false)]);
        // A name held by an Application of someone else is reported, not taken.
        let taken = vec![app("a", "HEAD", Some("other"))];
        let p = plan(&set, &generated[..1], &taken, &Policy::of(&set).unwrap());
        assert_eq!((p.create.len(), p.update.len()), (0, 0));
        assert_eq!(p.not_owned, ["a"]);
    }

    #[test]
    fn preserve_resources_drops_the_finalizer_and_ignored_fields_stay_as_stored() {
        let set = appset(json!({"preserveResourcesOnDeletion": true}));
        let policy = Policy::of(&set).unwrap();
        let mut stored = app("a", "v2", Some("u-1"));
        stored["metadata"]["labels"]["team"] = json!("blue");
        stored["metadata"]["annotations"] = json!({"argocd.argoproj.io/refresh": "hard"});
        let gone = app("gone", "HEAD", Some("u-1"));
        let p = plan(
            &set,
            &[app("a", "HEAD", None)],
            &[stored.clone(), gone],
            &policy,
        );
        assert_eq!(p.delete, vec![("gone".to_string(), true)]);
        // Only the target revision differs, and it is ignored: nothing to write.
        assert!(p.update.is_empty(), "{:?}", p.update);
        // The post-delete finalizer the Application controller added is kept.
        let mut hooked = stored.clone();
        hooked["metadata"]["finalizers"] = json!([RESOURCES_FINALIZER, POST_DELETE_FINALIZER]);
        assert!(
            plan(&set, &[app("a", "HEAD", None)], &[hooked], &policy)
                .update
                .is_empty()
        );
        // An Application being deleted is never rewritten.
        let mut deleting = stored.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-12-05T00:00:00Z");
        let mut g = app("a", "HEAD", None);
        g["spec"]["project"] = json!("other");
        assert!(plan(&set, &[g], &[deleting], &policy).update.is_empty());
        // A change elsewhere is written, with the ignored field, a preserved label and
        // Argo CD's refresh annotation as stored.
        let mut g = app("a", "HEAD", None);
        g["spec"]["destination"]["namespace"] = json!("moved");
        stored["metadata"]["annotations"]["other"] = json!("dropped: not generated");
        let p = plan(&set, &[g], &[stored], &policy);
        let u = &p.update[0];
        assert_eq!(u["spec"]["destination"]["namespace"], "moved");
        assert_eq!(u["spec"]["source"]["targetRevision"], "v2");
        assert_eq!(
            u["metadata"]["labels"],
            json!({"gen": "yes", "team": "blue"})
        );
        assert_eq!(
            u["metadata"]["annotations"],
            json!({"argocd.argoproj.io/refresh": "hard"})
        );
    }

    #[test]
    fn bad_policies_are_one_line_naming_the_field() {
        let e = Policy::of(&appset(json!({"applicationsSync": "create"}))).unwrap_err();
        assert_eq!(
            e.0,
            "ApplicationSet guestbook: spec.syncPolicy.applicationsSync: \"create\" is not one of create-only, create-update, create-delete, sync"
        );
        let mut set = appset(json!({}));
        set["spec"]["ignoreApplicationDifferences"] = json!([{"jqPathExpressions": [".spec"]}]);
        assert!(
            Policy::of(&set)
                .unwrap_err()
                .0
                .contains("jqPathExpressions: not supported")
        );
    }

    #[test]
    fn a_templated_project_needs_the_control_namespace() {
        let mut set = appset(json!({}));
        set["spec"]["template"] = json!({"spec": {"project": "{{ .team }}"}});
        assert!(check_project(&set, "plumb").is_ok());
        let e = check_project(&set, "argocd").unwrap_err().0;
        assert!(e.contains("spec.template.spec.project"), "{e}");
        set["spec"]["template"]["spec"]["project"] = json!("default");
        assert!(check_project(&set, "argocd").is_ok());
    }

    #[test]
    fn a_controller_policy_only_restricts() {
        let p = Policy::of(&appset(json!({"applicationsSync": "create-delete"}))).unwrap();
        assert_eq!(
            p.clone()
                .restricted_by(Some(ApplicationsSync::CreateUpdate))
                .sync,
            ApplicationsSync::CreateOnly
        );
        assert_eq!(p.restricted_by(None).sync, ApplicationsSync::CreateDelete);
    }

    #[test]
    fn status_conditions_keep_their_transition_time_and_an_error_keeps_resources() {
        let set = appset(json!({}));
        let generated = vec![app("a", "HEAD", None)];
        let mut stored = app("a", "HEAD", Some("u-1"));
        stored["status"] = json!({"sync": {"status": "Synced"}, "health": {"status": "Healthy"}});
        let s = status(&set, Ok(&generated), &[stored], &[], "2026-12-05T00:00:00Z");
        assert_eq!(s["conditions"][0]["type"], "ErrorOccurred");
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(
            s["resources"],
            json!([{"group": "plumb.dev", "version": "v1alpha1", "kind": "Application",
                    "name": "a", "namespace": "plumb", "status": "Synced",
                    "health": {"status": "Healthy"}}])
        );
        let mut later = set.clone();
        later["status"] = s;
        let again = status(&later, Ok(&generated), &[], &[], "2026-12-05T01:00:00Z");
        assert_eq!(
            again["conditions"][1]["lastTransitionTime"],
            "2026-12-05T00:00:00Z"
        );
        let mut failing = later.clone();
        failing["status"] = again;
        let e = status(
            &failing,
            Err("ApplicationSet guestbook: spec.generators[0]: template: x"),
            &[],
            &[],
            "2026-12-05T02:00:00Z",
        );
        assert_eq!(e["conditions"][0]["status"], "True");
        assert_eq!(
            e["conditions"][0]["lastTransitionTime"],
            "2026-12-05T02:00:00Z"
        );
        assert_eq!(
            e["resources"][0]["name"], "a",
            "an error keeps the resources listed"
        );
    }
}
