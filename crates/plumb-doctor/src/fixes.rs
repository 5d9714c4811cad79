//! The fixes, in the seed's order: (1) stop declaring the field in git, (2) ignore it narrowly
//! with `RespectIgnoreDifferences=true`, (3) server-side diff for admission noise; `sync` for
//! real drift. Never an ignore rule for a whole object or for `/spec`.

use crate::report::{
    CauseType, DeclaredAt, Fix, IgnoreDifferences, KustomizationEdit, ServerSideDiff, StopAction,
    StopDeclaring, SyncFix,
};
use plumb_core::ResourceKey;
use serde_json::{Value, json};

/// Where a repository file is pulled in by a kustomization.
#[derive(Debug, Clone, PartialEq)]
pub struct PulledIn {
    pub kustomization: String,
    /// `patches`, `patchesStrategicMerge`, `patchesJson6902`, `resources`, `components`.
    pub field: String,
    pub index: usize,
    pub entry: Value,
}

impl PulledIn {
    pub fn is_patch(&self) -> bool {
        self.field.starts_with("patches")
    }
}

/// Joins a kustomization's directory with a relative path, resolving `.` and `..`.
fn join(dir: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for p in rel.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The kustomization (and its entry) that pulls `file` in; patch entries first.
pub fn pulled_in(file: &str, kustomizations: &[(String, Value)]) -> Option<PulledIn> {
    let mut found: Option<PulledIn> = None;
    for (kpath, k) in kustomizations {
        let dir = kpath.rsplit_once('/').map_or("", |(d, _)| d);
        for field in [
            "patches",
            "patchesStrategicMerge",
            "patchesJson6902",
            "resources",
            "components",
        ] {
            let Some(Value::Array(entries)) = k.get(field) else {
                continue;
            };
            for (i, e) in entries.iter().enumerate() {
                let rel = match e {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(_) => e.get("path").and_then(Value::as_str),
                    _ => None,
                };
                if rel.is_some_and(|r| join(dir, r) == file) {
                    let p = PulledIn {
                        kustomization: kpath.clone(),
                        field: field.into(),
                        index: i,
                        entry: e.clone(),
                    };
                    if p.is_patch() {
                        return Some(p);
                    }
                    found.get_or_insert(p);
                }
            }
        }
    }
    found
}

/// The Application a fix's command names, and whose CLI syncs it: `plumb app sync` for a
/// `plumb.dev` Application, `argocd app sync` for an `argoproj.io` one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRef {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (empty when the object has none).
    pub namespace: String,
    /// The Application is plumb's own (`plumb.dev`), synced with `plumb app sync`.
    pub plumb: bool,
}

impl AppRef {
    /// The name, namespace and API group of an Application object.
    pub fn of(app: &Value) -> Self {
        let text = |p: &str| app.pointer(p).and_then(Value::as_str).unwrap_or("");
        let group = text("/apiVersion").split_once('/').map_or("", |(g, _)| g);
        Self {
            name: text("/metadata/name").to_string(),
            namespace: text("/metadata/namespace").to_string(),
            plumb: group == plumb_core::PLUMB_GROUP,
        }
    }

    /// The command that syncs the app (`--prune`: one that deletes what git no longer has).
    /// plumb's CLI names the namespace with `-N` unless it is `plumb app`'s default; Argo CD's
    /// names an app outside its control namespace `NAMESPACE/NAME` (apps in any namespace),
    /// and the doctor takes `argocd`, Argo CD's default, as that control namespace.
    pub fn sync_command(&self, prune: bool) -> String {
        let ns = self.namespace.as_str();
        let mut command = match (self.plumb, ns) {
            (true, "" | plumb_core::PLUMB_APP_NAMESPACE) => format!("plumb app sync {}", self.name),
            (true, ns) => format!("plumb app sync {} -N {ns}", self.name),
            (false, "" | plumb_core::ARGOCD_NAMESPACE) => format!("argocd app sync {}", self.name),
            (false, ns) => format!("argocd app sync {ns}/{}", self.name),
        };
        if prune {
            command.push_str(" --prune");
        }
        command
    }
}

/// What the fix builder needs to know about one finding.
#[derive(Debug)]
pub struct FixInput<'a> {
    /// The Application, for the sync command.
    pub app: &'a AppRef,
    pub key: &'a ResourceKey,
    pub path: &'a str,
    pub cause: CauseType,
    pub manager: Option<&'a str>,
    /// The writer is an admission step (PD008 fired, or an admission cause).
    pub admission: bool,
    /// Drift: a later write by someone else that one sync restores.
    pub drift: bool,
    pub declared_at: Option<&'a DeclaredAt>,
    /// `Some` when the file only sets fields that differ here (plus identity fields) and a
    /// kustomization pulls it in as a patch: deleting it is the whole change.
    pub patch_only: Option<&'a PulledIn>,
    /// The manifest line is a kustomization's own field (`replicas:`, `images:`): `Some`, with
    /// the list entry to remove when plumb can name it (a `replicas` entry).
    pub from_kustomization: Option<Option<&'a KustomizationEdit>>,
}

