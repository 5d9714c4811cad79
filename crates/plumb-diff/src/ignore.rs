//! `ignoreDifferences`, matched and applied as Argo CD does: group and kind are
//! globs (an empty group matches only the core group), name and namespace exact.
//!
//! - `jsonPointers` remove the addressed value (a missing path is not an error);
//! - `jqPathExpressions` run `del(EXPR)` with a timeout; unlike Argo CD (argo-cd
//!   #24599), an expression selecting several paths deletes every one of them;
//! - `managedFieldsManagers` drop, from live and desired alike, the fields a trusted
//!   manager owns in live and whose values differ ([`normalize_managed_fields`]).

use crate::jq::{JqDelete, JqError};
use plumb_core::argo::IgnoreRule;
use plumb_core::fieldpath::{self, FieldSet};
use plumb_core::glob::Wildcard;
use plumb_core::pointer::JsonPointer;
use plumb_core::value::json_eq;
use plumb_core::{GroupKind, ResourceKey};
use serde_json::Value;
use std::time::Duration;

/// Argo CD's default jq timeout (`ignore.normalizer.jq.timeout`).
pub const DEFAULT_JQ_TIMEOUT: Duration = Duration::from_secs(1);

/// A rule that could not be compiled, or an expression that failed hard.
#[derive(Debug, thiserror::Error)]
pub enum IgnoreError {
    #[error("{origin}: {source}")]
    Pointer {
        origin: String,
        source: plumb_core::pointer::PointerError,
    },
    #[error("{origin}: {source}")]
    Jq { origin: String, source: JqError },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
}

/// A compiled rule.
#[derive(Debug)]
pub struct CompiledRule {
    /// Where the rule came from, for messages: `spec.ignoreDifferences[2]`.
    pub origin: String,
    pub rule: IgnoreRule,
    group: Wildcard,
    kind: Wildcard,
    pointers: Vec<JsonPointer>,
    jq: Vec<JqDelete>,
}

impl CompiledRule {
    pub fn matches(&self, gk: &GroupKind, namespace: &str, name: &str) -> bool {
        self.group.is_match(&gk.group)
            && self.kind.is_match(&gk.kind)
            && (self.rule.name.is_empty() || self.rule.name == name)
            && (self.rule.namespace.is_empty() || self.rule.namespace == namespace)
    }
}

/// All ignore rules in force for a comparison (system overrides, then the Application's).
#[derive(Debug, Default)]
pub struct IgnoreNormalizer {
    rules: Vec<CompiledRule>,
    jq_timeout: Option<Duration>,
}

impl IgnoreNormalizer {
    /// Compiles rules; `origin` names each for error messages.
    pub fn new(
        rules: impl IntoIterator<Item = (String, IgnoreRule)>,
        jq_timeout: Duration,
    ) -> Result<Self, IgnoreError> {
        let mut compiled = Vec::new();
        for (origin, rule) in rules {
            if rule.kind.is_empty() {
                return Err(IgnoreError::Invalid {
                    origin,
                    message: "kind is required".into(),
                });
            }
            let pointers = rule
                .json_pointers
                .iter()
                .map(|p| JsonPointer::parse(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| IgnoreError::Pointer {
                    origin: origin.clone(),
                    source,
                })?;
            let jq = rule
                .jq_path_expressions
                .iter()
                .map(|e| JqDelete::compile(e))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| IgnoreError::Jq {
                    origin: origin.clone(),
                    source,
                })?;
            compiled.push(CompiledRule {
                origin,
                group: Wildcard::new(&rule.group),
                kind: Wildcard::new(&rule.kind),
                rule,
                pointers,
                jq,
            });
        }
        Ok(IgnoreNormalizer {
            rules: compiled,
            jq_timeout: Some(jq_timeout),
        })
    }

