//! plumb's compare engine: Argo CD's legacy diff, reimplemented.
//!
//! Given desired (git) and live (cluster) objects, [`diff`] decides whether they
//! differ exactly as Argo CD decides it, and returns the two objects Argo CD prints:
//! *normalized live* and *predicted live* (live with desired applied). The pipeline:
//!
//! 1. typed canonicalisation of built-in kinds ([`remarshal`]);
//! 2. always-on normalisations ([`normalize`]) and `ignoreDifferences` ([`ignore`]),
//!    then knownTypeFields, on desired, live and last-applied;
//! 3. three-way merge with last-applied, or two-way without it ([`merge`]);
//! 4. API defaults on both sides for built-in kinds ([`defaults`]);
//! 5. `modified` = the two sides differ.
//!
//! Around it: [`desired`] prepares rendered objects (the pipeline's step 5) and [`compare`]
//! compares a whole app (step 6); [`apply`] and [`respect`] compute what a sync sends;
//! [`server_side`] is Argo CD's server-side diff; [`mask`] hides Secret values; [`fields`]
//! lists the differing leaves; `text` prints Argo CD's YAML and diff output.
//!
//! **Invariants:** pure and synchronous — no I/O, no clock (jq timeouts aside); nothing
//! leaves [`compare`] with a Secret value unmasked; a field only live has never makes a
//! difference.
//!
//! ```
//! use plumb_diff::{diff, DiffConfig};
//! use serde_json::json;
//! let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
//!     "spec": {"template": {"spec": {"containers": [{"name": "app",
//!         "resources": {"requests": {"cpu": "1000m"}}}]}}}});
//! let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"},
//!     "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app",
//!         "resources": {"requests": {"cpu": "1"}}}]}}}});
//! let r = diff(Some(&desired), Some(&live), &DiffConfig::default()).unwrap();
//! assert!(!r.modified, "1000m and 1 are the same quantity");
//! ```

pub mod apply;
pub mod compare;
pub mod defaults;
pub mod desired;
pub mod fields;
pub mod ignore;
pub mod jq;
pub mod known_types;
pub mod mask;
pub mod merge;
pub mod normalize;
pub mod pairs;
pub mod remarshal;
pub mod respect;
pub mod server_side;
pub mod text;

use ignore::{IgnoreError, IgnoreNormalizer};
use known_types::KnownTypes;
use merge::Semantics;
use plumb_core::schema::Schema;
use plumb_core::{LAST_APPLIED_ANNOTATION, ResourceKey};
use serde_json::Value;

pub use respect::normalize_target_for_sync;

/// Everything that configures a comparison.
#[derive(Debug, Default)]
pub struct DiffConfig {
    /// System overrides and the Application's `ignoreDifferences`, compiled.
    pub ignore: IgnoreNormalizer,
    /// `resource.compareoptions.ignoreAggregatedRoles` (Argo CD default: false).
    pub ignore_aggregated_roles: bool,
    /// `knownTypeFields` from the overrides.
    pub known_types: KnownTypes,
}

impl DiffConfig {
    /// What Argo CD compares an app with: the `argocd-cm` overrides (ignore rules, known
    /// types, compare options) and the Application's `ignoreDifferences`. `app_origin`
    /// names the Application in rule errors (`app.yaml`, `Application payments-prod`).
    pub fn for_app(
        settings: &plumb_core::argo::Settings,
        app: Option<&plumb_core::argo::Application>,
        app_origin: &str,
        jq_timeout: std::time::Duration,
    ) -> Result<DiffConfig, IgnoreError> {
        let mut rules: Vec<(String, plumb_core::argo::IgnoreRule)> = settings
            .ignore_rules()
            .into_iter()
            .map(|r| (format!("argocd-cm override {}/{}", r.group, r.kind), r))
            .collect();
        for (i, r) in app
            .iter()
            .flat_map(|a| a.ignore_differences.iter().enumerate())
        {
            rules.push((
                format!("{app_origin}: spec.ignoreDifferences[{i}]"),
                r.clone(),
            ));
        }
        Ok(DiffConfig {
            ignore: IgnoreNormalizer::new(rules, jq_timeout)?,
            ignore_aggregated_roles: settings.ignore_aggregated_roles,
            known_types: KnownTypes::from_overrides(&settings.overrides),
        })
    }
}