/// The entry of kustomization `file` (parsed: `value`) that sets `path` of `key`, when it is
/// one plumb can name: a `replicas` entry for `/spec/replicas`.
pub fn kustomization_entry(
    file: &str,
    value: &Value,
    key: &ResourceKey,
    path: &str,
) -> Option<KustomizationEdit> {
    if path != "/spec/replicas" {
        return None;
    }
    let entries = value.get("replicas")?.as_array()?;
    let index = entries
        .iter()
        .position(|e| e.get("name").and_then(Value::as_str) == Some(key.name.as_str()))?;
    Some(KustomizationEdit {
        file: file.to_string(),
        field: "replicas".into(),
        index,
        entry: entries[index].clone(),
    })
}

/// The fixes for one finding, the one to apply first.
pub fn fixes(i: &FixInput<'_>) -> Vec<Fix> {
    let mut out = Vec::new();
    // The cause's remedy (`crate::cause`): a person's edit, or a writer nobody can name, is
    // restored by a sync — removing the field from git on no evidence could delete what the
    // app needs.
    if i.cause.restored_by_sync(i.admission) {
        out.push(sync(i.app));
        return out;
    }
    out.push(stop_declaring(i));
    let by_manager = i.cause.info().ignore_by_manager
        && i.manager
            .is_some_and(|m| !crate::managed::is_gitops(m) && !m.is_empty());
    if let Some(f) = ignore(i, by_manager) {
        out.push(f);
    }
    if i.admission || i.cause.is_admission() {
        out.push(Fix::ServerSideDiff(ServerSideDiff {
            annotation: format!("{}: ServerSideDiff=true", plumb_core::COMPARE_OPTIONS_ANNOTATION),
            yaml: format!(
                "metadata:\n  annotations:\n    {}: ServerSideDiff=true\n",
                plumb_core::COMPARE_OPTIONS_ANNOTATION
            ),
            note: "the dry run passes through admission, so the rewrite shows on both sides and stops being a difference; it does not help against a controller that writes later".into(),
        }));
    }
    out
}

/// The fix for a whole object git has and the cluster lacks (a sync creates it) or the
/// cluster has and git lacks (a sync with prune deletes it).
pub fn sync_object(app: &AppRef, extra: bool) -> Fix {
    if !extra {
        return Fix::Sync(SyncFix {
            command: app.sync_command(false),
            note: "one sync creates it (with automated sync on, the controller does it on its own)"
                .into(),
        });
    }
    Fix::Sync(SyncFix {
        command: app.sync_command(true),
        note: "one sync with prune deletes it (with automated prune on, the controller does it on its own)"
            .into(),
    })
}

/// git no longer declares the field the last sync applied: the next sync stops applying it.
pub fn sync_removal(app: &AppRef) -> Fix {
    Fix::Sync(SyncFix {
        command: app.sync_command(false),
        note: "git no longer declares this field (the last sync's last-applied still does): the next sync stops applying it"
            .into(),
    })
}

/// One sync restores git's value.
pub fn sync(app: &AppRef) -> Fix {
    Fix::Sync(SyncFix {
        command: app.sync_command(false),
        note: "one sync applies git's value (with selfHeal on, the controller does it on its own)"
            .into(),
    })
}

fn stop_declaring(i: &FixInput<'_>) -> Fix {
    let Some(d) = i.declared_at else {
        return Fix::StopDeclaring(StopDeclaring {
            action: StopAction::RemoveLines,
            file: None,
            lines: Vec::new(),
            kustomization: None,
            description: format!(
                "stop declaring {} in git's {} {} (the renderer gave no source locations)",
                i.path, i.key.kind, i.key.name
            ),
        });
    };
    if let Some(p) = i.patch_only {
        let entry = match &p.entry {
            Value::String(s) => format!("- {s}"),
            e => format!(
                "- path: {}",
                e.get("path").and_then(Value::as_str).unwrap_or("")
            ),
        };
        return Fix::StopDeclaring(StopDeclaring {
            action: StopAction::DeleteFile,
            file: Some(d.file.clone()),
            lines: Vec::new(),
            kustomization: Some(KustomizationEdit {
                file: p.kustomization.clone(),
                field: p.field.clone(),
                index: p.index,
                entry: p.entry.clone(),
            }),
            description: format!(
                "delete {} (a patch that only sets this field) and its entry `{entry}` in {}'s {} (with any comment above it)",
                d.file, p.kustomization, p.field
            ),
        });
    }
    match i.from_kustomization {
        // A kustomization's own field: remove the whole list entry (one line of it would
        // leave the kustomization invalid), or say what to edit when plumb cannot name it.
        Some(Some(edit)) => Fix::StopDeclaring(StopDeclaring {
            action: StopAction::RemoveEntry,
            file: Some(d.file.clone()),
            lines: Vec::new(),
            kustomization: Some(edit.clone()),
            description: format!(
                "remove {}[{}] (it sets {}) from {}, and the `{}:` key if nothing is left under it",
                edit.field, edit.index, i.path, d.file, edit.field
            ),
        }),
        Some(None) => Fix::StopDeclaring(StopDeclaring {
            action: StopAction::Edit,
            file: Some(d.file.clone()),
            lines: Vec::new(),
            kustomization: None,
            description: format!(
                "edit {} at line {} so the kustomization no longer sets {} (a kustomization field)",
                d.file, d.line, i.path
            ),
        }),
        None => Fix::StopDeclaring(StopDeclaring {
            action: StopAction::RemoveLines,
            file: Some(d.file.clone()),
            lines: vec![d.line],
            kustomization: None,
            description: format!("remove line {} of {} (it sets {})", d.line, d.file, i.path),
        }),
    }
}

