//! The doctor's findings as data, and their three renderings: `json` (stable, documented),
//! `text` (people) and `markdown` (a pull-request comment).
//!
//! Secret values never appear: the diff masks them before they reach a finding, and the
//! renderers print only what the findings carry.

pub use crate::cause::CauseType;
use crate::health::AppHealth;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

/// The state of the application as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The same revision synced again and again (or self-healed repeatedly) while fields differ
    /// right after each sync: something rewrites what git declares.
    Loop,
    /// A difference written after the last sync by someone else; one sync fixes it.
    Drift,
    /// The target revision is not the last synced one (or nothing was synced yet).
    OutOfSync,
    /// No differences.
    InSync,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Loop => "loop",
            Verdict::Drift => "drift",
            Verdict::OutOfSync => "out-of-sync",
            Verdict::InSync => "in-sync",
        }
    }
}

/// What the Application's status says about its syncs: the evidence of the verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopEvidence {
    /// The revision the last syncs applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// How many consecutive syncs (newest first in `status.history`) applied that revision.
    pub syncs: usize,
    /// The first of those syncs (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_sync_at: Option<String>,
    /// The last of those syncs (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync_at: Option<String>,
    /// Seconds between the first and the last of those syncs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_seconds: Option<u64>,
    /// `operationState.operation.sync.autoHealAttemptsCount`.
    pub self_heal_attempts: u64,
    /// The revision the app should be at (`status.sync.revision`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_revision: Option<String>,
}

impl LoopEvidence {
    /// Syncs of one revision in a row, or self-heal attempts, enough to call it a loop (when
    /// fields still differ): three syncs, or two self-heals.
    pub fn is_loop(&self) -> bool {
        self.syncs >= 3 || self.self_heal_attempts >= 2
    }
}

/// The whole diagnosis of one application.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub app: String,
    pub verdict: Verdict,
    #[serde(rename = "loop")]
    pub loop_evidence: LoopEvidence,
    /// The app's health and its resources' ([`crate::health`]); `None` for a preflight, which
    /// has no app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<AppHealth>,
    pub findings: Vec<Finding>,
}

/// An object, as Argo CD names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceRef {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ResourceRef {
    /// A core `Secret`: its values are masked, and the lines of its file are not shown.
    pub fn is_secret(&self) -> bool {
        self.group.is_empty() && self.kind == "Secret"
    }
}

impl std::fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} {}/{}",
            self.group, self.kind, self.namespace, self.name
        )
    }
}

/// One differing field (or, for a missing or extra object, the object itself: `path` "").
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub resource: ResourceRef,
    /// JSON pointer into the live object, list elements by index.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    pub cause: Cause,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared_at: Option<DeclaredAt>,
    /// In the order to try them: the first is the one to apply.
    pub fixes: Vec<Fix>,
}

/// Who rewrites the field, and why the doctor thinks so. Each evidence line starts with the
/// code of the check that found it (`[PD001] …`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    #[serde(rename = "type")]
    pub kind: CauseType,
    /// The writer: a webhook configuration's name, `HorizontalPodAutoscaler ns/name`, a manager.
    pub name: String,
    /// The `managedFields` manager that owns the field, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    pub evidence: Vec<String>,
}

/// Where git declares the desired value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeclaredAt {
    pub file: String,
    pub line: u32,
    /// The kustomization that pulls `file` in, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kustomization: Option<String>,
}

/// One ready-to-use fix.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Fix {
    /// Make git stop declaring the field.
    StopDeclaring(StopDeclaring),
    /// A narrow `ignoreDifferences` rule for the Application.
    IgnoreDifferences(IgnoreDifferences),
    /// Compare with a server-side dry run (admission runs on both sides).
    ServerSideDiff(ServerSideDiff),
    /// Sync: real drift, one sync restores git's value.
    Sync(SyncFix),
}

