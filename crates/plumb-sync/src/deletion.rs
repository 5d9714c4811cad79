//! Deleting an Application with cascade, as Argo CD's controller finalizes one: the
//! `resources-finalizer.argocd.argoproj.io` finalizer (foreground; `/background` for
//! background propagation) makes the controller delete the app's resources before the
//! Application goes. Resources go in reverse sync-wave order — the highest wave first, the next
//! only once it is gone (Argo CD's `FilterObjectsForDeletion`); `Delete=false` (resource
//! annotation or app option) keeps a resource; `Delete=confirm` holds the deletion until the
//! Application carries `argocd.argoproj.io/deletion-approved`. When nothing is left the
//! finalizer is removed and the API server deletes the Application.
//!
//! This module decides the next step from what is live; `run::delete` does the I/O.

use crate::options::PruneOption;
use plumb_core::ResourceKey;
use serde_json::Value;

/// The finalizer that makes deleting an Application delete its resources (foreground).
pub const RESOURCES_FINALIZER: &str = "resources-finalizer.argocd.argoproj.io";
/// The same, with background propagation.
pub const RESOURCES_FINALIZER_BACKGROUND: &str =
    "resources-finalizer.argocd.argoproj.io/background";
/// The Application annotation that approves `Delete=confirm` deletions.
pub const DELETION_APPROVED_ANNOTATION: &str = "argocd.argoproj.io/deletion-approved";
/// Runs the app's PreDelete hooks before its resources are deleted (added by the controller
/// to an app that declares such hooks).
pub const PRE_DELETE_FINALIZER: &str = "pre-delete-finalizer.argocd.argoproj.io";
/// Runs the app's PostDelete hooks once its resources are gone.
pub const POST_DELETE_FINALIZER: &str = "post-delete-finalizer.argocd.argoproj.io";
/// Deletes the PreDelete hooks their delete policy names, at the end.
pub const PRE_DELETE_CLEANUP_FINALIZER: &str = "pre-delete-finalizer.argocd.argoproj.io/cleanup";
/// Deletes the PostDelete hooks their delete policy names, at the end.
pub const POST_DELETE_CLEANUP_FINALIZER: &str = "post-delete-finalizer.argocd.argoproj.io/cleanup";

/// A hook that runs when the Application is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeleteHook {
    /// `argocd.argoproj.io/hook: PreDelete` (`helm.sh/hook: pre-delete`).
    Pre,
    /// `argocd.argoproj.io/hook: PostDelete` (`helm.sh/hook: post-delete`).
    Post,
}

impl DeleteHook {
    /// The hook type of an object, from its annotations (the whole value, as Argo CD
    /// compares).
    pub fn of_object(obj: &Value) -> Option<DeleteHook> {
        let get = |k: &str| {
            obj.pointer("/metadata/annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
        };
        DeleteHook::classify(
            get(plumb_core::HOOK_ANNOTATION),
            get(plumb_core::HELM_HOOK_ANNOTATION),
        )
    }

    /// From the Argo CD and Helm hook annotations' values.
    fn classify(argo: Option<&str>, helm: Option<&str>) -> Option<DeleteHook> {
        match (argo, helm) {
            (Some("PreDelete"), _) | (_, Some("pre-delete")) => Some(DeleteHook::Pre),
            (Some("PostDelete"), _) | (_, Some("post-delete")) => Some(DeleteHook::Post),
            _ => None,
        }
    }

    /// Its name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            DeleteHook::Pre => "PreDelete",
            DeleteHook::Post => "PostDelete",
        }
    }

    /// The finalizer that runs it, and the one that cleans it up.
    pub fn finalizers(self) -> [&'static str; 2] {
        match self {
            DeleteHook::Pre => [PRE_DELETE_FINALIZER, PRE_DELETE_CLEANUP_FINALIZER],
            DeleteHook::Post => [POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER],
        }
    }
}

/// The stage a deleted Application is in, by the finalizers it still has: PreDelete hooks,
/// then its resources, then PostDelete hooks, then the hooks' cleanup (Argo CD's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Hooks(DeleteHook),
    Resources(Cascade),
    Cleanup,
    /// No finalizer of plumb's left.
    Nothing,
}

