//! Argo CD's `AppProject`: what an Application of the project may deploy, from where, to
//! where, and when — decided as Argo CD decides it.
//!
//! - [`AppProject::source_permitted`]: `spec.sourceRepos` (globs over the normalised URL, `/`
//!   is a separator, `!` denies);
//! - [`AppProject::destination_permitted`]: `spec.destinations` (server / name / namespace
//!   globs; a `!` pattern that does not match denies the destination outright);
//! - [`AppProject::group_kind_permitted`]: the cluster- and namespace-scoped white- and
//!   blacklists (an empty cluster whitelist permits no cluster-scoped kind; an absent
//!   namespace whitelist permits every namespaced kind);
//! - [`AppProject::app_namespace_permitted`]: whether an Application may use the project
//!   from its namespace (`spec.sourceNamespaces`);
//! - [`AppProject::sync_allowed`]: `spec.syncWindows` (cron schedules with a duration and a
//!   time zone; deny wins, `manualSync` lets a manual sync through).
//!
//! Every refusal is a [`Denial`] whose message names the rule, in Argo CD's words where it
//! has them. One read path: the object is read through the typed model
//! ([`crate::argo::model::AppProject`], which keeps an absent `namespaceResourceWhitelist`
//! apart from an empty one) and [`AppProject::compile`]d into this policy, which validates
//! what can be invalid (globs, cron schedules, durations, time zones) and names the field;
//! [`AppProject::from_value`] does both.
//!
//! ```
//! use plumb_core::project::{AppProject, Destination};
//! let proj = AppProject::from_value(&serde_json::json!({
//!     "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
//!     "metadata": {"name": "team-a", "namespace": "argocd"},
//!     "spec": {
//!         "sourceRepos": ["https://git.example.com/team-a/*"],
//!         "destinations": [{"server": "*", "namespace": "team-a-*"}],
//!     },
//! })).unwrap();
//! let dest = |ns: &str| Destination::new("https://kubernetes.default.svc", "", ns);
//! assert!(proj.destination_permitted(&dest("team-a-prod")).is_ok());
//! assert!(proj.destination_permitted(&dest("kube-system")).is_err());
//! assert!(proj.source_permitted("https://git.example.com/team-a/web.git").is_ok());
//! assert!(proj.source_permitted("https://git.example.com/team-b/web").is_err());
//! ```

use crate::argo::model;
use crate::glob::NamespacePattern;
use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;
use std::fmt;

/// The project an Application without `spec.project` belongs to.
pub const DEFAULT_PROJECT: &str = "default";

/// An invalid AppProject: the object and the field, one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("AppProject {project}: {field}: {reason}")]
pub struct ProjectError {
    /// The AppProject's name (`<unnamed>` when it has none).
    pub project: String,
    /// The field, as a path (`spec.syncWindows[0].schedule`).
    pub field: String,
    /// What is wrong with the field.
    pub reason: String,
}

/// Why a project refuses something. The message is what the Application's condition or the
/// failed sync says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Denial {
    /// The refusal, one line, in Argo CD's words where it has them.
    pub message: String,
}

impl Denial {
    fn new(message: String) -> Denial {
        Denial { message }
    }
}

/// Where an Application deploys (`spec.destination`), and a project's `destinations[]`:
/// the typed model's.
pub use crate::argo::model::Destination;
/// A group/kind (and name) entry of a resource white- or blacklist: the typed model's.
pub use crate::argo::model::GroupKindPattern;

/// Whether a sync window allows or denies syncs while it is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    /// `allow`: syncs run only while an allow window is open.
    Allow,
    /// `deny`: no syncs while the window is open.
    Deny,
}

impl fmt::Display for WindowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WindowKind::Allow => "allow",
            WindowKind::Deny => "deny",
        })
    }
}

/// One entry of `spec.syncWindows`, compiled from the model's (which it keeps as `spec`).
#[derive(Debug, Clone)]
pub struct SyncWindow {
    /// `kind`: whether the window allows or denies.
    pub kind: WindowKind,
    /// The entry as written.
    pub spec: model::SyncWindow,
    /// IANA time zone the schedule is read in (`timeZone`, default UTC).
    pub time_zone: String,
    cron: croner::Cron,
    length: jiff::SignedDuration,
    tz: jiff::tz::TimeZone,
}

/// `deny '0 22 * * *' for 8h (UTC)`: kind, schedule, duration and time zone.
impl fmt::Display for SyncWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} '{}' for {} ({})",
            self.kind, self.spec.schedule, self.spec.duration, self.time_zone
        )
    }
}

impl SyncWindow {
    /// Whether the window is open at `now`: a scheduled start lies within the last
    /// `duration` (the start itself counts from the next instant, as Argo CD's check does).
    pub fn active(&self, now: jiff::Timestamp) -> bool {
        let Ok(from) = now.checked_sub(self.length) else {
            return false;
        };
        let from = from.to_zoned(self.tz.clone());
        match self.cron.find_next_occurrence(&from, false) {
            Ok(start) => start.timestamp() < now,
            Err(_) => false,
        }
    }