fn ignore(i: &FixInput<'_>, by_manager: bool) -> Option<Fix> {
    // Never the whole object, never all of /spec.
    if i.path.is_empty() || i.path == "/spec" || i.path == "/" {
        return None;
    }
    let mut rule = serde_json::Map::new();
    rule.insert("group".into(), json!(i.key.group));
    rule.insert("kind".into(), json!(i.key.kind));
    rule.insert("name".into(), json!(i.key.name));
    let (list_key, item) = match (by_manager, i.manager) {
        (true, Some(m)) => ("managedFieldsManagers", m.to_string()),
        _ => ("jsonPointers", i.path.to_string()),
    };
    rule.insert(list_key.into(), json!([item]));
    let yaml = format!(
        "spec:\n  ignoreDifferences:\n    - group: {}\n      kind: {}\n      name: {}\n      {list_key}:\n        - {}\n  syncPolicy:\n    syncOptions:\n      - RespectIgnoreDifferences=true\n",
        yaml_str(&i.key.group),
        yaml_str(&i.key.kind),
        yaml_str(&i.key.name),
        yaml_str(&item)
    );
    Some(Fix::IgnoreDifferences(IgnoreDifferences {
        rule: Value::Object(rule),
        sync_options: vec!["RespectIgnoreDifferences=true".into()],
        yaml,
    }))
}

/// A YAML scalar: plain when safe, double-quoted otherwise.
fn yaml_str(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with([' ', ':'])
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
        )
        && s.parse::<f64>().is_err();
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sync_command_is_the_cli_of_the_applications_group() {
        let app = |api: &str, ns: Option<&str>| {
            let mut a =
                json!({"apiVersion": api, "kind": "Application", "metadata": {"name": "web"}});
            if let Some(ns) = ns {
                a["metadata"]["namespace"] = json!(ns);
            }
            AppRef::of(&a)
        };
        let cases = [
            (
                app("plumb.dev/v1alpha1", Some("plumb")),
                false,
                "plumb app sync web",
            ),
            (
                app("plumb.dev/v1alpha1", None),
                true,
                "plumb app sync web --prune",
            ),
            (
                app("plumb.dev/v1alpha1", Some("team-a")),
                true,
                "plumb app sync web -N team-a --prune",
            ),
            (
                app("argoproj.io/v1alpha1", Some("argocd")),
                false,
                "argocd app sync web",
            ),
            (
                app("argoproj.io/v1alpha1", None),
                true,
                "argocd app sync web --prune",
            ),
            (
                app("argoproj.io/v1alpha1", Some("team-a")),
                false,
                "argocd app sync team-a/web",
            ),
        ];
        for (app, prune, want) in cases {
            assert_eq!(app.sync_command(prune), want, "{app:?}");
            let Fix::Sync(fix) = (if prune {
                sync_object(&app, true)
            } else {
                sync(&app)
            }) else {
                panic!("a sync fix")
            };
            assert_eq!(fix.command, want);
        }
    }

    #[test]
    fn joins_and_finds_patch_entries() {
        assert_eq!(
            join("overlays/prod", "pull-policy.yaml"),
            "overlays/prod/pull-policy.yaml"
        );
        assert_eq!(join("overlays/prod", "../../base"), "base");
        let k = vec![(
            "overlays/prod/kustomization.yaml".to_string(),
            json!({"resources": ["../../base"], "patches": [{"path": "pull-policy.yaml"}]}),
        )];
        let p = pulled_in("overlays/prod/pull-policy.yaml", &k).unwrap();
        assert_eq!((p.field.as_str(), p.index), ("patches", 0));
        assert!(pulled_in("base/deployment.yaml", &k).is_none());
    }

    #[test]
    fn yaml_scalars() {
        assert_eq!(yaml_str(""), "\"\"");
        assert_eq!(yaml_str("apps"), "apps");
        assert_eq!(yaml_str("/spec/replicas"), "/spec/replicas");
        assert_eq!(yaml_str("true"), "\"true\"");
        assert_eq!(yaml_str("*"), "\"*\"");
    }
}
