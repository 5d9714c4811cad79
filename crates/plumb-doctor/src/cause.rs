//! The kinds of writer the doctor tells apart, and everything the rest of plumb decides by
//! the kind: one table ([`CauseType::info`]) — admission or controller, relevant to the
//! preflight, fixable in git by `--fix`, its remedy and so the fixes' order, its name in every
//! rendering. Adding a cause is one variant and one row here, plus the check that proposes it
//! (`checks/`) and its fixture; the fixes, the CLI's `--preflight` and `--fix`, the
//! renderings and the book (`docs/src/concepts/doctor.md`) read the row.

use serde::{Serialize, Serializer};

/// The kinds of writer the doctor tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CauseType {
    MutatingWebhook,
    MutatingPolicy,
    Controller,
    ManualEdit,
    ApiServerDefault,
    Unknown,
}

/// When the writer changes the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// During admission of every write, the sync's own included: a server-side diff sees the
    /// rewrite on both sides.
    Admission,
    /// The API server itself (defaulting, pruning of unknown fields) on every write.
    ApiServer,
    /// A controller, after the write.
    Controller,
    /// A person, after the write.
    Person,
    /// Nobody plumb can name.
    Unknown,
}

/// What resolves a difference the cause makes: the fixes' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// git is right: one sync restores it (the only fix).
    Sync,
    /// git must give way: stop declaring the field, ignore it narrowly, then (for an
    /// admission writer) a server-side diff.
    ChangeGit,
    /// [`Remedy::Sync`], unless the rewrite happened during admission (PD008): then
    /// [`Remedy::ChangeGit`]. Removing a field from git on no evidence could delete what
    /// the app needs.
    SyncUnlessAdmission,
}

/// One row of the cause table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CauseInfo {
    /// The name in every rendering (`cause.type` in JSON, `who:` in text, the markdown table).
    pub name: &'static str,
    /// One line for people (the table of the book's page `docs/src/concepts/doctor.md`).
    pub description: &'static str,
    pub writer: Writer,
    /// `plumb doctor --preflight` warns about it: the cluster will rewrite what the change
    /// declares (a difference the change itself settles is no fight).
    pub preflight: bool,
    /// `plumb doctor --fix` applies the finding's first fix when it is a git change.
    pub fixable_in_git: bool,
    pub remedy: Remedy,
    /// The `ignoreDifferences` fix names the owning manager (`managedFieldsManagers`) rather
    /// than the field (`jsonPointers`), when a manager other than the sync's own owns it.
    pub ignore_by_manager: bool,
}

impl CauseType {
    /// Every cause, in the order of the enum.
    pub const ALL: &'static [CauseType] = &[
        CauseType::MutatingWebhook,
        CauseType::MutatingPolicy,
        CauseType::Controller,
        CauseType::ManualEdit,
        CauseType::ApiServerDefault,
        CauseType::Unknown,
    ];

    /// The cause's row: the one place its properties are decided.
    pub const fn info(self) -> CauseInfo {
        match self {
            CauseType::MutatingWebhook => CauseInfo {
                name: "mutating-webhook",
                description: "a MutatingWebhookConfiguration whose rules and selectors match the object",
                writer: Writer::Admission,
                preflight: true,
                fixable_in_git: true,
                remedy: Remedy::ChangeGit,
                ignore_by_manager: false,
            },
            CauseType::MutatingPolicy => CauseInfo {
                name: "mutating-policy",
                description: "a MutatingAdmissionPolicy, a Kyverno mutate rule or a Gatekeeper mutator",
                writer: Writer::Admission,
                preflight: true,
                fixable_in_git: true,
                remedy: Remedy::ChangeGit,
                ignore_by_manager: false,
            },
            CauseType::Controller => CauseInfo {
                name: "controller",
                description: "a controller that owns the field (HPA, cert-manager's cainjector, VPA, kube-controller-manager)",
                writer: Writer::Controller,
                preflight: true,
                fixable_in_git: true,
                remedy: Remedy::ChangeGit,
                ignore_by_manager: true,
            },
            CauseType::ManualEdit => CauseInfo {
                name: "manual-edit",
                description: "a person's client (kubectl edit, patch, scale)",
                writer: Writer::Person,
                preflight: false,
                fixable_in_git: false,
                remedy: Remedy::Sync,
                ignore_by_manager: false,
            },
            CauseType::ApiServerDefault => CauseInfo {
                name: "api-server-default",
                description: "the API server's defaulting or pruning of a field the schema does not know",
                writer: Writer::ApiServer,
                preflight: true,
                fixable_in_git: false,
                remedy: Remedy::ChangeGit,
                ignore_by_manager: false,
            },
            CauseType::Unknown => CauseInfo {
                name: "unknown",
                description: "no check names the writer (a missing or extra object, or a rewrite during admission nobody matches)",
                writer: Writer::Unknown,
                preflight: false,
                fixable_in_git: false,
                remedy: Remedy::SyncUnlessAdmission,
                ignore_by_manager: false,
            },
        }
    }

    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// Admission rewrites a value on every apply: a server-side diff sees it on both sides.
    pub fn is_admission(self) -> bool {
        self.info().writer == Writer::Admission
    }

    /// Whether `--preflight` keeps findings of this cause.
    pub fn preflight(self) -> bool {
        self.info().preflight
    }

    /// Whether `--fix` applies the first fix of findings of this cause.
    pub fn fixable_in_git(self) -> bool {
        self.info().fixable_in_git
    }

    /// The cause's fixes: [`Remedy::Sync`] alone or git first, given whether the rewrite was
    /// seen during admission.
    pub fn restored_by_sync(self, admission: bool) -> bool {
        match self.info().remedy {
            Remedy::Sync => true,
            Remedy::ChangeGit => false,
            Remedy::SyncUnlessAdmission => !admission,
        }
    }

    /// The table of causes on the book's page `docs/src/concepts/doctor.md` (a test keeps
    /// the page equal to it).
    pub fn markdown_table() -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let mut out = String::from(
            "| cause | who | when | preflight warns | `--fix` edits git | first fix |\n|---|---|---|---|---|---|\n",
        );
        for c in CauseType::ALL {
            let i = c.info();
            let when = match i.writer {
                Writer::Admission => "admission, on every write",
                Writer::ApiServer => "API server, on every write",
                Writer::Controller => "a controller, after the write",
                Writer::Person => "a person, after the write",
                Writer::Unknown => "unknown",
            };
            let first = match i.remedy {
                Remedy::Sync => "sync",
                Remedy::ChangeGit => "stop-declaring",
                Remedy::SyncUnlessAdmission => "sync (stop-declaring when seen at admission)",
            };
            out.push_str(&format!(
                "| `{}` | {} | {when} | {} | {} | {first} |\n",
                i.name,
                i.description,
                yes(i.preflight),
                yes(i.fixable_in_git)
            ));
        }
        out
    }
}