    /// Whether the window applies to the Application `app` deploying to `dest`.
    pub fn matches(&self, app: &str, dest: &Destination) -> bool {
        let any = |patterns: &[String], values: &[&str]| {
            patterns.iter().any(|p| {
                values
                    .iter()
                    .any(|v| !v.is_empty() && Glob::plain(p).is_ok_and(|g| g.matches(v)))
            })
        };
        let w = &self.spec;
        let checks = [
            (!w.applications.is_empty()).then(|| any(&w.applications, &[app])),
            (!w.clusters.is_empty()).then(|| any(&w.clusters, &[&dest.name, &dest.server])),
            (!w.namespaces.is_empty()).then(|| any(&w.namespaces, &[&dest.namespace])),
        ];
        let mut given = checks.iter().flatten().peekable();
        if given.peek().is_none() {
            return false;
        }
        if w.and_operator {
            given.all(|&m| m)
        } else {
            given.any(|&m| m)
        }
    }
}

/// What the sync windows say about a sync now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowVerdict {
    /// No window applies, or an allow window is open (and no deny window is).
    Allowed,
    /// Let through only because every blocking window has `manualSync: true`.
    AllowedManually {
        /// The windows that block other syncs, each as `deny '0 22 * * *' for 8h (UTC)`.
        windows: Vec<String>,
    },
    /// Blocked: the windows that block it (an open deny window, or the allow windows that
    /// are all closed).
    Blocked {
        /// The blocking windows, each as `deny '0 22 * * *' for 8h (UTC)`.
        windows: Vec<String>,
    },
}

impl WindowVerdict {
    /// Whether the sync may run (`Allowed` or `AllowedManually`).
    pub fn allowed(&self) -> bool {
        !matches!(self, WindowVerdict::Blocked { .. })
    }

    /// One line for a condition or `plumb app get`: `blocked by sync window deny '0 22 * * *' for 8h`.
    pub fn message(&self) -> Option<String> {
        match self {
            WindowVerdict::Allowed => None,
            WindowVerdict::AllowedManually { windows } => Some(format!(
                "manual sync allowed by sync window {}",
                windows.join(", ")
            )),
            WindowVerdict::Blocked { windows } => {
                Some(format!("blocked by sync window {}", windows.join(", ")))
            }
        }
    }
}

/// An `AppProject` as a policy: the typed model's object ([`model::AppProject`], the one
/// read path) validated, its sync windows compiled.
#[derive(Debug, Clone)]
pub struct AppProject {
    /// `metadata.name` (`<unnamed>` when it has none).
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// The spec as read (`namespaceResourceWhitelist` absent ≠ empty, as in the model).
    pub spec: model::AppProjectSpec,
    sync_windows: Vec<SyncWindow>,
}

impl AppProject {
    /// Reads an AppProject object (`argoproj.io` or `plumb.dev`; only the spec matters)
    /// through the typed model and compiles it.
    pub fn from_value(obj: &Value) -> Result<AppProject, ProjectError> {
        match model::AppProject::from_value(obj) {
            Ok(m) => AppProject::compile(&m),
            Err(e) => Err(ProjectError {
                project: obj
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("<unnamed>")
                    .to_string(),
                field: if e.path.is_empty() {
                    "spec".into()
                } else {
                    e.path
                },
                reason: e.message,
            }),
        }
    }

    /// The policy of a project read through the typed model: what can be invalid (globs,
    /// cron schedules, durations, time zones) is checked here and named by its field.
    pub fn compile(project: &model::AppProject) -> Result<AppProject, ProjectError> {
        let name = match project.metadata.name.as_str() {
            "" => "<unnamed>".to_string(),
            n => n.to_string(),
        };
        let err = |field: String, reason: String| ProjectError {
            project: name.clone(),
            field,
            reason,
        };
        let raw = &project.spec;
        // Every glob is compiled once here, so a bad one is reported with its field.
        let check = |field: String, pattern: &str, kind: GlobKind| {
            Glob::new(pattern.strip_prefix('!').unwrap_or(pattern), kind)
                .map(|_| ())
                .map_err(|reason| err(field, reason))
        };
        for (i, r) in raw.source_repos.iter().enumerate() {
            if r == "!*" {
                return Err(err(
                    format!("spec.sourceRepos[{i}]"),
                    "'!*' denies every repository".into(),
                ));
            }
            check(format!("spec.sourceRepos[{i}]"), r, GlobKind::Path)?;
        }
        for (i, d) in raw.destinations.iter().enumerate() {
            for (field, p) in [
                ("server", &d.server),
                ("name", &d.name),
                ("namespace", &d.namespace),
            ] {
                if p == "!*" {
                    return Err(err(
                        format!("spec.destinations[{i}].{field}"),
                        "'!*' has an invalid format".into(),
                    ));
                }
                check(
                    format!("spec.destinations[{i}].{field}"),
                    p,
                    GlobKind::Plain,
                )?;
            }
        }
        let lists: [(&str, &[GroupKindPattern]); 4] = [
            (
                "clusterResourceWhitelist",
                raw.cluster_resource_whitelist.as_deref().unwrap_or(&[]),
            ),
            ("clusterResourceBlacklist", &raw.cluster_resource_blacklist),
            (
                "namespaceResourceWhitelist",
                raw.namespace_resource_whitelist.as_deref().unwrap_or(&[]),
            ),
            (
                "namespaceResourceBlacklist",
                &raw.namespace_resource_blacklist,
            ),
        ];
        for (list, rules) in lists {
            for (i, r) in rules.iter().enumerate() {
                for (field, p) in [("group", &r.group), ("kind", &r.kind), ("name", &r.name)] {
                    check(format!("spec.{list}[{i}].{field}"), p, GlobKind::Path)?;
                }
            }
        }
        if let Some(orphaned) = &raw.orphaned_resources {
            for (i, r) in orphaned.ignore.iter().enumerate() {
                for (field, p) in [("group", &r.group), ("kind", &r.kind), ("name", &r.name)] {
                    check(
                        format!("spec.orphanedResources.ignore[{i}].{field}"),
                        p,
                        GlobKind::Plain,
                    )?;
                }
            }
        }
        for (i, ns) in raw.source_namespaces.iter().enumerate() {
            NamespacePattern::new(ns).map_err(|r| err(format!("spec.sourceNamespaces[{i}]"), r))?;
        }
        let mut sync_windows = Vec::new();
        for (i, w) in raw.sync_windows.iter().enumerate() {
            let field = |f: &str| format!("spec.syncWindows[{i}].{f}");
            let kind = match w.kind.as_str() {
                "allow" => WindowKind::Allow,
                "deny" => WindowKind::Deny,
                other => {
                    return Err(err(
                        field("kind"),
                        format!("{other:?} is neither allow nor deny"),
                    ));
                }
            };
            let cron = parse_schedule(&w.schedule).map_err(|r| err(field("schedule"), r))?;
            let length = parse_go_duration(&w.duration).map_err(|r| err(field("duration"), r))?;
            let time_zone = if w.time_zone.is_empty() {
                "UTC".to_string()
            } else {
                w.time_zone.clone()
            };
            let tz = jiff::tz::TimeZone::get(&time_zone).map_err(|e| {
                err(
                    field("timeZone"),
                    format!("unknown time zone {time_zone:?}: {e}"),
                )
            })?;
            for (f, patterns) in [
                ("applications", &w.applications),
                ("namespaces", &w.namespaces),
                ("clusters", &w.clusters),
            ] {
                for (j, p) in patterns.iter().enumerate() {
                    Glob::plain(p).map_err(|r| err(format!("{}[{j}]", field(f)), r))?;
                }
            }
            if w.applications.is_empty() && w.namespaces.is_empty() && w.clusters.is_empty() {
                return Err(err(
                    format!("spec.syncWindows[{i}]"),
                    "a window needs one of applications, namespaces or clusters".into(),
                ));
            }
            sync_windows.push(SyncWindow {
                kind,
                spec: w.clone(),
                time_zone,
                cron,
                length,
                tz,
            });
        }
        Ok(AppProject {
            name,
            namespace: project.metadata.namespace.clone(),
            spec: raw.clone(),
            sync_windows,
        })
    }

