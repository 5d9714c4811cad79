//! `plumb doctor APP`: why an app stays OutOfSync — per differing field, who rewrites it
//! (with evidence), where git declares it, whether it is a loop, and the fix.

use crate::cluster_args::{ClusterArgs, connect};
use crate::source_args::{SourceArgs, render_source};
use crate::{EXIT_DIFFERENCES, EXIT_IN_SYNC};
use anyhow::{Result, anyhow, bail};
use plumb_core::argo::{Application, Settings};
use plumb_diff::DiffConfig;
use plumb_diff::compare::{CompareContext, compare};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DoctorFormat {
    Text,
    Json,
    Markdown,
}

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// The Application (Argo CD's or plumb's), looked up by name in the snapshot or the
    /// cluster. Optional with --preflight.
    #[arg(required_unless_present = "preflight")]
    app: Option<String>,
    /// Before merge: for the desired state of a change (--desired, or --repo/--path), warn
    /// about each declared field that a webhook, admission policy or controller in the
    /// snapshot will rewrite — the fight, caught before it starts. Exit 1 on a warning.
    #[arg(long)]
    preflight: bool,
    /// With --preflight: desired manifests (files or directories) instead of a source.
    #[arg(long, num_args = 1.., value_name = "PATH", requires = "preflight", conflicts_with_all = ["repo", "revision", "path"])]
    desired: Vec<PathBuf>,
    /// A `plumb snapshot` directory: the Application, its live objects and the context
    /// (namespaces, webhooks, policies, HPAs, CRDs).
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "cluster",
        conflicts_with = "cluster"
    )]
    live: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    source: SourceArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DoctorFormat::Text)]
    output: DoctorFormat,
    /// Apply the first fix of each finding caused by the cluster (a webhook, a policy, a
    /// controller) when it is a git change: edit the work tree of --repo; never commits.
    #[arg(long, conflicts_with = "preflight")]
    fix: bool,
}

fn is_application(o: &Value) -> bool {
    o.get("kind").and_then(Value::as_str) == Some("Application")
        && o.get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("argoproj.io/") || v.starts_with("plumb.dev/"))
}

/// Every object of a snapshot directory (or of a fresh snapshot of the cluster).
fn load_state(args: &DoctorArgs) -> Result<Vec<Value>> {
    let dir: PathBuf;
    let _cleanup;
    let path: &Path = match &args.live {
        Some(d) => d,
        None => {
            if !args.cluster.cluster {
                bail!("pass --live DIR (a plumb snapshot) or --cluster");
            }
            let c = connect(&args.cluster)?;
            dir = std::env::temp_dir().join(format!("plumb-doctor-{}", std::process::id()));
            _cleanup = RemoveOnDrop(dir.clone());
            // The snapshot of the app: its objects in its destination namespace, and the
            // context (namespaces, webhooks, policies, HPAs, CRDs, Applications).
            let app = match &args.app {
                Some(name) => find_application(&c, name)?,
                None => None,
            };
            let namespaces: Vec<String> = app
                .as_ref()
                .and_then(|a| a.destination_namespace.clone())
                .into_iter()
                .collect();
            c.block_on(c.cluster.snapshot(app.as_ref(), &namespaces, &dir))
                .map_err(|e| anyhow!("{e}"))?;
            &dir
        }
    };
    Ok(plumb_render::load_paths(&[path.to_path_buf()])
        .map_err(|e| anyhow!("{e}"))?
        .into_iter()
        .map(|m| m.object)
        .collect())
}

