//! One health function for every kind: user Lua > built-in > generic, as [`Checker::check`].
//!
//! [`check`] runs the process's checker: the one [`install`]ed (by the CLI or controller after
//! reading `--settings-configmap` / `--resource-customizations`), else built-in and generic
//! checks only.

use std::fmt;
use std::sync::OnceLock;

use serde_json::Value;

use crate::lua::{Customizations, LuaLimits, LuaRunner};
use crate::object::{self, Gvk};
use crate::{ANNOTATION_IGNORE_HEALTHCHECK, Health, HealthStatus};

/// Which check decided an object's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// A check written in plumb (Argo CD's built-in kinds and the operator checks).
    Builtin,
    /// A user Lua script.
    Lua,
    /// The generic status-conditions check.
    Generic,
    /// No check applies (or `ignore-healthcheck`): the object counts as Healthy and is left
    /// out of an app's health.
    None,
}

impl Source {
    /// `builtin`, `lua`, `generic` or `none`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::Lua => "lua",
            Source::Generic => "generic",
            Source::None => "none",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object's health and the check that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    pub health: Health,
    pub source: Source,
}

impl Assessment {
    /// The health, `None` when no check applies ([`Source::None`]): the shape of [`crate::assess`].
    pub fn checked(self) -> Option<Health> {
        (self.source != Source::None).then_some(self.health)
    }
}

/// The built-in checks: Argo CD's kinds ([`crate::assess`]) and the operator checks.
pub fn builtin(obj: &Value) -> Option<Health> {
    if let Some(h) = crate::assess(obj) {
        return Some(h);
    }
    let gvk = Gvk::of(obj);
    match gvk.group {
        "cert-manager.io" => crate::certmanager::health(obj, gvk.kind),
        "argoproj.io" => crate::rollouts::health(obj, gvk.kind),
        "external-secrets.io" => crate::externalsecrets::health(obj, gvk.kind),
        "keda.sh" => crate::keda::health(obj, gvk.kind),
        "monitoring.coreos.com" => crate::prometheus::health(obj, gvk.kind),
        "apiextensions.k8s.io" if gvk.kind == "CustomResourceDefinition" => {
            Some(crate::crd::health(obj))
        }
        g if crate::flux::is_flux_group(g) => Some(crate::flux::health(obj)),
        g => crate::crossplane::health(obj, g),
    }
}

/// User scripts, then built-in checks, then the generic one.
#[derive(Debug)]
pub struct Checker {
    lua: Option<LuaRunner>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new(Customizations::new(), LuaLimits::default())
    }
}

impl Checker {
    /// A checker running these user scripts under these limits.
    pub fn new(custom: Customizations, limits: LuaLimits) -> Self {
        Checker {
            lua: (!custom.is_empty()).then(|| LuaRunner::new(custom, limits)),
        }
    }

    /// The user scripts.
    pub fn customizations(&self) -> Option<&Customizations> {
        self.lua.as_ref().map(LuaRunner::customizations)
    }

    /// The health of one live object:
    ///
    /// 1. `argocd.argoproj.io/ignore-healthcheck: "true"` ⇒ Healthy, [`Source::None`];
    /// 2. being deleted (without Argo CD's hook finalizer) ⇒ Progressing `Pending deletion`,
    ///    [`Source::Builtin`];
    /// 3. a user Lua script for its group/kind;
    /// 4. a built-in check ([`builtin`]);
    /// 5. the generic check ([`crate::generic`]);
    /// 6. otherwise Healthy, [`Source::None`].
    pub fn check(&self, obj: &Value) -> Assessment {
        let none = || Assessment {
            health: Health::new(HealthStatus::Healthy, ""),
            source: Source::None,
        };
        if object::annotation(obj, ANNOTATION_IGNORE_HEALTHCHECK) == Some("true") {
            return none();
        }
        if object::is_deleting(obj) && !object::has_hook_finalizer(obj) {
            return Assessment {
                health: Health::new(HealthStatus::Progressing, "Pending deletion"),
                source: Source::Builtin,
            };
        }
        if let Some(runner) = &self.lua {
            let gvk = Gvk::of(obj);
            if let Some(health) = runner.health(obj, gvk.group, gvk.kind) {
                return Assessment {
                    health,
                    source: Source::Lua,
                };
            }
        }
        if let Some(health) = builtin(obj) {
            return Assessment {
                health,
                source: Source::Builtin,
            };
        }
        match crate::generic::health(obj) {
            Some(health) => Assessment {
                health,
                source: Source::Generic,
            },
            None => none(),
        }
    }
}

static INSTALLED: OnceLock<Checker> = OnceLock::new();

/// Makes `checker` the one [`check`] uses, for the rest of the process. `Err` (giving it back)
/// when one was already installed or [`check`] already ran with the default.
pub fn install(checker: Checker) -> Result<(), Checker> {
    INSTALLED.set(checker)
}

/// The process's checker: the installed one, else built-in and generic checks only.
pub fn installed() -> &'static Checker {
    INSTALLED.get_or_init(Checker::default)
}

/// [`Checker::check`] with the process's checker: what sync waves, hooks, app health and
/// `plumb health` use.
pub fn check(obj: &Value) -> Assessment {
    installed().check(obj)
}