    /// The compiled `spec.syncWindows`, in order.
    pub fn sync_windows(&self) -> &[SyncWindow] {
        &self.sync_windows
    }

    /// Whether an Application may take its manifests from `repo_url`.
    pub fn source_permitted(&self, repo_url: &str) -> Result<(), Denial> {
        let url = normalize_repo_url(repo_url);
        let mut any = false;
        for pattern in &self.spec.source_repos {
            let (deny, p) = split_deny(pattern);
            let p = normalize_repo_url(p);
            // As in Argo CD, a deny pattern that does not match counts as a match: a list of
            // only `!` entries permits everything else.
            let matched = if deny {
                !glob_match(&p, &url, GlobKind::Path)
            } else {
                p == "*" || glob_match(&p, &url, GlobKind::Path)
            };
            if matched {
                any = true;
            } else if deny {
                return Err(self.source_denial(repo_url));
            }
        }
        if any {
            Ok(())
        } else {
            Err(self.source_denial(repo_url))
        }
    }

    fn source_denial(&self, repo_url: &str) -> Denial {
        Denial::new(format!(
            "application repo {repo_url} is not permitted in project '{}'",
            self.name
        ))
    }

    /// Whether an Application (or one of its resources, with the resource's namespace) may
    /// deploy to `dest`.
    pub fn destination_permitted(&self, dest: &Destination) -> Result<(), Denial> {
        let mut any = false;
        let mut denied = false;
        for item in &self.spec.destinations {
            let m = glob_match_negatable;
            let name_matched = !dest.name.is_empty() && m(&item.name, &dest.name);
            let server_matched = !dest.server.is_empty() && m(&item.server, &dest.server);
            let namespace_matched = m(&item.namespace, &dest.namespace);
            if (server_matched || name_matched) && namespace_matched {
                any = true;
            } else if (!name_matched && is_deny(&item.name))
                || (!server_matched && is_deny(&item.server))
                || (!namespace_matched && is_deny(&item.namespace))
            {
                denied = true;
            }
        }
        if any && !denied {
            return Ok(());
        }
        let cluster = if dest.server.is_empty() {
            format!("name '{}'", dest.name)
        } else {
            format!("server '{}'", dest.server)
        };
        Err(Denial::new(format!(
            "application destination {cluster} and namespace '{}' do not match any of the allowed destinations in project '{}'",
            dest.namespace, self.name
        )))
    }