fn finalizers(app: &Value) -> Vec<&str> {
    app.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|fs| fs.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

impl Stage {
    pub fn of(app: &Value) -> Stage {
        let f = finalizers(app);
        let cascade = Cascade::of(app);
        if f.contains(&PRE_DELETE_FINALIZER) {
            Stage::Hooks(DeleteHook::Pre)
        } else if cascade != Cascade::None {
            Stage::Resources(cascade)
        } else if f.contains(&POST_DELETE_FINALIZER) {
            Stage::Hooks(DeleteHook::Post)
        } else if f.contains(&PRE_DELETE_CLEANUP_FINALIZER)
            || f.contains(&POST_DELETE_CLEANUP_FINALIZER)
        {
            Stage::Cleanup
        } else {
            Stage::Nothing
        }
    }
}

/// The Application's finalizers with those its delete hooks need added (`hooks`: the types
/// git declares); `None` when none is missing. The controller adds them, as Argo CD's does.
pub fn with_hook_finalizers(app: &Value, hooks: &[DeleteHook]) -> Option<Vec<String>> {
    let mut list: Vec<String> = finalizers(app).into_iter().map(String::from).collect();
    let before = list.len();
    for h in hooks {
        for f in h.finalizers() {
            if !list.iter().any(|x| x == f) {
                list.push(f.to_string());
            }
        }
    }
    (list.len() > before).then_some(list)
}

/// How deleting the Application treats its resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cascade {
    /// No resources finalizer: the resources stay.
    None,
    /// Delete them with foreground propagation (dependents first).
    Foreground,
    /// Delete them with background propagation.
    Background,
}

impl Cascade {
    /// From the Application's `metadata.finalizers`.
    pub fn of(app: &Value) -> Cascade {
        let has = |f: &str| {
            app.pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|fs| fs.iter().any(|x| x.as_str() == Some(f)))
        };
        if has(RESOURCES_FINALIZER) {
            Cascade::Foreground
        } else if has(RESOURCES_FINALIZER_BACKGROUND) {
            Cascade::Background
        } else {
            Cascade::None
        }
    }
}

/// One live resource of the app being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub key: ResourceKey,
    /// Its sync wave.
    pub wave: i64,
    /// It already has a `deletionTimestamp` (finalizers are running).
    pub deleting: bool,
    /// `Delete=` from its annotation, else the app's option.
    pub delete: Option<PruneOption>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Delete these (the highest wave left).
    Delete { wave: i64, keys: Vec<ResourceKey> },
    /// Wait: resources are still going, or a `Delete=confirm` needs approval.
    Wait {
        keys: Vec<ResourceKey>,
        reason: String,
    },
    /// Nothing left to delete (resources with `Delete=false` stay): remove the finalizer.
    Done { kept: Vec<ResourceKey> },
}