/// The Application named `name` (plumb's, else Argo CD's where the server has them).
fn find_application(c: &crate::cluster_args::Connected, name: &str) -> Result<Option<Application>> {
    let mut candidates = c
        .block_on(c.cluster.list_applications(None))
        .unwrap_or_default();
    let argo = plumb_core::GroupKind {
        group: "argoproj.io".into(),
        kind: "Application".into(),
    };
    if let Ok(more) = c.block_on(c.cluster.list_live(&[argo], None, None)) {
        candidates.extend(more);
    }
    candidates
        .iter()
        .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .map(|o| Application::from_value(o).map_err(|e| anyhow!("Application {name}: {e}")))
        .transpose()
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The kustomization files of the repository (repo-relative path → content), so the
/// doctor can name the kustomization that pulls a patch in and write the fix.
fn kustomizations(fs: &dyn plumb_render::source::SourceFs) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs.list(&dir) else { continue };
        for (name, kind) in entries {
            let path = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            match kind {
                plumb_render::source::EntryKind::Dir => stack.push(path),
                plumb_render::source::EntryKind::File
                    if plumb_render::kustomize::FILE_NAMES.contains(&name.as_str()) =>
                {
                    if let Some(v) = fs
                        .read(&path)
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok())
                        .and_then(|t| serde_saphyr::from_str::<Value>(&t).ok())
                    {
                        out.push((path, v));
                    }
                }
                _ => {}
            }
        }
        if out.len() > 10_000 {
            break;
        }
    }
    out
}

pub fn run(args: DoctorArgs) -> Result<u8> {
    let state = load_state(&args)?;
    let app_obj = match &args.app {
        Some(name) => state
            .iter()
            .find(|o| {
                is_application(o)
                    && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            })
            .cloned()
            .ok_or_else(|| anyhow!("Application {name:?} not found in the snapshot or cluster"))?,
        // Preflight without an Application: a change is checked on its own.
        None => serde_json::json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "preflight"}, "spec": {}}),
    };
    let app = Application::from_value(&app_obj)
        .map_err(|e| anyhow!("Application {}: {e}", app_obj["metadata"]["name"]))?;

    // Desired: files as given (preflight), else the Application's source, rendered with
    // source locations.
    let (desired, source) = if !args.desired.is_empty() {
        (crate::source_args::desired_from_files(&args.desired)?, None)
    } else {
        let app_file = PathBuf::from(format!("<Application {}>", app.name));
        // Without a named Application (a preflight), the source is what --repo/--path say:
        // no path is an error, not an empty render that passes.
        let named = args.app.as_ref().map(|_| (&app, app_file.as_path()));
        let mut source = render_source(&args.source, named)?;
        let objects = std::mem::take(&mut source.rendered.objects);
        (crate::source_args::desired_of(objects), Some(source))
    };

    let settings = Settings::argocd_defaults();
    let config = DiffConfig::for_app(
        &settings,
        Some(&app),
        &format!("Application {}", app.name),
        Duration::from_secs(1),
    )?;
    let ctx = CompareContext {
        // A preflight without an Application checks the change alone: no tracking injected.
        app: args.app.as_ref().map(|_| &app),
        settings: Some(&settings),
        config: &config,
        keep_equal: false,
        server_side: None,
    };
    let mut live: Vec<Value> = state
        .iter()
        .filter(|o| !is_application(o))
        .cloned()
        .collect();
    if args.preflight {
        // A preflight asks about the fields the change declares: compare two-way (desired
        // against live), not against what an earlier apply left in last-applied.
        for o in &mut live {
            if let Some(a) = o
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove(plumb_core::LAST_APPLIED_ANNOTATION);
            }
        }
    }
    let diffs = compare(desired, live.clone(), &ctx)?;

    // The kustomizations of the repository at the rendered revision (none for files).
    let kustomizations = source
        .as_ref()
        .map(|s| kustomizations(s.fs.as_ref()))
        .unwrap_or_default();
    let mut report = plumb_doctor::diagnose(&plumb_doctor::Inputs {
        app: &app_obj,
        diffs: &diffs,
        live: &live,
        context: &state,
        kustomizations: &kustomizations,
        now: std::time::SystemTime::now(),
    });
    if args.preflight {
        // Only what the cluster will rewrite: differences the change itself settles (a new
        // value, a hand edit it overwrites) are not a fight.
        use plumb_doctor::report::CauseType;
        report.findings.retain(|f| {
            matches!(
                f.cause.kind,
                CauseType::MutatingWebhook
                    | CauseType::MutatingPolicy
                    | CauseType::Controller
                    | CauseType::ApiServerDefault
            )
        });
    }
    if args.fix {
        let Some(source) = &source else {
            bail!("--fix changes a repository: render one with --repo/--path or the Application");
        };
        for change in apply_fixes(&report.to_json(), &source.repo)? {
            eprintln!("fix: {change}");
        }
    }
    let text = match args.output {
        DoctorFormat::Text => report.to_text(),
        DoctorFormat::Markdown => report.to_markdown(),
        DoctorFormat::Json => format!("{:#}\n", report.to_json()),
    };
    print!("{text}");
    Ok(if report.has_findings() {
        EXIT_DIFFERENCES
    } else {
        EXIT_IN_SYNC
    })
}