    pub fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    fn matching<'a>(&'a self, key: &'a ResourceKey) -> impl Iterator<Item = &'a CompiledRule> + 'a {
        let gk = key.group_kind();
        self.rules
            .iter()
            .filter(move |r| r.matches(&gk, &key.namespace, &key.name))
    }

    /// Whether any rule touches this object (cheap check before copying).
    pub fn has_rules_for(&self, key: &ResourceKey) -> bool {
        self.matching(key).next().is_some()
    }

    /// Applies the matching jsonPointers and jq expressions. A jq runtime error skips
    /// that expression (as Argo CD does); a timeout, or a value built nested too deep (which
    /// in Argo CD runs until the timeout), is an error.
    pub fn apply(&self, key: &ResourceKey, obj: &mut Value) -> Result<(), IgnoreError> {
        let timeout = self.jq_timeout.unwrap_or(DEFAULT_JQ_TIMEOUT);
        for rule in self.matching(key) {
            for p in &rule.pointers {
                p.remove(obj);
            }
            for jq in &rule.jq {
                match jq.apply(obj, timeout) {
                    Ok(v) => *obj = v,
                    Err(e @ (JqError::Timeout { .. } | JqError::TooDeep { .. })) => {
                        return Err(IgnoreError::Jq {
                            origin: rule.origin.clone(),
                            source: e,
                        });
                    }
                    Err(e) => {
                        tracing::debug!(rule = %rule.origin, object = %key, error = %e, "jq normalization skipped")
                    }
                }
            }
        }
        Ok(())
    }

    /// The trusted managers for this object (de-duplicated, in rule order).
    pub fn managers_for(&self, key: &ResourceKey) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.matching(key) {
            for m in &r.rule.managed_fields_managers {
                if !out.contains(m) {
                    out.push(m.clone());
                }
            }
        }
        out
    }
}

/// Removes, from both live and desired, every field a trusted manager owns in live's
/// `managedFields` whose value differs between them (`managedfields.Normalize`).
/// Only modified leaves are dropped: fields present on one side only stay.
pub fn normalize_managed_fields(live: &mut Value, desired: &mut Value, managers: &[String]) {
    if managers.is_empty() {
        return;
    }
    let Some(entries) = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return;
    };
    let sets: Vec<FieldSet> = entries
        .iter()
        .filter(|e| {
            e.get("manager")
                .and_then(Value::as_str)
                .is_some_and(|m| managers.iter().any(|t| t == m))
        })
        .filter_map(|e| e.get("fieldsV1").and_then(|f| FieldSet::parse(f).ok()))
        .collect();
    let mut to_remove = Vec::new();
    for set in &sets {
        for path in set.members() {
            let (Some(l), Some(d)) = (
                fieldpath::resolve(live, &path),
                fieldpath::resolve(desired, &path),
            ) else {
                continue;
            };
            // A member with owned children is granular: its children are compared instead.
            let granular = (l.is_object() || l.is_array()) && set_has_children(set, &path);
            if !granular && !l.is_object() && !json_eq(l, d) {
                to_remove.push(path);
            }
        }
    }
    for path in &to_remove {
        fieldpath::remove(live, path);
        fieldpath::remove(desired, path);
    }
}

fn set_has_children(set: &FieldSet, path: &[fieldpath::PathElement]) -> bool {
    let mut cur = set;
    for e in path {
        match cur.children.iter().find(|(x, _)| x == e) {
            Some((_, sub)) => cur = sub,
            None => return false,
        }
    }
    !cur.children.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managers_drop_only_modified_owned_leaves() {
        let mut live = json!({"spec": {"replicas": 2, "paused": true}, "metadata": {"managedFields": [
            {"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}}]}});
        let mut desired = json!({"spec": {"replicas": 3}});
        normalize_managed_fields(
            &mut live,
            &mut desired,
            &["kube-controller-manager".to_string()],
        );
        assert!(live.pointer("/spec/replicas").is_none());
        assert!(desired.pointer("/spec/replicas").is_none());
        assert_eq!(
            live.pointer("/spec/paused"),
            Some(&json!(true)),
            "absent in desired: not modified, kept"
        );
    }

    #[test]
    fn invalid_pointer_names_the_rule() {
        let rule = IgnoreRule {
            kind: "Service".into(),
            json_pointers: vec!["spec".into()],
            ..Default::default()
        };
        let err = IgnoreNormalizer::new(
            [("spec.ignoreDifferences[0]".to_string(), rule)],
            DEFAULT_JQ_TIMEOUT,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("spec.ignoreDifferences[0]: invalid JSON pointer 'spec'")
        );
    }
}