    /// Whether a resource of this group and kind (and name) may be deployed: the
    /// cluster-scoped lists for a cluster-scoped kind, the namespaced ones otherwise.
    pub fn group_kind_permitted(
        &self,
        group: &str,
        kind: &str,
        name: &str,
        namespaced: bool,
    ) -> Result<(), Denial> {
        fn in_list<'r>(
            rules: &'r [GroupKindPattern],
            gkn: (&str, &str, &str),
        ) -> Option<&'r GroupKindPattern> {
            rules.iter().find(|r| rule_matches(r, gkn.0, gkn.1, gkn.2))
        }
        let gkn = (group, kind, name);
        let shown = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{group}:{kind}")
        };
        let denial = |why: String| {
            Denial::new(format!(
                "resource {shown} {name} is not permitted in project {}: {why}",
                self.name
            ))
        };
        if namespaced {
            if let Some(white) = &self.spec.namespace_resource_whitelist
                && in_list(white, gkn).is_none()
            {
                return Err(denial("not in namespaceResourceWhitelist".into()));
            }
            if let Some(rule) = in_list(&self.spec.namespace_resource_blacklist, gkn) {
                return Err(denial(format!("namespaceResourceBlacklist has {rule}")));
            }
        } else {
            let white = self
                .spec
                .cluster_resource_whitelist
                .as_deref()
                .unwrap_or(&[]);
            if in_list(white, gkn).is_none() {
                return Err(denial("not in clusterResourceWhitelist".into()));
            }
            if let Some(rule) = in_list(&self.spec.cluster_resource_blacklist, gkn) {
                return Err(denial(format!("clusterResourceBlacklist has {rule}")));
            }
        }
        Ok(())
    }

    /// A resource of the app: its kind against the lists and, when namespaced, its namespace
    /// against the destinations (on the Application's cluster).
    pub fn resource_permitted(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        app_dest: &Destination,
    ) -> Result<(), Denial> {
        self.group_kind_permitted(group, kind, name, !namespace.is_empty())?;
        if !namespace.is_empty() {
            self.destination_permitted(&app_dest.with_namespace(namespace))?;
        }
        Ok(())
    }

    /// Whether an Application in namespace `app_namespace` may use this project: the
    /// controller's own namespace always may, others only when `sourceNamespaces` lists them.
    pub fn app_namespace_permitted(
        &self,
        app: &str,
        app_namespace: &str,
        controller_namespace: &str,
    ) -> Result<(), Denial> {
        if app_namespace.is_empty() || app_namespace == controller_namespace {
            return Ok(());
        }
        let ok = self
            .spec
            .source_namespaces
            .iter()
            .any(|p| NamespacePattern::new(p).is_ok_and(|p| p.is_match(app_namespace)));
        if ok {
            Ok(())
        } else {
            Err(Denial::new(format!(
                "application '{app}' in namespace '{app_namespace}' is not allowed to use project {}",
                self.name
            )))
        }
    }

    /// The sync windows that apply to the Application `app` deploying to `dest`.
    pub fn windows_for<'a>(&'a self, app: &str, dest: &Destination) -> Vec<&'a SyncWindow> {
        self.sync_windows
            .iter()
            .filter(|w| w.matches(app, dest))
            .collect()
    }

    /// Whether a sync of `app` may run at `now` (`manual`: asked for by a person, not the
    /// automated policy), as Argo CD's windows decide: an open deny window blocks (a manual
    /// sync passes only when every open deny window has `manualSync`); otherwise an open
    /// allow window permits; otherwise allow windows that exist but are all closed block
    /// (again unless manual and one of them has `manualSync`).
    pub fn sync_allowed(
        &self,
        app: &str,
        dest: &Destination,
        manual: bool,
        now: jiff::Timestamp,
    ) -> WindowVerdict {
        let windows = self.windows_for(app, dest);
        if windows.is_empty() {
            return WindowVerdict::Allowed;
        }
        let (active, inactive): (Vec<&SyncWindow>, Vec<&SyncWindow>) =
            windows.iter().partition(|w| w.active(now));
        let names = |ws: &[&SyncWindow]| ws.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let deny: Vec<&SyncWindow> = active
            .iter()
            .copied()
            .filter(|w| w.kind == WindowKind::Deny)
            .collect();
        if !deny.is_empty() {
            return if manual && deny.iter().all(|w| w.spec.manual_sync) {
                WindowVerdict::AllowedManually {
                    windows: names(&deny),
                }
            } else {
                WindowVerdict::Blocked {
                    windows: names(&deny),
                }
            };
        }
        if active.iter().any(|w| w.kind == WindowKind::Allow) {
            return WindowVerdict::Allowed;
        }
        let closed_allows: Vec<&SyncWindow> = inactive
            .iter()
            .copied()
            .filter(|w| w.kind == WindowKind::Allow)
            .collect();
        if closed_allows.is_empty() {
            return WindowVerdict::Allowed;
        }
        if manual && closed_allows.iter().any(|w| w.spec.manual_sync) {
            WindowVerdict::AllowedManually {
                windows: names(&closed_allows),
            }
        } else {
            WindowVerdict::Blocked {
                windows: names(&closed_allows),
            }
        }
    }

    /// What the sync windows say now, for `plumb app get` (Argo CD's "Sync Window" field):
    /// `None` when no window of the project applies to the app; `Sync Allowed`; or `Sync
    /// Denied by` the blocking windows (kind, schedule, duration, time zone) and whether a
    /// manual sync may still run.
    pub fn window_summary(
        &self,
        app: &str,
        dest: &Destination,
        now: std::time::SystemTime,
    ) -> Option<String> {
        if self.windows_for(app, dest).is_empty() {
            return None;
        }
        let now = jiff::Timestamp::try_from(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        match self.sync_allowed(app, dest, false, now) {
            WindowVerdict::Blocked { windows } => {
                let manual = if self.sync_allowed(app, dest, true, now).allowed() {
                    "manual sync allowed"
                } else {
                    "manual sync denied too"
                };
                Some(format!(
                    "Sync Denied by sync window {}; {manual}",
                    windows.join(", ")
                ))
            }
            _ => Some("Sync Allowed".into()),
        }
    }

    /// `spec.orphanedResources`: `None` when the project does not monitor orphaned
    /// resources, else whether an Application gets the `OrphanedResourceWarning` condition
    /// (`warn`; absent means yes, as Argo CD reads it: the monitoring is turned on by the
    /// field's presence, `warn: false` keeps it quiet).
    pub fn orphans_warn(&self) -> Option<bool> {
        self.spec
            .orphaned_resources
            .as_ref()
            .map(|o| o.warn.unwrap_or(true))
    }

    /// Whether `spec.orphanedResources.ignore` exempts a resource: an entry matches when
    /// its `kind` is empty or matches, its `group` matches (empty: the core group only) and
    /// its `name` is empty or matches (globs where `*` crosses every character, as Argo CD's
    /// `glob.Match`).
    pub fn orphan_ignored(&self, group: &str, kind: &str, name: &str) -> bool {
        let Some(orphaned) = &self.spec.orphaned_resources else {
            return false;
        };
        orphaned.ignore.iter().any(|r| {
            (r.kind.is_empty() || glob_match(&r.kind, kind, GlobKind::Plain))
                && glob_match(&r.group, group, GlobKind::Plain)
                && (r.name.is_empty() || glob_match(&r.name, name, GlobKind::Plain))
        })
    }

    /// Argo CD's `default` project as it is created: everything permitted.
    pub fn permissive_default() -> AppProject {
        AppProject {
            name: DEFAULT_PROJECT.into(),
            namespace: String::new(),
            spec: model::AppProjectSpec {
                source_repos: vec!["*".into()],
                destinations: vec![Destination::new("*", "*", "*")],
                cluster_resource_whitelist: Some(vec![GroupKindPattern::new("*", "*")]),
                ..model::AppProjectSpec::default()
            },
            sync_windows: Vec::new(),
        }
    }
}

