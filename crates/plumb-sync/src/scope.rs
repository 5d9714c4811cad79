//! Which namespaces' Applications the controller serves, as Argo CD's "Applications in any
//! namespace" decides it: its control namespace always, and the namespaces matching
//! `--application-namespaces` (a comma list of globs and `/regex/`s; default: none). An
//! Application anywhere else is ignored: not reconciled, its status never written.
//! `--app-namespace` (plumb's) narrows this further to one namespace.
//!
//! ```
//! use plumb_core::glob::NamespaceList;
//! use plumb_sync::scope::AppScope;
//! let scope = AppScope {
//!     only: None,
//!     control: Some("plumb-system".into()),
//!     others: NamespaceList::parse("team-*,/^ops-[0-9]+$/").unwrap(),
//! };
//! assert!(scope.serves("plumb-system") && scope.serves("team-a") && scope.serves("ops-1"));
//! assert!(!scope.serves("kube-system"));
//! ```

use plumb_core::glob::NamespaceList;

/// The namespaces whose Applications are served.
#[derive(Debug, Clone, Default)]
pub struct AppScope {
    /// `--app-namespace`: only this namespace (when it is also served otherwise).
    pub only: Option<String>,
    /// The control namespace, always served. `None` (a library caller that set no control
    /// namespace): every namespace is served.
    pub control: Option<String>,
    /// `--application-namespaces`.
    pub others: NamespaceList,
}

impl AppScope {
    /// Whether Applications of `namespace` are served.
    pub fn serves(&self, namespace: &str) -> bool {
        if self.only.as_ref().is_some_and(|only| only != namespace) {
            return false;
        }
        match &self.control {
            None => true,
            Some(control) => control == namespace || self.others.is_match(namespace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(only: Option<&str>, control: Option<&str>, others: &str) -> AppScope {
        AppScope {
            only: only.map(Into::into),
            control: control.map(Into::into),
            others: NamespaceList::parse(others).unwrap(),
        }
    }

    #[test]
    fn control_namespace_always_others_only_when_listed() {
        let s = scope(None, Some("argocd"), "");
        assert!(s.serves("argocd"));
        assert!(!s.serves("team-a"));
        let s = scope(None, Some("argocd"), "team-*, /^ops-[0-9]+$/");
        for (ns, want) in [
            ("argocd", true),
            ("team-a", true),
            ("ops-7", true),
            ("ops-x", false),
            ("kube-system", false),
        ] {
            assert_eq!(s.serves(ns), want, "{ns}");
        }
        // `--app-namespace` narrows to one namespace, which must still be served.
        let s = scope(Some("team-a"), Some("argocd"), "team-*");
        assert!(s.serves("team-a") && !s.serves("argocd") && !s.serves("team-b"));
        // Without a control namespace (library use), everything is served.
        assert!(scope(None, None, "").serves("anywhere"));
    }
}