/// Writes the `stop-declaring` fixes of the findings the cluster causes into the work tree
/// at `repo`; returns what it changed. Git is never touched beyond the files.
fn apply_fixes(report: &Value, repo: &Path) -> Result<Vec<String>> {
    let mut changes = Vec::new();
    let mut removals: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    // Kustomization list entries to remove, per (kustomization, field): index, and the patch
    // file to delete once its entry is gone. Removed highest index first, so none shifts.
    type EntryKey = (String, String);
    let mut entries: std::collections::BTreeMap<EntryKey, Vec<(usize, Option<String>)>> =
        Default::default();
    for f in report["findings"].as_array().into_iter().flatten() {
        let cause = f["cause"]["type"].as_str().unwrap_or("");
        if !matches!(cause, "mutating-webhook" | "mutating-policy" | "controller") {
            continue; // drift is fixed by a sync, not by changing git
        }
        let Some(fix) = f["fixes"].get(0).filter(|x| x["type"] == "stop-declaring") else {
            continue;
        };
        let Some(file) = fix["file"].as_str() else {
            continue;
        };
        let k = &fix["kustomization"];
        let entry = match (k["file"].as_str(), k["field"].as_str(), k["index"].as_u64()) {
            (Some(kfile), Some(field), Some(index)) => {
                Some(((kfile.to_string(), field.to_string()), index as usize))
            }
            _ => None,
        };
        match (fix["action"].as_str(), entry) {
            (Some("delete-file"), Some((key, index))) => {
                entries
                    .entry(key)
                    .or_default()
                    .push((index, Some(file.to_string())));
            }
            (Some("delete-file"), None) => {
                let path = repo.join(file);
                if path.exists() {
                    std::fs::remove_file(&path)
                        .map_err(|e| anyhow!("{}: cannot delete: {e}", path.display()))?;
                    changes.push(format!("deleted {file}"));
                }
            }
            (Some("remove-entry"), Some((key, index))) => {
                entries.entry(key).or_default().push((index, None));
            }
            (Some("remove-lines"), _) => {
                let lines = fix["lines"].as_array().into_iter().flatten();
                removals
                    .entry(file.to_string())
                    .or_default()
                    .extend(lines.filter_map(Value::as_u64).map(|l| l as usize));
            }
            _ => {}
        }
    }
    for ((kfile, field), mut list) in entries {
        list.sort_by_key(|e| std::cmp::Reverse(e.0));
        list.dedup_by_key(|e| e.0);
        for (index, patch) in list {
            // The kustomization first: a patch file is deleted only once nothing pulls it in.
            if !remove_field_entry(&repo.join(&kfile), &field, index)? {
                changes.push(format!(
                    "left {kfile} as it is: {field}[{index}] is not a block list entry plumb can remove{}",
                    patch
                        .as_ref()
                        .map(|p| format!(" (and kept {p})"))
                        .unwrap_or_default()
                ));
                continue;
            }
            changes.push(format!("removed {field}[{index}] from {kfile}"));
            if let Some(p) = patch {
                let path = repo.join(&p);
                if path.exists() {
                    std::fs::remove_file(&path)
                        .map_err(|e| anyhow!("{}: cannot delete: {e}", path.display()))?;
                    changes.push(format!("deleted {p}"));
                }
            }
        }
    }
    for (file, mut lines) in removals {
        let path = repo.join(&file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| anyhow!("{}: cannot read: {e}", path.display()))?;
        lines.sort_unstable();
        lines.dedup();
        let kept: String = text
            .split_inclusive('\n')
            .enumerate()
            .filter(|(i, _)| !lines.contains(&(i + 1)))
            .map(|(_, l)| l)
            .collect();
        std::fs::write(&path, kept)
            .map_err(|e| anyhow!("{}: cannot write: {e}", path.display()))?;
        changes.push(format!(
            "removed line{} {} of {file}",
            if lines.len() == 1 { "" } else { "s" },
            lines
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(changes)
}

/// The top-level list entries of a kustomization's text: for each, the line range (0-based,
/// end exclusive) of the entry with the comment lines right above it, grouped by field.
fn list_entries(lines: &[&str]) -> Vec<(String, usize, std::ops::Range<usize>)> {
    type Entry = (String, usize, std::ops::Range<usize>);
    let mut out: Vec<Entry> = Vec::new();
    let mut field: Option<(String, usize)> = None; // (name, its line)
    let mut entry_start: Option<usize> = None;
    let mut entry_indent: Option<usize> = None; // the list's `- ` column
    let mut comments_from: Option<usize> = None;
    let close = |out: &mut Vec<Entry>,
                 field: &Option<(String, usize)>,
                 start: Option<usize>,
                 end: usize| {
        if let (Some((name, at)), Some(start)) = (field, start) {
            out.push((name.clone(), *at, start..end));
        }
    };
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_end();
        let indent = t.len() - t.trim_start().len();
        let top_level = !t.is_empty() && indent == 0 && !t.starts_with('#');
        if top_level && !t.starts_with('-') {
            close(
                &mut out,
                &field,
                entry_start.take(),
                comments_from.unwrap_or(i),
            );
            comments_from = None;
            entry_indent = None;
            field = t.strip_suffix(':').map(|name| (name.trim().to_string(), i));
            continue;
        }
        if t.trim_start().starts_with('#') {
            comments_from.get_or_insert(i);
            continue;
        }
        let item = t.trim_start().starts_with('-');
        if item && field.is_some() && *entry_indent.get_or_insert(indent) == indent {
            close(
                &mut out,
                &field,
                entry_start.take(),
                comments_from.unwrap_or(i),
            );
            entry_start = Some(comments_from.take().unwrap_or(i));
            continue;
        }
        if !t.is_empty() {
            comments_from = None;
        }
    }
    // Comments after the last entry belong to no entry.
    close(
        &mut out,
        &field,
        entry_start,
        comments_from.unwrap_or(lines.len()),
    );
    out
}

/// Writes `lines` without `range`, and without `field`'s key line when that leaves the list
/// empty.
fn write_without(
    path: &Path,
    lines: &[&str],
    field_line: usize,
    range: std::ops::Range<usize>,
    emptied: bool,
) -> Result<()> {
    let kept: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| !(range.contains(i) || (emptied && *i == field_line)))
        .map(|(_, l)| *l)
        .collect();
    std::fs::write(path, kept).map_err(|e| anyhow!("{}: cannot write: {e}", path.display()))
}

/// Removes entry `index` of the kustomization's list `field` (with the comment lines right
/// above it), and the key when nothing is left under it.
fn remove_field_entry(kustomization: &Path, field: &str, index: usize) -> Result<bool> {
    let text = std::fs::read_to_string(kustomization)
        .map_err(|e| anyhow!("{}: cannot read: {e}", kustomization.display()))?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let entries: Vec<(String, usize, std::ops::Range<usize>)> = list_entries(&lines)
        .into_iter()
        .filter(|(f, _, _)| f == field)
        .collect();
    let Some((_, field_line, range)) = entries.get(index).cloned() else {
        return Ok(false);
    };
    write_without(kustomization, &lines, field_line, range, entries.len() == 1)?;
    Ok(true)
}

#[cfg(test)]
mod kustomization_edits {
    use super::*;

    const TEXT: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
replicas:
- name: api
  count: 3
- name: worker
  count: 1
patches:
# save registry traffic
- path: pull-policy.yaml
  target:
    kind: Deployment
    labelSelector: a=b
images:
  - name: app
    newTag: \"2\"
";

    fn edit(f: impl FnOnce(&Path) -> Result<bool>) -> String {
        let dir = std::env::temp_dir().join(format!("plumb-kedit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("k-{}.yaml", rand_suffix()));
        std::fs::write(&file, TEXT).unwrap();
        assert!(f(&file).unwrap());
        let out = std::fs::read_to_string(&file).unwrap();
        let _ = std::fs::remove_file(&file);
        out
    }

    fn rand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    /// Two entries of one list: removed highest first, so the second index does not shift
    /// onto a neighbour; a patch file goes only with its entry.
    #[test]
    fn fixes_remove_the_entries_they_name() {
        let repo = std::env::temp_dir().join(format!("plumb-kfix-{}", rand_suffix()));
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(
            repo.join("kustomization.yaml"),
            "replicas:\n- name: a\n  count: 1\n- name: b\n  count: 2\n- name: c\n  count: 3\npatches: [p.yaml]\n",
        )
        .unwrap();
        std::fs::write(repo.join("p.yaml"), "x: 1\n").unwrap();
        let finding =
            |fix: Value| serde_json::json!({"cause": {"type": "controller"}, "fixes": [fix]});
        let entry = |i: u64| {
            finding(
                serde_json::json!({"type": "stop-declaring", "action": "remove-entry",
                "file": "kustomization.yaml",
                "kustomization": {"file": "kustomization.yaml", "field": "replicas", "index": i}}),
            )
        };
        let report = serde_json::json!({"findings": [entry(0), entry(1),
            finding(serde_json::json!({"type": "stop-declaring", "action": "delete-file", "file": "p.yaml",
                "kustomization": {"file": "kustomization.yaml", "field": "patches", "index": 0}}))]});
        let changes = apply_fixes(&report, &repo).unwrap();
        let k = std::fs::read_to_string(repo.join("kustomization.yaml")).unwrap();
        assert_eq!(
            k, "replicas:\n- name: c\n  count: 3\npatches: [p.yaml]\n",
            "{changes:?}"
        );
        assert!(
            repo.join("p.yaml").exists(),
            "a flow-list entry is not removed, so the file stays"
        );
        let _ = std::fs::remove_dir_all(&repo);
    }

    #[test]
    fn a_whole_entry_goes_and_an_emptied_key_with_it() {
        let out = edit(|p| remove_field_entry(p, "replicas", 0));
        assert!(
            out.contains("replicas:\n- name: worker\n  count: 1\npatches:"),
            "{out}"
        );
        // The patch entry with its comment and nested fields; `patches:` is left empty: gone.
        let out = edit(|p| remove_field_entry(p, "patches", 0));
        assert!(
            !out.contains("patches:")
                && !out.contains("save registry")
                && !out.contains("labelSelector"),
            "{out}"
        );
        assert!(
            out.contains("- name: worker\n  count: 1\nimages:\n  - name: app"),
            "{out}"
        );
        // An indented list.
        let out = edit(|p| remove_field_entry(p, "images", 0));
        assert!(!out.contains("images:") && !out.contains("newTag"), "{out}");
        assert!(out.ends_with("    labelSelector: a=b\n"), "{out}");
        // Nothing to remove.
        let dir = std::env::temp_dir().join(format!("plumb-kedit-none-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("k.yaml");
        std::fs::write(&file, TEXT).unwrap();
        assert!(!remove_field_entry(&file, "replicas", 5).unwrap());
        assert!(!remove_field_entry(&file, "resources", 0).unwrap());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), TEXT);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