fn rule_matches(rule: &GroupKindPattern, group: &str, kind: &str, name: &str) -> bool {
    glob_match(&rule.kind, kind, GlobKind::Path)
        && glob_match(&rule.group, group, GlobKind::Path)
        && (rule.name.is_empty() || glob_match(&rule.name, name, GlobKind::Path))
}

fn is_deny(pattern: &str) -> bool {
    pattern.starts_with('!')
}

fn split_deny(pattern: &str) -> (bool, &str) {
    match pattern.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    }
}

/// A destination pattern: `!` negates, `*` matches everything (also the empty string).
fn glob_match_negatable(pattern: &str, value: &str) -> bool {
    let (deny, p) = split_deny(pattern);
    if !deny && p == "*" {
        return true;
    }
    glob_match(p, value, GlobKind::Plain) != deny
}

fn glob_match(pattern: &str, value: &str, kind: GlobKind) -> bool {
    Glob::new(pattern, kind).is_ok_and(|g| g.matches(value))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GlobKind {
    /// `*` matches any run of characters.
    Plain,
    /// `/` separates: `*` stays within one segment, `**` crosses them (repository URLs,
    /// and Go's `filepath.Match` for group/kind).
    Path,
}

struct Glob(GlobMatcher);

impl Glob {
    fn new(pattern: &str, kind: GlobKind) -> Result<Glob, String> {
        GlobBuilder::new(pattern)
            .literal_separator(kind == GlobKind::Path)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map(|g| Glob(g.compile_matcher()))
            .map_err(|e| format!("invalid glob {pattern:?}: {}", e.kind()))
    }

    fn plain(pattern: &str) -> Result<Glob, String> {
        Glob::new(pattern, GlobKind::Plain)
    }

    fn matches(&self, value: &str) -> bool {
        self.0.is_match(value)
    }
}

/// A repository URL as Argo CD compares them: lower case, no `.git` suffix or trailing `/`,
/// `user@host:path` written as `ssh://user@host/path`.
pub fn normalize_repo_url(url: &str) -> String {
    let mut u = url.trim().to_lowercase();
    if !u.contains("://")
        && let Some((userhost, path)) = u.split_once(':')
        && userhost.contains('@')
        && !path.starts_with("//")
    {
        u = format!("ssh://{userhost}/{}", path.trim_start_matches('/'));
    }
    while u.ends_with('/') {
        u.pop();
    }
    if let Some(s) = u.strip_suffix(".git") {
        u = s.to_string();
    }
    u
}

/// A sync window's schedule: five fields (minute hour day-of-month month day-of-week,
/// day-of-month and day-of-week ORed as cron does) or a descriptor (`@daily`).
fn parse_schedule(schedule: &str) -> Result<croner::Cron, String> {
    if schedule.trim().is_empty() {
        return Err("a schedule is required".into());
    }
    let fields = schedule.split_whitespace().count();
    if !schedule.trim_start().starts_with('@') && fields != 5 {
        return Err(format!(
            "invalid cron schedule {schedule:?}: expected 5 fields (minute hour day-of-month month day-of-week), found {fields}"
        ));
    }
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .build()
        .parse(schedule)
        .map_err(|e| format!("invalid cron schedule {schedule:?}: {e}"))
}

/// A Go duration (`1h30m`, `90s`, `1.5h`): a sequence of decimal numbers with a unit (`ns`,
/// `us`, `µs`, `ms`, `s`, `m`, `h`).
fn parse_go_duration(text: &str) -> Result<jiff::SignedDuration, String> {
    let d = crate::duration::parse_go_duration(text).map_err(|e| e.to_string())?;
    if d.as_nanos() <= 0 {
        return Err(format!("duration {text:?} must be positive"));
    }
    Ok(jiff::SignedDuration::from_nanos(d.as_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project(spec: Value) -> AppProject {
        AppProject::from_value(&json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
    }

    fn error(spec: Value) -> String {
        AppProject::from_value(&json!({"metadata": {"name": "p"}, "spec": spec}))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn orphaned_resources_settings_and_ignore_globs() {
        assert_eq!(project(json!({})).orphans_warn(), None);
        assert_eq!(
            project(json!({"orphanedResources": {}})).orphans_warn(),
            Some(true),
            "present without warn: warns, as Argo CD's IsWarn"
        );
        assert_eq!(
            project(json!({"orphanedResources": {"warn": false}})).orphans_warn(),
            Some(false)
        );
        let p = project(json!({"orphanedResources": {"ignore": [
            {"group": "", "kind": "ConfigMap", "name": "debug-*"},
            {"group": "apps"},
            {"group": "*.example.com", "kind": "Wid?et"},
        ]}}));
        assert!(p.orphan_ignored("", "ConfigMap", "debug-1"));
        assert!(!p.orphan_ignored("", "ConfigMap", "other"));
        assert!(!p.orphan_ignored("", "Secret", "debug-1"));
        assert!(
            p.orphan_ignored("apps", "Deployment", "web"),
            "empty kind: any"
        );
        assert!(
            !p.orphan_ignored("", "Deployment", "web"),
            "empty group: core only"
        );
        assert!(p.orphan_ignored("a.b.example.com", "Widget", "w"));
        assert!(!project(json!({})).orphan_ignored("", "ConfigMap", "x"));
        assert_eq!(
            error(json!({"orphanedResources": {"ignore": [{"kind": "[x"}]}})),
            "AppProject p: spec.orphanedResources.ignore[0].kind: invalid glob \"[x\": unclosed character class; missing ']'"
        );
    }

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    const IN_CLUSTER: &str = "https://kubernetes.default.svc";

    #[test]
    fn destinations_as_argo_cd_matches_them() {
        let p = project(json!({"destinations": [
            {"server": IN_CLUSTER, "namespace": "guestbook"},
            {"server": IN_CLUSTER, "namespace": "guestbook-*"},
            {"name": "prod-*", "namespace": "*"},
        ]}));
        let ok = |server: &str, name: &str, ns: &str| {
            p.destination_permitted(&Destination::new(server, name, ns))
                .is_ok()
        };
        assert!(ok(IN_CLUSTER, "", "guestbook"));
        assert!(ok(IN_CLUSTER, "", "guestbook-dev"));
        assert!(!ok(IN_CLUSTER, "", "kube-system"));
        assert!(!ok("https://other:6443", "", "guestbook"));
        assert!(ok("", "prod-eu", "anything"));
        assert!(!ok("", "staging", "guestbook"));
        // `*` in a namespace pattern matches the empty namespace (cluster-scoped apps).
        assert!(ok("", "prod-eu", ""));
    }

    #[test]
    fn a_deny_destination_that_does_not_match_refuses_outright() {
        let p = project(json!({"destinations": [
            {"server": "*", "namespace": "*"},
            {"server": "*", "namespace": "!kube-system"},
            {"server": "!https://prod:6443", "namespace": "*"},
        ]}));
        let d = |server: &str, ns: &str| Destination::new(server, "", ns);
        assert!(p.destination_permitted(&d(IN_CLUSTER, "web")).is_ok());
        let e = p
            .destination_permitted(&d(IN_CLUSTER, "kube-system"))
            .unwrap_err();
        assert_eq!(
            e.message,
            "application destination server 'https://kubernetes.default.svc' and namespace 'kube-system' do not match any of the allowed destinations in project 'p'"
        );
        assert!(
            p.destination_permitted(&d("https://prod:6443", "web"))
                .is_err()
        );
        // No destinations at all: nothing is permitted.
        assert!(
            project(json!({}))
                .destination_permitted(&d(IN_CLUSTER, "web"))
                .is_err()
        );
    }

    #[test]
    fn source_repos_normalised_with_segments_and_negation() {
        let p = project(json!({"sourceRepos": [
            "https://git.example.com/team-a/*",
            "git@git.example.com:platform/*",
            "!https://git.example.com/team-a/secret",
        ]}));
        assert!(
            p.source_permitted("https://git.example.com/team-a/web")
                .is_ok()
        );
        assert!(
            p.source_permitted("https://GIT.example.com/team-a/web.git/")
                .is_ok()
        );
        assert!(
            p.source_permitted("ssh://git@git.example.com/platform/base")
                .is_ok()
        );
        assert!(
            p.source_permitted("git@git.example.com:platform/base.git")
                .is_ok()
        );
        let e = p
            .source_permitted("https://git.example.com/team-a/secret")
            .unwrap_err();
        assert_eq!(
            e.message,
            "application repo https://git.example.com/team-a/secret is not permitted in project 'p'"
        );
        // `*` stays within one path segment.
        let p = project(json!({"sourceRepos": ["https://git.example.com/team-a/*"]}));
        assert!(
            p.source_permitted("https://git.example.com/team-a/x/y")
                .is_err()
        );
        // A deny entry that does not match counts as a match (Argo CD's rule).
        let p = project(json!({"sourceRepos": ["!https://git.example.com/secret"]}));
        assert!(p.source_permitted("https://git.example.com/web").is_ok());
        assert!(
            p.source_permitted("https://git.example.com/secret.git")
                .is_err()
        );
        assert!(
            project(json!({"sourceRepos": ["*"]}))
                .source_permitted("/srv/git/x")
                .is_ok()
        );
        assert!(
            project(json!({"sourceRepos": ["https://h/**"]}))
                .source_permitted("https://h/a/b/c")
                .is_ok()
        );
        assert!(project(json!({})).source_permitted("https://h/a").is_err());
    }

    #[test]
    fn resource_lists_as_argo_cd_reads_them() {
        // No lists: namespaced kinds all permitted, cluster-scoped none.
        let p = project(json!({"destinations": [{"server": "*", "namespace": "*"}]}));
        assert!(
            p.group_kind_permitted("apps", "Deployment", "web", true)
                .is_ok()
        );
        let e = p
            .group_kind_permitted(
                "rbac.authorization.k8s.io",
                "ClusterRoleBinding",
                "admin",
                false,
            )
            .unwrap_err();
        assert_eq!(
            e.message,
            "resource rbac.authorization.k8s.io:ClusterRoleBinding admin is not permitted in project p: not in clusterResourceWhitelist"
        );
        let p = project(json!({
            "clusterResourceWhitelist": [{"group": "", "kind": "Namespace"}],
            "clusterResourceBlacklist": [{"group": "", "kind": "Namespace", "name": "kube-*"}],
            "namespaceResourceWhitelist": [{"group": "*", "kind": "*"}],
            "namespaceResourceBlacklist": [{"group": "", "kind": "ResourceQuota"}],
        }));
        assert!(
            p.group_kind_permitted("", "Namespace", "team-a", false)
                .is_ok()
        );
        assert!(
            p.group_kind_permitted("", "Namespace", "kube-public", false)
                .is_err()
        );
        assert!(p.group_kind_permitted("", "ConfigMap", "x", true).is_ok());
        let e = p
            .group_kind_permitted("", "ResourceQuota", "q", true)
            .unwrap_err();
        assert!(
            e.message
                .ends_with("namespaceResourceBlacklist has ''/ResourceQuota"),
            "{e}"
        );
        // An empty (not absent) namespaced whitelist permits nothing.
        let p = project(json!({"namespaceResourceWhitelist": []}));
        assert!(p.group_kind_permitted("", "ConfigMap", "x", true).is_err());
    }

    #[test]
    fn resource_namespace_checked_against_destinations() {
        let p = project(json!({
            "destinations": [{"server": IN_CLUSTER, "namespace": "team-a"}],
        }));
        let dest = Destination::new(IN_CLUSTER, "", "team-a");
        assert!(
            p.resource_permitted("", "ConfigMap", "team-a", "x", &dest)
                .is_ok()
        );
        assert!(
            p.resource_permitted("", "ConfigMap", "kube-system", "x", &dest)
                .is_err()
        );
    }

    #[test]
    fn application_namespaces() {
        let p = project(json!({"sourceNamespaces": ["team-*", "/^ops-[0-9]+$/"]}));
        assert!(p.app_namespace_permitted("a", "argocd", "argocd").is_ok());
        assert!(p.app_namespace_permitted("a", "team-a", "argocd").is_ok());
        assert!(p.app_namespace_permitted("a", "ops-12", "argocd").is_ok());
        let e = p
            .app_namespace_permitted("a", "other", "argocd")
            .unwrap_err();
        assert_eq!(
            e.message,
            "application 'a' in namespace 'other' is not allowed to use project p"
        );
    }

    fn windows(ws: Value) -> AppProject {
        project(json!({"syncWindows": ws}))
    }

    #[test]
    fn a_deny_window_blocks_while_open_and_manual_sync_passes_if_allowed() {
        let p = windows(json!([{
            "kind": "deny", "schedule": "0 22 * * *", "duration": "8h",
            "applications": ["*"], "manualSync": true,
        }]));
        let d = Destination::new(IN_CLUSTER, "", "web");
        let night = ts("2026-12-02T01:00:00Z");
        let day = ts("2026-12-02T12:00:00Z");
        assert_eq!(
            p.sync_allowed("web", &d, false, night),
            WindowVerdict::Blocked {
                windows: vec!["deny '0 22 * * *' for 8h (UTC)".into()]
            }
        );
        assert!(p.sync_allowed("web", &d, true, night).allowed());
        assert_eq!(
            p.sync_allowed("web", &d, false, day),
            WindowVerdict::Allowed
        );
        // The window ends after its duration.
        assert!(
            p.sync_allowed("web", &d, false, ts("2026-12-02T06:00:01Z"))
                .allowed()
        );
        assert!(
            !p.sync_allowed("web", &d, false, ts("2026-12-02T05:59:59Z"))
                .allowed()
        );
    }

    #[test]
    fn allow_windows_block_outside_and_deny_wins() {
        let p = windows(json!([
            {"kind": "allow", "schedule": "0 9 * * 1-5", "duration": "8h", "namespaces": ["prod-*"]},
            {"kind": "deny", "schedule": "0 12 * * *", "duration": "1h", "clusters": ["in-cluster"]},
        ]));
        let prod = Destination::new(IN_CLUSTER, "in-cluster", "prod-web");
        // Wednesday 2026-12-02.
        assert!(
            p.sync_allowed("a", &prod, false, ts("2026-12-02T10:00:00Z"))
                .allowed()
        );
        assert!(
            !p.sync_allowed("a", &prod, false, ts("2026-12-02T12:30:00Z"))
                .allowed()
        );
        assert!(
            !p.sync_allowed("a", &prod, false, ts("2026-12-02T20:00:00Z"))
                .allowed()
        );
        // Saturday: the allow window does not open.
        assert!(
            !p.sync_allowed("a", &prod, false, ts("2026-12-05T10:00:00Z"))
                .allowed()
        );
        // Not matched by the allow window's namespaces, nor the deny window's cluster.
        let dev = Destination::new("https://dev:6443", "dev", "dev-web");
        assert!(
            p.sync_allowed("a", &dev, false, ts("2026-12-02T20:00:00Z"))
                .allowed()
        );
    }

    #[test]
    fn windows_in_a_time_zone_and_with_and_operator() {
        let p = windows(json!([{
            "kind": "deny", "schedule": "0 9 * * *", "duration": "1h",
            "applications": ["web"], "namespaces": ["prod"], "andOperator": true,
            "timeZone": "Europe/Berlin",
        }]));
        let prod = Destination::new(IN_CLUSTER, "", "prod");
        // 09:30 in Berlin (UTC+1 in December) is 08:30 UTC.
        assert!(
            !p.sync_allowed("web", &prod, false, ts("2026-12-02T08:30:00Z"))
                .allowed()
        );
        assert!(
            p.sync_allowed("web", &prod, false, ts("2026-12-02T09:30:00Z"))
                .allowed()
        );
        // andOperator: the namespace must match too.
        let dev = Destination::new(IN_CLUSTER, "", "dev");
        assert!(
            p.sync_allowed("web", &dev, false, ts("2026-12-02T08:30:00Z"))
                .allowed()
        );
    }

    #[test]
    fn invalid_projects_name_the_field() {
        assert_eq!(
            error(
                json!({"syncWindows": [{"kind": "deny", "schedule": "0 25 * * *", "duration": "1h", "applications": ["*"]}]})
            ),
            format!(
                "AppProject p: spec.syncWindows[0].schedule: {}",
                parse_schedule("0 25 * * *").unwrap_err()
            )
        );
        assert!(error(json!({"syncWindows": [{"kind": "deny", "schedule": "* * *", "duration": "1h", "applications": ["*"]}]}))
            .starts_with("AppProject p: spec.syncWindows[0].schedule: invalid cron schedule \"* * *\": expected 5 fields"));
        assert!(error(json!({"syncWindows": [{"kind": "deny", "schedule": "0 1 * * *", "duration": "1 hour", "applications": ["*"]}]}))
            .starts_with("AppProject p: spec.syncWindows[0].duration: "));
        assert!(error(json!({"syncWindows": [{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h", "applications": ["*"], "timeZone": "Mars/Olympus"}]}))
            .starts_with("AppProject p: spec.syncWindows[0].timeZone: unknown time zone \"Mars/Olympus\""));
        assert!(error(json!({"syncWindows": [{"kind": "maybe", "schedule": "0 1 * * *", "duration": "1h", "applications": ["*"]}]}))
            .starts_with("AppProject p: spec.syncWindows[0].kind: "));
        assert!(error(json!({"syncWindows": [{"kind": "deny", "schedule": "0 1 * * *", "duration": "1h"}]}))
            .starts_with("AppProject p: spec.syncWindows[0]: a window needs one of"));
        assert!(
            error(json!({"destinations": [{"server": "*", "namespace": "[a-"}]}))
                .starts_with("AppProject p: spec.destinations[0].namespace: invalid glob \"[a-\"")
        );
        assert!(
            error(json!({"sourceRepos": ["!*"]}))
                .starts_with("AppProject p: spec.sourceRepos[0]: ")
        );
        assert!(
            error(json!({"sourceNamespaces": ["/(/"]}))
                .starts_with("AppProject p: spec.sourceNamespaces[0]: invalid regular expression")
        );
        assert!(
            error(json!({"destinations": "everywhere"}))
                .starts_with("AppProject p: spec.destinations: invalid type")
        );
    }

    #[test]
    fn the_default_project_permits_everything() {
        let p = AppProject::permissive_default();
        let d = Destination::new("https://any:6443", "", "kube-system");
        assert!(p.destination_permitted(&d).is_ok());
        assert!(p.source_permitted("https://x/y").is_ok());
        assert!(
            p.group_kind_permitted(
                "rbac.authorization.k8s.io",
                "ClusterRoleBinding",
                "x",
                false
            )
            .is_ok()
        );
        assert!(
            p.sync_allowed("a", &d, false, ts("2026-12-02T00:00:00Z"))
                .allowed()
        );
    }

    #[test]
    fn the_window_summary_names_the_blocking_window() {
        let p = windows(json!([
            {"kind": "deny", "schedule": "0 22 * * *", "duration": "8h",
             "applications": ["web"], "timeZone": "Europe/Berlin", "manualSync": true},
        ]));
        let d = Destination::new(IN_CLUSTER, "", "web");
        let at = |s: &str| std::time::SystemTime::from(ts(s));
        // 02:00 in Berlin: inside the window.
        assert_eq!(
            p.window_summary("web", &d, at("2026-12-02T01:00:00Z"))
                .as_deref(),
            Some(
                "Sync Denied by sync window deny '0 22 * * *' for 8h (Europe/Berlin); manual sync allowed"
            )
        );
        assert_eq!(
            p.window_summary("web", &d, at("2026-12-02T12:00:00Z"))
                .as_deref(),
            Some("Sync Allowed")
        );
        assert_eq!(
            p.window_summary("api", &d, at("2026-12-02T01:00:00Z")),
            None
        );
        let p = windows(json!([
            {"kind": "allow", "schedule": "0 9 * * 1-5", "duration": "1h", "namespaces": ["*"]},
        ]));
        assert_eq!(
            p.window_summary("web", &d, at("2026-12-02T12:00:00Z"))
                .as_deref(),
            Some(
                "Sync Denied by sync window allow '0 9 * * 1-5' for 1h (UTC); manual sync denied too"
            )
        );
    }
}