impl Serialize for CauseType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant is in `ALL` once, with a distinct kebab-case name that serializes as
    /// itself, and answers every property; a new variant missing from `ALL` fails here.
    #[test]
    fn every_cause_is_listed_once_and_answers_each_property() {
        // The match forces every variant to be handled; the count ties it to `ALL`.
        let position = |c: CauseType| match c {
            CauseType::MutatingWebhook => 0,
            CauseType::MutatingPolicy => 1,
            CauseType::Controller => 2,
            CauseType::ManualEdit => 3,
            CauseType::ApiServerDefault => 4,
            CauseType::Unknown => 5,
        };
        for (i, c) in CauseType::ALL.iter().enumerate() {
            assert_eq!(position(*c), i, "{c:?} out of place in ALL");
        }
        assert_eq!(CauseType::ALL.len(), 6);
        let mut names: Vec<&str> = CauseType::ALL.iter().map(|c| c.as_str()).collect();
        for c in CauseType::ALL {
            let i = c.info();
            assert!(
                !i.name.is_empty()
                    && i.name
                        .chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch == '-'),
                "{c:?}: name {:?}",
                i.name
            );
            assert!(!i.description.is_empty(), "{c:?}: no description");
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(i.name),
                "{c:?}"
            );
            // Consistency of the row: what --fix applies is what a preflight warns of and
            // what git can settle.
            if i.fixable_in_git {
                assert!(i.preflight && i.remedy == Remedy::ChangeGit, "{c:?}");
            }
            if i.ignore_by_manager {
                assert_eq!(i.writer, Writer::Controller, "{c:?}");
            }
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CauseType::ALL.len(), "names are unique");
    }

    /// The lists the CLI used to keep, as the table answers them.
    #[test]
    fn the_table_keeps_the_former_lists() {
        let which = |f: fn(CauseType) -> bool| -> Vec<&str> {
            CauseType::ALL
                .iter()
                .filter(|c| f(**c))
                .map(|c| c.as_str())
                .collect()
        };
        assert_eq!(
            which(CauseType::preflight),
            [
                "mutating-webhook",
                "mutating-policy",
                "controller",
                "api-server-default"
            ]
        );
        assert_eq!(
            which(CauseType::fixable_in_git),
            ["mutating-webhook", "mutating-policy", "controller"]
        );
        assert_eq!(
            which(CauseType::is_admission),
            ["mutating-webhook", "mutating-policy"]
        );
        assert!(CauseType::ManualEdit.restored_by_sync(true));
        assert!(CauseType::Unknown.restored_by_sync(false));
        assert!(!CauseType::Unknown.restored_by_sync(true));
        assert!(!CauseType::Controller.restored_by_sync(false));
    }

    #[test]
    fn the_book_lists_every_cause() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/src/concepts/doctor.md"),
        )
        .unwrap();
        let table = CauseType::markdown_table();
        assert!(
            page.contains(&table),
            "docs/src/concepts/doctor.md must hold the cause table:\n{table}"
        );
    }
}