/// The next deletion step for `candidates`; `approved` when the Application carries
/// [`DELETION_APPROVED_ANNOTATION`].
pub fn next_step(candidates: &[Candidate], approved: bool) -> Step {
    let (kept, todo): (Vec<&Candidate>, Vec<&Candidate>) = candidates
        .iter()
        .partition(|c| c.delete == Some(PruneOption::False));
    if todo.is_empty() {
        return Step::Done {
            kept: kept.into_iter().map(|c| c.key.clone()).collect(),
        };
    }
    let going: Vec<ResourceKey> = todo
        .iter()
        .filter(|c| c.deleting)
        .map(|c| c.key.clone())
        .collect();
    if !going.is_empty() {
        return Step::Wait {
            reason: format!("waiting for {} resource(s) to be deleted", going.len()),
            keys: going,
        };
    }
    let unconfirmed: Vec<ResourceKey> = todo
        .iter()
        .filter(|c| c.delete == Some(PruneOption::Confirm))
        .map(|c| c.key.clone())
        .collect();
    if !unconfirmed.is_empty() && !approved {
        return Step::Wait {
            reason: format!(
                "waiting for deletion confirmation of {} (annotate the Application with {DELETION_APPROVED_ANNOTATION})",
                unconfirmed
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            keys: unconfirmed,
        };
    }
    let wave = todo.iter().map(|c| c.wave).max().unwrap_or(0);
    let mut keys: Vec<ResourceKey> = todo
        .iter()
        .filter(|c| c.wave == wave)
        .map(|c| c.key.clone())
        .collect();
    keys.sort();
    Step::Delete { wave, keys }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(name: &str, wave: i64, deleting: bool, delete: Option<PruneOption>) -> Candidate {
        Candidate {
            key: ResourceKey {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "ns".into(),
                name: name.into(),
            },
            wave,
            deleting,
            delete,
        }
    }

    fn names(keys: &[ResourceKey]) -> Vec<&str> {
        keys.iter().map(|k| k.name.as_str()).collect()
    }

    #[test]
    fn the_highest_wave_goes_first_and_delete_false_stays() {
        let all = [
            c("a", 0, false, None),
            c("b", 2, false, None),
            c("c", 2, false, Some(PruneOption::True)),
            c("keep", 5, false, Some(PruneOption::False)),
        ];
        match next_step(&all, false) {
            Step::Delete { wave, keys } => {
                assert_eq!(wave, 2);
                assert_eq!(names(&keys), ["b", "c"]);
            }
            other => panic!("{other:?}"),
        }
        // While wave 2 is going, nothing else is deleted.
        let going = [c("a", 0, false, None), c("b", 2, true, None)];
        assert!(
            matches!(next_step(&going, false), Step::Wait { ref keys, .. } if names(keys) == ["b"])
        );
        let left = [c("keep", 5, false, Some(PruneOption::False))];
        assert_eq!(
            next_step(&left, false),
            Step::Done {
                kept: vec![left[0].key.clone()]
            }
        );
        assert_eq!(next_step(&[], false), Step::Done { kept: vec![] });
    }

    #[test]
    fn delete_confirm_waits_for_approval() {
        let all = [
            c("a", 0, false, None),
            c("db", 0, false, Some(PruneOption::Confirm)),
        ];
        match next_step(&all, false) {
            Step::Wait { keys, reason } => {
                assert_eq!(names(&keys), ["db"]);
                assert!(reason.contains(DELETION_APPROVED_ANNOTATION), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(next_step(&all, true), Step::Delete { ref keys, .. } if keys.len() == 2));
    }

    #[test]
    fn stages_follow_the_finalizers_in_argo_cds_order() {
        let app = |f: &[&str]| json!({"metadata": {"finalizers": f}});
        let all = [
            POST_DELETE_CLEANUP_FINALIZER,
            RESOURCES_FINALIZER,
            POST_DELETE_FINALIZER,
            PRE_DELETE_FINALIZER,
            PRE_DELETE_CLEANUP_FINALIZER,
        ];
        assert_eq!(Stage::of(&app(&all)), Stage::Hooks(DeleteHook::Pre));
        assert_eq!(
            Stage::of(&app(&all[..3])),
            Stage::Resources(Cascade::Foreground)
        );
        assert_eq!(
            Stage::of(&app(&[
                POST_DELETE_CLEANUP_FINALIZER,
                POST_DELETE_FINALIZER
            ])),
            Stage::Hooks(DeleteHook::Post)
        );
        assert_eq!(
            Stage::of(&app(&[PRE_DELETE_CLEANUP_FINALIZER, "other"])),
            Stage::Cleanup
        );
        assert_eq!(Stage::of(&app(&["other"])), Stage::Nothing);
    }

    #[test]
    fn delete_hooks_and_their_finalizers() {
        let ann = |k: &str, v: &str| json!({"metadata": {"annotations": {k: v}}});
        assert_eq!(
            DeleteHook::of_object(&ann(plumb_core::HOOK_ANNOTATION, "PostDelete")),
            Some(DeleteHook::Post)
        );
        assert_eq!(
            DeleteHook::of_object(&ann(plumb_core::HELM_HOOK_ANNOTATION, "pre-delete")),
            Some(DeleteHook::Pre)
        );
        assert_eq!(
            DeleteHook::of_object(&ann(plumb_core::HOOK_ANNOTATION, "PreSync,PostDelete")),
            None,
            "Argo CD compares the whole value"
        );
        let app = json!({"metadata": {"finalizers": [RESOURCES_FINALIZER]}});
        assert_eq!(
            with_hook_finalizers(&app, &[DeleteHook::Post]),
            Some(vec![
                RESOURCES_FINALIZER.to_string(),
                POST_DELETE_FINALIZER.to_string(),
                POST_DELETE_CLEANUP_FINALIZER.to_string()
            ])
        );
        let done = json!({"metadata": {"finalizers": [POST_DELETE_FINALIZER, POST_DELETE_CLEANUP_FINALIZER]}});
        assert_eq!(with_hook_finalizers(&done, &[DeleteHook::Post]), None);
        assert_eq!(with_hook_finalizers(&app, &[]), None);
    }

    #[test]
    fn cascade_comes_from_the_finalizers() {
        let app = |f: Value| json!({"metadata": {"finalizers": f}});
        assert_eq!(
            Cascade::of(&app(json!([RESOURCES_FINALIZER]))),
            Cascade::Foreground
        );
        assert_eq!(
            Cascade::of(&app(json!(["other", RESOURCES_FINALIZER_BACKGROUND]))),
            Cascade::Background
        );
        assert_eq!(Cascade::of(&app(json!(["other"]))), Cascade::None);
        assert_eq!(Cascade::of(&json!({"metadata": {}})), Cascade::None);
    }
}