impl Fix {
    pub fn type_name(&self) -> &'static str {
        match self {
            Fix::StopDeclaring(_) => "stop-declaring",
            Fix::IgnoreDifferences(_) => "ignore-differences",
            Fix::ServerSideDiff(_) => "server-side-diff",
            Fix::Sync(_) => "sync",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StopDeclaring {
    /// `delete-file` (a patch that only sets this field) or `remove-lines`.
    pub action: StopAction,
    /// The file to delete or edit; absent when the renderer did not know origins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `remove-lines`: the 1-based lines of `file` to remove.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<u32>,
    /// `delete-file`: the kustomization entry that pulls the file in, to remove with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kustomization: Option<KustomizationEdit>,
    /// What to do, in one sentence (with the shell commands when the change is a deletion).
    pub description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopAction {
    DeleteFile,
    RemoveLines,
    /// Remove one entry of a kustomization list field (`kustomization`).
    RemoveEntry,
    /// An edit plumb describes but does not spell out.
    Edit,
}

/// Removing one entry of a kustomization list field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KustomizationEdit {
    pub file: String,
    /// `patches`, `patchesStrategicMerge`, `patchesJson6902`, `replicas`.
    pub field: String,
    pub index: usize,
    /// The entry as parsed.
    pub entry: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreDifferences {
    /// The `spec.ignoreDifferences[]` entry.
    pub rule: Value,
    pub sync_options: Vec<String>,
    /// `spec.ignoreDifferences` and `spec.syncPolicy.syncOptions`, to paste into the Application.
    pub yaml: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSideDiff {
    pub annotation: String,
    pub yaml: String,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncFix {
    pub command: String,
    pub note: String,
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

impl Finding {
    /// The field as printed: `(object)` for a whole missing or extra object.
    pub fn field(&self) -> &str {
        if self.path.is_empty() {
            "(object)"
        } else {
            &self.path
        }
    }

    /// Git's and the cluster's side as printed; a whole object is present on one side.
    pub fn sides(&self) -> (String, String) {
        if !self.path.is_empty() {
            return (show(self.desired.as_ref()), show(self.live.as_ref()));
        }
        let present = |yes: bool| if yes { "(present)" } else { "(absent)" }.to_string();
        let extra = self.cause.name == "extra";
        (present(!extra), present(extra))
    }
}

impl Report {
    /// Whether there is anything to report (the CLI's exit 1).
    pub fn has_findings(&self) -> bool {
        !self.findings.is_empty()
    }

    /// The stable JSON document (see the crate README).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a report is plain data")
    }

    /// The verdict in one sentence, as every rendering opens with it.
    pub fn headline(&self) -> String {
        let e = &self.loop_evidence;
        let rev = e.revision.as_deref().unwrap_or("?");
        match self.verdict {
            Verdict::Loop => {
                let mut s = format!("loop: revision {rev} synced {} times", e.syncs);
                if let Some(span) = e.span_seconds {
                    let _ = write!(s, " in {}", human_span(span));
                }
                if e.self_heal_attempts > 0 {
                    let _ = write!(s, ", {} self-heal attempts", e.self_heal_attempts);
                }
                s.push_str(", and fields still differ after each sync");
                s
            }
            Verdict::Drift => format!(
                "drift: changed in the cluster after the last sync of {rev}; one sync restores git's values"
            ),
            Verdict::OutOfSync => match (&e.target_revision, &e.revision) {
                (Some(t), Some(r)) if t != r => {
                    format!("out-of-sync: target revision {t} is not synced yet (last synced {r})")
                }
                (_, None) => "out-of-sync: nothing synced yet".into(),
                _ => "out-of-sync: differences not explained by a loop or a later write".into(),
            },
            Verdict::InSync => "in-sync: no differences".into(),
        }
    }

    /// For people: per resource, each field with git's and the cluster's values, the cause and
    /// its evidence, where git declares it, and the fixes.
    pub fn to_text(&self) -> String {
        let mut out = format!("{}: {}\n", self.app, self.headline());
        if let Some(h) = &self.health {
            let _ = writeln!(out, "health: {}", h.status);
            for r in h.resources.iter().filter(|r| r.is_judged()) {
                let line = format!(
                    "  {} {} {}",
                    r.resource,
                    r.status,
                    r.message.replace('\n', " ")
                );
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
        let mut last: Option<&ResourceRef> = None;
        for f in &self.findings {
            if last != Some(&f.resource) {
                let _ = write!(out, "\n{}\n", f.resource);
                last = Some(&f.resource);
            }
            let (git, cluster) = f.sides();
            let _ = writeln!(out, "  {}", f.field());
            let _ = writeln!(out, "    git:     {git}");
            let _ = writeln!(out, "    cluster: {cluster}");
            let _ = write!(out, "    who:     {}", f.cause.kind.as_str());
            if !f.cause.name.is_empty() && f.cause.name != f.cause.kind.as_str() {
                let _ = write!(out, " {}", f.cause.name);
            }
            if let Some(m) = &f.cause.manager {
                let _ = write!(out, " (manager {m})");
            }
            out.push('\n');
            for e in &f.cause.evidence {
                let _ = writeln!(out, "             {e}");
            }
            if let Some(d) = &f.declared_at {
                let _ = write!(out, "    git declares it at {}:{}", d.file, d.line);
                if let Some(k) = &d.kustomization {
                    let _ = write!(out, " (pulled in by {k})");
                }
                out.push('\n');
            }
            for (i, fix) in f.fixes.iter().enumerate() {
                let _ = writeln!(out, "    fix {}: {}", i + 1, fix_summary(fix));
                for line in fix_body(fix).lines() {
                    let _ = writeln!(out, "        {line}");
                }
            }
        }
        out
    }

    /// A pull-request comment.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "### plumb doctor: `{}` — **{}**\n\n{}\n",
            self.app,
            self.verdict.as_str(),
            self.headline()
        );
        if let Some(h) = &self.health {
            let _ = write!(out, "\nHealth: **{}**\n", h.status);
            let judged: Vec<_> = h.resources.iter().filter(|r| r.is_judged()).collect();
            if !judged.is_empty() {
                out.push_str("\n| Resource | Health | Message |\n|---|---|---|\n");
                for r in judged {
                    let _ = writeln!(
                        out,
                        "| `{}` | {} | {} |",
                        r.resource,
                        r.status,
                        md_cell(&r.message)
                    );
                }
            }
        }
        if self.findings.is_empty() {
            return out;
        }
        out.push_str("\n| Resource | Field | Git | Cluster | Who | Declared at |\n|---|---|---|---|---|---|\n");
        for f in &self.findings {
            let (git, cluster) = f.sides();
            let _ = writeln!(
                out,
                "| `{}` | `{}` | `{}` | `{}` | {} `{}` | {} |",
                f.resource,
                f.field(),
                md_cell(&git),
                md_cell(&cluster),
                f.cause.kind.as_str(),
                md_cell(&f.cause.name),
                f.declared_at
                    .as_ref()
                    .map_or("—".to_string(), |d| format!("`{}:{}`", d.file, d.line)),
            );
        }
        for f in &self.findings {
            let _ = write!(out, "\n#### `{}` `{}`\n\n", f.resource, f.field());
            for e in &f.cause.evidence {
                let _ = writeln!(out, "- {}", md_cell(e));
            }
            out.push('\n');
            for (i, fix) in f.fixes.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{}. **{}**: {}",
                    i + 1,
                    fix.type_name(),
                    fix_summary(fix)
                );
                let body = fix_body(fix);
                if !body.is_empty() {
                    let lang = if matches!(fix, Fix::StopDeclaring(_) | Fix::Sync(_)) {
                        "sh"
                    } else {
                        "yaml"
                    };
                    let _ = writeln!(out, "   ```{lang}");
                    for line in body.lines() {
                        let _ = writeln!(out, "   {line}");
                    }
                    out.push_str("   ```\n");
                }
            }
        }
        out
    }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A span of seconds for people: `45s`, `3m20s`, `2h5m`.
pub fn human_span(secs: u64) -> String {
    if secs < 120 {
        format!("{secs}s")
    } else if secs < 7200 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else {
        format!("{}h{}m", secs / 3600, (secs % 3600) / 60)
    }
}

impl Fix {
    /// What the fix does, in one line.
    pub fn summary(&self) -> String {
        fix_summary(self)
    }

    /// The text to copy (commands, or YAML to paste); empty when the summary says it all.
    pub fn body(&self) -> String {
        fix_body(self)
    }
}

fn fix_summary(fix: &Fix) -> String {
    match fix {
        Fix::StopDeclaring(s) => s.description.clone(),
        Fix::IgnoreDifferences(_) => {
            "ignore this one field, and keep sync from re-applying it (paste into the Application)"
                .into()
        }
        Fix::ServerSideDiff(s) => format!("compare with a server-side dry run; {}", s.note),
        Fix::Sync(s) => s.note.clone(),
    }
}

fn fix_body(fix: &Fix) -> String {
    match fix {
        Fix::StopDeclaring(s) => match (&s.action, &s.file) {
            (StopAction::DeleteFile, Some(file)) => {
                let mut b = format!("git rm {file}\n");
                if let Some(k) = &s.kustomization {
                    let _ = writeln!(
                        b,
                        "# in {}: remove {}[{}]: {}",
                        k.file, k.field, k.index, k.entry
                    );
                }
                b
            }
            (StopAction::RemoveEntry, Some(_)) => match &s.kustomization {
                Some(k) => format!(
                    "# in {}: remove {}[{}]: {}\n",
                    k.file, k.field, k.index, k.entry
                ),
                None => String::new(),
            },
            (StopAction::RemoveLines, Some(file)) if !s.lines.is_empty() => {
                let lines: Vec<String> = s.lines.iter().map(|l| format!("{l}d")).collect();
                format!("sed -i '{}' {file}\n", lines.join(";"))
            }
            _ => String::new(),
        },
        Fix::IgnoreDifferences(i) => i.yaml.clone(),
        Fix::ServerSideDiff(s) => s.yaml.clone(),
        Fix::Sync(s) => format!("{}\n", s.command),
    }
}