/// The outcome of comparing one object.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffResult {
    /// Whether desired and live differ (Argo CD's `Modified`).
    pub modified: bool,
    /// Live after normalisation; `Value::Null` when the object does not exist live.
    pub normalized_live: Value,
    /// What live would be after applying desired; `Value::Null` when not desired.
    pub predicted_live: Value,
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("nothing to compare: neither desired nor live given")]
    NothingToCompare,
    #[error("{key}: {source}")]
    Ignore {
        key: Box<ResourceKey>,
        source: Box<IgnoreError>,
    },
}

/// An object's `apiVersion`, API group and `kind`, each `""` when absent; owned, so the
/// object can be changed while they are in use.
pub(crate) struct ObjectType {
    pub(crate) api_version: String,
    pub(crate) group: String,
    pub(crate) kind: String,
}

impl ObjectType {
    pub(crate) fn of(obj: &Value) -> Self {
        let field = |name: &str| {
            obj.get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let api_version = field("apiVersion");
        let group = plumb_core::group_of_api_version(&api_version).to_owned();
        Self {
            api_version,
            group,
            kind: field("kind"),
        }
    }
}

fn key_of(v: &Value) -> ResourceKey {
    ResourceKey::of(v).unwrap_or_default()
}

/// Step 1 and 2 for one object: remarshal, normalise, ignore rules, known types.
fn prepare(obj: Value, cfg: &DiffConfig, schema: &Schema) -> Result<Value, DiffError> {
    let mut v = obj;
    // A failed typed decode leaves the object as it was (Argo CD compares it as is). A
    // successful one has canonical numbers already (typed fields are decoded, untyped ones
    // canonicalised on the way).
    if remarshal::remarshal_in_place(&mut v, schema).is_err() {
        plumb_core::value::canonicalize_numbers(&mut v);
    }
    full_normalize(&mut v, cfg, schema)?;
    Ok(v)
}

/// Argo CD's `Normalize` with the configured normalizer.
pub(crate) fn full_normalize(
    v: &mut Value,
    cfg: &DiffConfig,
    schema: &Schema,
) -> Result<(), DiffError> {
    normalize::normalize(v, cfg.ignore_aggregated_roles);
    let key = key_of(v);
    apply_ignore(cfg, &key, v)?;
    cfg.known_types.apply(&key, v, schema);
    Ok(())
}

/// The ignore rules' jsonPointers and jq expressions, with errors naming the object.
pub(crate) fn apply_ignore(
    cfg: &DiffConfig,
    key: &ResourceKey,
    v: &mut Value,
) -> Result<(), DiffError> {
    cfg.ignore
        .apply(key, v)
        .map_err(|source| DiffError::Ignore {
            key: Box::new(key.clone()),
            source: Box::new(source),
        })
}

/// The `kubectl.kubernetes.io/last-applied-configuration` of live, parsed; `None` when
/// absent or unparsable (then the diff falls back to two-way).
pub fn last_applied(live: &Value) -> Option<Value> {
    let text = plumb_core::value::annotation(live, LAST_APPLIED_ANNOTATION)?;
    let mut v: Value = serde_json::from_str(text).ok()?;
    plumb_core::value::canonicalize_numbers(&mut v);
    v.is_object().then_some(v)
}

/// Compares desired with live, as Argo CD's legacy (client-side) diff does.
///
/// Managed-fields normalisation (`managedFieldsManagers`) runs first, on both sides.
pub fn diff(
    desired: Option<&Value>,
    live: Option<&Value>,
    cfg: &DiffConfig,
) -> Result<DiffResult, DiffError> {
    diff_owned(desired.cloned(), live.cloned(), cfg)
}

/// [`diff`] on owned objects, which it reuses instead of copying.
pub fn diff_owned(
    desired: Option<Value>,
    live: Option<Value>,
    cfg: &DiffConfig,
) -> Result<DiffResult, DiffError> {
    diff_owned_with(desired, live, cfg, true)
}

/// [`diff_owned`]; with `keep_equal` false, an unmodified pair comes back with both
/// objects `Null` and without the work of building them (the usual case of a large,
/// mostly in-sync comparison).
pub(crate) fn diff_owned_with(
    desired: Option<Value>,
    live: Option<Value>,
    cfg: &DiffConfig,
    keep_equal: bool,
) -> Result<DiffResult, DiffError> {
    let schema = Schema::builtin();
    match (desired, live) {
        (None, None) => Err(DiffError::NothingToCompare),
        (Some(d), None) => Ok(DiffResult {
            modified: true,
            normalized_live: Value::Null,
            predicted_live: prepare(d, cfg, schema)?,
        }),
        (None, Some(l)) => Ok(DiffResult {
            modified: false,
            normalized_live: prepare(l, cfg, schema)?,
            predicted_live: Value::Null,
        }),
        (Some(mut d), Some(mut l)) => {
            let managers = cfg.ignore.managers_for(&key_of(&l));
            ignore::normalize_managed_fields(&mut l, &mut d, &managers);
            let orig = last_applied(&l);
            let config = prepare(d, cfg, schema)?;
            let mut live = prepare(l, cfg, schema)?;
            let ObjectType {
                api_version,
                group,
                kind,
            } = ObjectType::of(&config);
            let builtin = schema.is_builtin(&group, &kind);

            let orig = match orig {
                Some(mut o) => {
                    full_normalize(&mut o, cfg, schema)?;
                    Some(o)
                }
                None => None,
            };
            // Two-way (no last-applied): desired stands in for it. For a built-in kind without
            // its nulls, so a null in desired still deletes (the strategic patch from live to
            // desired carries it); a custom resource's JSON merge patch keeps only the nulls
            // that original and desired disagree on, so there a null deletes nothing.
            let mut orig = orig.unwrap_or_else(|| {
                let mut o = config.clone();
                if builtin {
                    strip_nulls(&mut o);
                }
                o
            });
            let mut config = config;
            normalize::strip_for_three_way(&mut orig);
            normalize::strip_for_three_way(&mut config);

            // StatefulSet volumeClaimTemplates: API-server additions inside the embedded
            // PVC templates are invisible (gitops-engine#127).
            if (group == "apps" || group == "extensions") && kind == "StatefulSet" {
                strip_vct(&orig, &mut live);
            }

            let sem = if builtin {
                Semantics::Strategic(schema, schema.root(&api_version, &kind))
            } else {
                Semantics::Json
            };
            if !keep_equal && !merge::changes(Some(&orig), &config, &live, sem) {
                // Predicted live is live itself; defaults would apply to both alike.
                return Ok(DiffResult {
                    modified: false,
                    normalized_live: Value::Null,
                    predicted_live: Value::Null,
                });
            }
            let mut predicted = merge::three_way(Some(&orig), &config, &live, sem);
            if builtin {
                defaults::apply(&mut predicted);
                defaults::apply(&mut live);
            }
            let modified = !plumb_core::value::json_eq(&live, &predicted);
            Ok(DiffResult {
                modified,
                normalized_live: live,
                predicted_live: predicted,
            })
        }
    }
}

fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn strip_vct(orig: &Value, live: &mut Value) {
    let Some(o) = orig
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
    else {
        return;
    };
    let Some(l) = live
        .pointer_mut("/spec/volumeClaimTemplates")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for (i, item) in l.iter_mut().enumerate() {
        if let Some(oi) = o.get(i) {
            *item = merge::remove_map_fields(oi, item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Without last-applied, a null in desired deletes a built-in's field (strategic merge
    /// patch) but not a custom resource's (JSON merge patch from desired as original).
    #[test]
    fn nulls_without_last_applied_built_in_versus_custom() {
        let cfg = DiffConfig::default();
        let cm = |tier: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "labels": {"app": "a", "tier": tier}}})
        };
        let r = diff(Some(&cm(Value::Null)), Some(&cm(json!("x"))), &cfg).unwrap();
        assert!(r.modified, "the null deletes live's label");
        let cr = |size: Value| {
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "a"}, "spec": {"size": size, "color": "red"}})
        };
        let r = diff(Some(&cr(Value::Null)), Some(&cr(json!(3))), &cfg).unwrap();
        assert!(!r.modified, "a custom resource's null deletes nothing");
    }
}
