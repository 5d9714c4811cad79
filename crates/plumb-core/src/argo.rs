//! The parts of Argo CD's `Application` and `argocd-cm` settings that decide how
//! objects are compared: ignore rules, known types, compare options, tracking.
//!
//! [`Application`] here is the comparison view, built from the typed [`model::Application`]
//! ([`Application::from_model`]); [`tracking_id`] and [`is_tracked_by`] are Argo CD's tracking
//! rules (annotation `argocd.argoproj.io/tracking-id` or the instance label).

pub mod model;

use crate::value::annotation;
use model::{Extra, is_false};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One `ignoreDifferences` entry (Application `spec.ignoreDifferences[]`, or an
/// `argocd-cm` override turned into a rule).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IgnoreRule {
    /// A glob ([`crate::glob::Wildcard`]); empty matches only the core group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// A glob ([`crate::glob::Wildcard`]).
    pub kind: String,
    /// Exact; empty matches every name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Exact; empty matches every namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `jsonPointers`: RFC 6901 pointers of fields to ignore (`/spec/replicas`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub json_pointers: Vec<String>,
    /// `jqPathExpressions`: jq paths of fields to ignore (`.spec.template.spec.initContainers[]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jq_path_expressions: Vec<String>,
    /// `managedFieldsManagers`: ignore the fields these managers own (per `managedFields`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_fields_managers: Vec<String>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The ignore part of a system-level override (`resource.customizations.ignoreDifferences.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OverrideIgnore {
    /// `jsonPointers`: RFC 6901 pointers of fields to ignore.
    pub json_pointers: Vec<String>,
    /// `jqPathExpressions`: jq paths of fields to ignore.
    pub jq_path_expressions: Vec<String>,
    /// `managedFieldsManagers`: ignore the fields these managers own.
    pub managed_fields_managers: Vec<String>,
}

/// `knownTypeFields[]`: a field of a custom resource to canonicalise as a built-in type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct KnownTypeField {
    /// `field`: the path of the field in the custom resource (`spec.template.spec`).
    pub field: String,
    /// `type`: the built-in type it holds (`core/v1/PodSpec`).
    #[serde(rename = "type")]
    pub type_name: String,
}

/// What `resource.compareoptions.ignoreResourceStatusField` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusIgnore {
    /// `/status` ignored for every kind (Argo CD's default since 3.0).
    #[default]
    All,
    /// Only for CustomResourceDefinitions.
    Crd,
    /// Never.
    None,
}

/// A system-level override for a group/kind pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceOverride {
    /// The key as written: `apps/Deployment`, `Service` (core), `*/*`.
    pub key: String,
    /// The group part of `key` (a glob; empty: the core group).
    pub group: String,
    /// The kind part of `key` (a glob).
    pub kind: String,
    /// `ignoreDifferences`: fields to ignore in every resource the key matches.
    pub ignore: OverrideIgnore,
    /// `knownTypeFields`: fields to compare as built-in types.
    pub known_type_fields: Vec<KnownTypeField>,
}

/// How Argo CD marks the objects an Application owns (`application.resourceTrackingMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrackingMethod {
    /// `argocd.argoproj.io/tracking-id` (Argo CD's default since 3.0).
    #[default]
    Annotation,
    /// `app.kubernetes.io/instance`.
    Label,
    /// Both.
    AnnotationAndLabel,
}

impl TrackingMethod {
    /// Whether the tracking-id annotation marks what an Application owns.
    pub fn uses_annotation(self) -> bool {
        matches!(
            self,
            TrackingMethod::Annotation | TrackingMethod::AnnotationAndLabel
        )
    }
    /// Whether the `app.kubernetes.io/instance` label marks what an Application owns.
    pub fn uses_label(self) -> bool {
        matches!(
            self,
            TrackingMethod::Label | TrackingMethod::AnnotationAndLabel
        )
    }
}

/// The comparison-relevant part of `argocd-cm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `resource.customizations` (every form), one override per group/kind key, plus the
    /// ones Argo CD adds itself (`/status` per `ignoreResourceStatusField`, Rollout's pod spec).
    pub overrides: Vec<ResourceOverride>,
    /// `resource.compareoptions.ignoreAggregatedRoles` (default false).
    pub ignore_aggregated_roles: bool,
    /// `resource.compareoptions.ignoreResourceStatusField` (default `all`).
    pub status_ignore: StatusIgnore,
    /// `resource.sensitive.mask.annotations`: annotations masked like Secret data.
    pub sensitive_annotations: Vec<String>,
    /// `application.resourceTrackingMethod`.
    pub tracking_method: TrackingMethod,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            overrides: Vec::new(),
            ignore_aggregated_roles: false,
            status_ignore: StatusIgnore::All,
            sensitive_annotations: Vec::new(),
            tracking_method: TrackingMethod::Annotation,
        }
    }
}

/// A settings or Application problem, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

fn split_override_key(key: &str) -> (String, String) {
    match key.split_once('/') {
        Some((g, k)) => (g.to_string(), k.to_string()),
        None => (String::new(), key.to_string()),
    }
}

/// `group_Kind`, `Kind` or `all` (the split-key form) → `group/Kind` override key.
fn split_key_to_override_key(gk: &str) -> Result<String, SettingsError> {
    if gk == "all" {
        return Ok("*/*".to_string());
    }
    if !gk.contains('_') {
        return Ok(gk.to_string());
    }
    let parts: Vec<&str> = gk.split('_').collect();
    if parts.len() != 2 {
        return Err(SettingsError(format!(
            "argocd-cm key suffix '{gk}': expected group_Kind (exactly one '_')"
        )));
    }
    Ok(format!("{}/{}", parts[0], parts[1]))
}

fn yaml<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T, SettingsError> {
    serde_saphyr::from_str(text)
        .map_err(|e| SettingsError(format!("{what}: {}", one_line(&e.to_string()))))
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct CompareOptionsYaml {
    ignore_aggregated_roles: bool,
    ignore_resource_status_field: Option<String>,
}

/// One entry of the whole-map `resource.customizations` form.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct CustomizationYaml {
    ignore_differences: Option<serde_json::Value>,
    known_type_fields: Vec<KnownTypeField>,
}

impl Settings {
    /// Reads an `argocd-cm` ConfigMap (its `data`).
    pub fn from_configmap(cm: &Value) -> Result<Settings, SettingsError> {
        let mut s = Settings::default();
        let Some(data) = cm.get("data").and_then(Value::as_object) else {
            s.apply_status_default();
            return Ok(s);
        };
        // A ConfigMap's data holds strings only (the API server refuses anything else); a
        // file that says otherwise is an error, not settings silently left out.
        if let Some((k, v)) = data.iter().find(|(_, v)| !v.is_string()) {
            let found = match v {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::Array(_) => "a list",
                Value::Object(_) => "a mapping",
                Value::String(_) => "a string",
            };
            return Err(SettingsError(format!(
                "data.{k}: expected a string, found {found}"
            )));
        }
        let get = |k: &str| data.get(k).and_then(Value::as_str);
        if let Some(text) = get("resource.customizations") {
            let map: std::collections::BTreeMap<String, CustomizationYaml> =
                yaml("resource.customizations", text)?;
            for (key, c) in map {
                let ignore = match c.ignore_differences {
                    None => OverrideIgnore::default(),
                    Some(Value::String(t)) => yaml(
                        &format!("resource.customizations {key} ignoreDifferences"),
                        &t,
                    )?,
                    Some(v) => serde_json::from_value(v).map_err(|e| {
                        SettingsError(format!(
                            "resource.customizations {key} ignoreDifferences: {e}"
                        ))
                    })?,
                };
                let o = s.override_mut(&key);
                o.ignore = ignore;
                o.known_type_fields = c.known_type_fields;
            }
        }
        for (k, v) in data {
            let Some(text) = v.as_str() else { continue };
            if let Some(gk) = k.strip_prefix("resource.customizations.ignoreDifferences.") {
                let key = split_key_to_override_key(gk)?;
                let ignore: OverrideIgnore = yaml(k, text)?;
                s.override_mut(&key).ignore = ignore;
            } else if let Some(gk) = k.strip_prefix("resource.customizations.knownTypeFields.") {
                let key = split_key_to_override_key(gk)?;
                let fields: Vec<KnownTypeField> = yaml(k, text)?;
                s.override_mut(&key).known_type_fields = fields;
            }
        }
        if let Some(text) = get("resource.compareoptions") {
            let co: CompareOptionsYaml = yaml("resource.compareoptions", text)?;
            s.ignore_aggregated_roles = co.ignore_aggregated_roles;
            s.status_ignore = match co.ignore_resource_status_field.as_deref().map(str::trim) {
                Some("crd") => StatusIgnore::Crd,
                Some("none" | "off" | "false") => StatusIgnore::None,
                _ => StatusIgnore::All,
            };
        }
        if let Some(text) = get("resource.sensitive.mask.annotations") {
            s.sensitive_annotations = text
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect();
        }
        s.tracking_method = match get("application.resourceTrackingMethod").map(str::trim) {
            Some("label") => TrackingMethod::Label,
            Some("annotation+label") => TrackingMethod::AnnotationAndLabel,
            _ => TrackingMethod::Annotation,
        };
        s.apply_status_default();
        Ok(s)
    }

    fn override_mut(&mut self, key: &str) -> &mut ResourceOverride {
        if let Some(i) = self.overrides.iter().position(|o| o.key == key) {
            return &mut self.overrides[i];
        }
        let (group, kind) = split_override_key(key);
        self.overrides.push(ResourceOverride {
            key: key.to_string(),
            group,
            kind,
            ignore: OverrideIgnore::default(),
            known_type_fields: Vec::new(),
        });
        let last = self.overrides.len() - 1;
        &mut self.overrides[last]
    }

    /// Argo CD injects `/status` into an override according to `ignoreResourceStatusField`,
    /// and preconfigures Rollout's pod template as a known type.
    fn apply_status_default(&mut self) {
        let target = match self.status_ignore {
            StatusIgnore::All => Some("*/*"),
            StatusIgnore::Crd => Some("apiextensions.k8s.io/CustomResourceDefinition"),
            StatusIgnore::None => None,
        };
        if let Some(key) = target {
            let o = self.override_mut(key);
            if !o.ignore.json_pointers.iter().any(|p| p == "/status") {
                o.ignore.json_pointers.push("/status".to_string());
            }
        }
        if !self
            .overrides
            .iter()
            .any(|o| o.key == "argoproj.io/Rollout")
        {
            self.override_mut("argoproj.io/Rollout").known_type_fields = vec![KnownTypeField {
                field: "spec.template.spec".into(),
                type_name: "core/v1/PodSpec".into(),
            }];
        }
    }

    /// Settings as Argo CD has them with an empty `argocd-cm`.
    pub fn argocd_defaults() -> Settings {
        let mut s = Settings::default();
        s.apply_status_default();
        s
    }

    /// The overrides as ignore rules (group and kind globs, no name or namespace).
    pub fn ignore_rules(&self) -> Vec<IgnoreRule> {
        self.overrides
            .iter()
            .filter(|o| o.ignore != OverrideIgnore::default())
            .map(|o| IgnoreRule {
                group: o.group.clone(),
                kind: o.kind.clone(),
                name: String::new(),
                namespace: String::new(),
                json_pointers: o.ignore.json_pointers.clone(),
                jq_path_expressions: o.ignore.jq_path_expressions.clone(),
                managed_fields_managers: o.ignore.managed_fields_managers.clone(),
                extra: Extra::new(),
            })
            .collect()
    }
}

/// Compare options from the `argocd.argoproj.io/compare-options` annotation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// `ServerSideDiff=true|false`; `None` when not set.
    pub server_side_diff: Option<bool>,
    /// `IncludeMutationWebhook=true`.
    pub include_mutation_webhook: bool,
    /// `IgnoreExtraneous`.
    pub ignore_extraneous: bool,
}

impl CompareOptions {
    /// Reads the annotation's comma-separated options; unknown ones are ignored.
    pub fn parse(text: &str) -> CompareOptions {
        let mut o = CompareOptions::default();
        for token in text.split(',').map(str::trim) {
            match token {
                "ServerSideDiff=true" => o.server_side_diff = Some(true),
                "ServerSideDiff=false" => o.server_side_diff = Some(false),
                "IncludeMutationWebhook=true" => o.include_mutation_webhook = true,
                "IgnoreExtraneous" => o.ignore_extraneous = true,
                _ => {}
            }
        }
        o
    }
}

/// What plumb reads from an Argo CD (or plumb) `Application`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Application {
    /// `metadata.name`.
    pub name: String,
    /// The first of `spec.sources`, else `spec.source` (Argo CD prefers `sources` when both
    /// are set), when given.
    pub source: Option<AppSource>,
    /// Every source: `spec.sources` in order, else `spec.source` as one (a source with
    /// `ref:` lends its files to `$NAME/…` value files of the others).
    pub sources: Vec<AppSource>,
    /// `spec.destination.namespace`, when set.
    pub destination_namespace: Option<String>,
    /// `spec.ignoreDifferences`.
    pub ignore_differences: Vec<IgnoreRule>,
    /// The Application's own `argocd.argoproj.io/compare-options` annotation.
    pub compare_options: CompareOptions,
    /// `spec.syncPolicy.syncOptions`.
    pub sync_options: Vec<String>,
}

/// An Application's `spec.source` (or one of `spec.sources`): where desired state comes from
/// and how it renders. Written as Argo CD writes an `ApplicationSource` (`repoURL` always,
/// other fields when set); fields not modelled (`plugin`, `ref`, `name`, …) are kept in
/// `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AppSource {
    /// `repoURL`: the git repository, or the Helm chart repository when `chart` is set.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// `path`: the directory within the repository (empty: its root).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// `targetRevision`: a branch, tag or commit (empty: `HEAD`), or the chart's version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub target_revision: String,
    /// A Helm chart name: the source is that chart of the Helm chart repository `repoURL`.
    #[serde(skip_serializing_if = "none_or_empty")]
    pub chart: Option<String>,
    /// `directory`: options for a plain directory of manifests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectorySource>,
    /// `kustomize`: options for a kustomization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<KustomizeSource>,
    /// `helm`: options for a Helm chart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub helm: Option<HelmSource>,
    /// Fields not modelled (`plugin`, `ref`, `name`, …), kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

fn none_or_empty(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

impl AppSource {
    /// The JSON Argo CD writes for this source (history entries, `comparedTo`, `syncResult`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `spec.source.directory`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DirectorySource {
    /// `recurse`: read manifests in subdirectories too.
    #[serde(skip_serializing_if = "is_false")]
    pub recurse: bool,
    /// A glob ([`crate::glob::path_match`]) matched against paths relative to the source path.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub include: String,
    /// Like `include`; takes precedence over it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exclude: String,
    /// `jsonnet`: how the directory's `*.jsonnet` files are evaluated. Always written, as
    /// Argo CD writes it (`"jsonnet": {}` when nothing is set).
    pub jsonnet: JsonnetSource,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `spec.source.directory.jsonnet`: the evaluation settings of a directory's Jsonnet
/// programs, as Argo CD passes them to its Jsonnet VM.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct JsonnetSource {
    /// `extVars`: external variables, read with `std.extVar(name)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ext_vars: Vec<JsonnetVar>,
    /// `tlas`: top-level arguments, passed to a program whose value is a function.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tlas: Vec<JsonnetVar>,
    /// `libs`: library search paths, relative to the repository's root.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub libs: Vec<String>,
}

impl JsonnetSource {
    /// Whether nothing is set (no variables, arguments or libraries).
    pub fn is_empty(&self) -> bool {
        self.ext_vars.is_empty() && self.tlas.is_empty() && self.libs.is_empty()
    }
}

/// One Jsonnet external variable or top-level argument.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JsonnetVar {
    /// The variable's (or parameter's) name.
    pub name: String,
    /// Its value: a string, or Jsonnet code when `code` is set.
    pub value: String,
    /// Whether `value` is Jsonnet code (evaluated) rather than a string.
    #[serde(skip_serializing_if = "is_false")]
    pub code: bool,
}

/// `spec.source.kustomize`: parameters Argo CD applies to the kustomization before building.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KustomizeSource {
    /// `namePrefix`: prepended to every resource's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name_prefix: String,
    /// `nameSuffix`: appended to every resource's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name_suffix: String,
    /// `name=newName:tag`, `name:tag`, `name@digest` forms, as `kustomize edit set image`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// `commonLabels`: labels added to every resource (and its selectors).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub common_labels: std::collections::BTreeMap<String, String>,
    /// `commonAnnotations`: annotations added to every resource.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub common_annotations: std::collections::BTreeMap<String, String>,
    /// `namespace`: the namespace set on every namespaced resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `replicas`: replica counts to set, by resource name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<KustomizeReplica>,
    /// `patches`: kustomize patches (with their `target`), kept as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Value>,
    /// `components`: kustomize components to add.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// `forceCommonLabels`: `commonLabels` replace labels already set.
    #[serde(skip_serializing_if = "is_false")]
    pub force_common_labels: bool,
    /// `forceCommonAnnotations`: `commonAnnotations` replace annotations already set.
    #[serde(skip_serializing_if = "is_false")]
    pub force_common_annotations: bool,
    /// `labelWithoutSelector`: `commonLabels` are not added to selectors.
    #[serde(skip_serializing_if = "is_false")]
    pub label_without_selector: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `spec.source.kustomize.replicas` entry; `count` is an int or a string.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KustomizeReplica {
    /// The name of the resource whose replicas are set (a Deployment, StatefulSet, …).
    pub name: String,
    /// The replica count.
    pub count: Value,
}

/// `spec.source.helm`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HelmSource {
    /// `valueFiles`: values files, relative to `path` (`$ref/…`: from another source).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub value_files: Vec<String>,
    /// `parameters`: values given as `--set` (or `--set-string`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<HelmParameter>,
    /// `releaseName` (default: the Application's name).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub release_name: String,
    /// Inline values as a YAML string.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub values: String,
    /// `valuesObject`: inline values as an object (takes precedence over `values`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values_object: Option<Value>,
    /// `namespace`: the release's namespace (default: the destination namespace).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `skipCrds`: leave out the chart's `crds/`.
    #[serde(skip_serializing_if = "is_false")]
    pub skip_crds: bool,
    /// `ignoreMissingValueFiles`: a missing values file is skipped, not an error.
    #[serde(skip_serializing_if = "is_false")]
    pub ignore_missing_value_files: bool,
    /// `kubeVersion`: the Kubernetes version templates see (`.Capabilities.KubeVersion`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kube_version: String,
    /// `apiVersions`: the API versions templates see (`.Capabilities.APIVersions`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// `--set-file NAME=PATH` (PATH inside the source path).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub file_parameters: Vec<HelmFileParameter>,
    /// Send the repository's credentials to a chart URL on another host.
    #[serde(skip_serializing_if = "is_false")]
    pub pass_credentials: bool,
    /// `--skip-schema-validation`.
    #[serde(skip_serializing_if = "is_false")]
    pub skip_schema_validation: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `spec.source.helm.fileParameters` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HelmFileParameter {
    /// The value's name (`NAME` of `--set-file NAME=PATH`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The file whose content is the value.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `--set` (or `--set-string` when `forceString`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HelmParameter {
    /// The value's name (`image.tag`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The value.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `forceString`: pass it as a string (`--set-string`).
    #[serde(skip_serializing_if = "is_false")]
    pub force_string: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Application {
    /// Reads an Application object (through [`model::Application`]): `kind` must be
    /// `Application` and `metadata.name` set; a field of the wrong type is an error naming it.
    pub fn from_value(v: &Value) -> Result<Application, SettingsError> {
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "Application" {
            return Err(SettingsError(format!(
                "expected kind Application, found '{kind}'"
            )));
        }
        // Only what the comparison reads must be well formed, and only that is read: a
        // status field of the wrong shape (written by another tool, or by hand) must not make
        // the app unreadable, or no sync could ever repair it; and a refresh does not pay for
        // parsing the last operation's result.
        let model =
            model::Application::read_without_status(v).map_err(|e| SettingsError(e.to_string()))?;
        Application::from_model(&model)
    }

    /// The comparison view of a typed Application.
    pub fn from_model(app: &model::Application) -> Result<Application, SettingsError> {
        if app.metadata.name.is_empty() {
            return Err(SettingsError("Application has no metadata.name".into()));
        }
        let spec = &app.spec;
        if spec.ignore_differences.len() > crate::limits::MAX_IGNORE_DIFFERENCES {
            return Err(SettingsError(format!(
                "spec.ignoreDifferences: {} entries, over the limit of {}",
                spec.ignore_differences.len(),
                crate::limits::MAX_IGNORE_DIFFERENCES
            )));
        }
        for (i, r) in spec.ignore_differences.iter().enumerate() {
            if r.kind.is_empty() {
                return Err(SettingsError(format!(
                    "spec.ignoreDifferences[{i}]: kind is required"
                )));
            }
        }
        let compare_options = app
            .metadata
            .annotations
            .get(crate::COMPARE_OPTIONS_ANNOTATION)
            .map(|a| CompareOptions::parse(a))
            .unwrap_or_default();
        Ok(Application {
            name: app.metadata.name.clone(),
            source: app.first_source().cloned(),
            sources: app.sources().into_iter().cloned().collect(),
            destination_namespace: Some(spec.destination.namespace.clone())
                .filter(|n| !n.is_empty()),
            ignore_differences: spec.ignore_differences.clone(),
            compare_options,
            sync_options: spec
                .sync_policy
                .as_ref()
                .map(|p| p.sync_options.clone())
                .unwrap_or_default(),
        })
    }

    /// Whether a sync option such as `RespectIgnoreDifferences=true` is set.
    pub fn has_sync_option(&self, opt: &str) -> bool {
        self.sync_options.iter().any(|o| o.trim() == opt)
    }
}

/// The tracking id Argo CD writes: `<app>:<group>/<kind>:<namespace>/<name>`.
pub fn tracking_id(app: &str, key: &crate::ResourceKey) -> String {
    format!(
        "{app}:{}/{}:{}/{}",
        key.group, key.kind, key.namespace, key.name
    )
}

/// Whether a live object is tracked by `app` (label or annotation). As in Argo CD, an
/// object with an owner (a Deployment's ReplicaSet, which copies its annotations) is the
/// owner's, and a tracking id names the very object that carries it.
pub fn is_tracked_by(obj: &Value, app: &str) -> bool {
    !has_owner(obj)
        && (crate::value::label(obj, crate::INSTANCE_LABEL) == Some(app)
            || tracking_id_app(obj) == Some(app))
}

/// Whether an object has an owner (`metadata.ownerReferences`): it is then its owner's, not
/// an Application's, whatever tracking it copied.
pub fn has_owner(obj: &Value) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|o| !o.is_empty())
}

/// The Application the tracking-id annotation of `obj` names, when the id names this very
/// object (an id copied onto another object does not count; a cluster-scoped object's id has
/// an empty namespace).
pub fn tracking_id_app(obj: &Value) -> Option<&str> {
    let id = annotation(obj, crate::TRACKING_ID_ANNOTATION)?;
    let (app, _) = id.split_once(':')?;
    let key = crate::ResourceKey::of(obj)?;
    let mut cluster_scoped = key.clone();
    cluster_scoped.namespace.clear();
    (id == tracking_id(app, &key) || id == tracking_id(app, &cluster_scoped)).then_some(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_jsonnet_block_is_typed_and_written_back_as_given() {
        let given = serde_json::json!({"repoURL": "https://git.example/r", "directory": {
            "recurse": true,
            "jsonnet": {
                "extVars": [{"name": "env", "value": "prod"}, {"name": "n", "value": "1 + 1", "code": true}],
                "tlas": [{"name": "ns", "value": "web"}],
                "libs": ["vendor"],
            },
        }});
        let source: AppSource = serde_json::from_value(given.clone()).expect("a source");
        let jsonnet = &source.directory.as_ref().expect("directory").jsonnet;
        assert_eq!(jsonnet.libs, ["vendor"]);
        assert!(jsonnet.ext_vars[1].code && !jsonnet.ext_vars[0].code);
        assert_eq!(jsonnet.tlas[0].value, "web");
        assert!(source.directory.as_ref().unwrap().extra.is_empty());
        assert_eq!(source.to_value(), given);
        let empty: AppSource = serde_json::from_value(
            serde_json::json!({"repoURL": "r", "directory": {"jsonnet": {}}}),
        )
        .expect("a source");
        // As Argo CD writes it: `jsonnet` always, its empty lists never.
        assert_eq!(
            empty.to_value(),
            serde_json::json!({"repoURL": "r", "directory": {"jsonnet": {}}})
        );
    }
    use serde_json::json;

    #[test]
    fn a_malformed_status_field_does_not_make_the_application_unreadable() {
        let app = |status: Value, spec_extra: Value| {
            let mut spec = json!({"source": {"repoURL": "https://h/r", "path": "p"},
                                  "destination": {"namespace": "web"}});
            if let (Some(s), Some(x)) = (spec.as_object_mut(), spec_extra.as_object()) {
                s.extend(x.clone());
            }
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                   "metadata": {"name": "web"}, "spec": spec, "status": status})
        };
        let read =
            Application::from_value(&app(json!({"history": [{"id": "x"}]}), json!({}))).unwrap();
        assert_eq!(read.name, "web");
        assert_eq!(read.destination_namespace.as_deref(), Some("web"));
        // The spec is still read strictly, naming the field.
        let e = Application::from_value(&app(json!({}), json!({"revisionHistoryLimit": "ten"})))
            .unwrap_err();
        assert!(e.0.starts_with("spec.revisionHistoryLimit: "), "{e}");
    }

    #[test]
    fn reads_every_override_form() {
        let cm = json!({"data": {
            "resource.customizations": "admissionregistration.k8s.io/MutatingWebhookConfiguration:\n  ignoreDifferences: |\n    jqPathExpressions:\n    - .webhooks[]?.clientConfig.caBundle\n",
            "resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers:\n- /spec/replicas\n",
            "resource.customizations.ignoreDifferences.all": "managedFieldsManagers:\n- kube-controller-manager\n",
            "resource.customizations.knownTypeFields.example.com_Dummy": "- field: spec\n  type: core/v1/ResourceList\n",
            "resource.compareoptions": "ignoreAggregatedRoles: true\nignoreResourceStatusField: crd\n"
        }});
        let s = Settings::from_configmap(&cm).unwrap();
        assert!(s.ignore_aggregated_roles);
        assert_eq!(s.status_ignore, StatusIgnore::Crd);
        let rules = s.ignore_rules();
        let dep = rules
            .iter()
            .find(|r| r.group == "apps" && r.kind == "Deployment")
            .unwrap();
        assert_eq!(dep.json_pointers, ["/spec/replicas"]);
        let all = rules
            .iter()
            .find(|r| r.group == "*" && r.kind == "*")
            .unwrap();
        assert_eq!(all.managed_fields_managers, ["kube-controller-manager"]);
        assert!(
            all.json_pointers.is_empty(),
            "status goes to CRDs only with 'crd'"
        );
        let crd = rules
            .iter()
            .find(|r| r.kind == "CustomResourceDefinition")
            .unwrap();
        assert_eq!(crd.json_pointers, ["/status"]);
        let mwc = rules
            .iter()
            .find(|r| r.kind == "MutatingWebhookConfiguration")
            .unwrap();
        assert_eq!(
            mwc.jq_path_expressions,
            [".webhooks[]?.clientConfig.caBundle"]
        );
        let dummy = s
            .overrides
            .iter()
            .find(|o| o.key == "example.com/Dummy")
            .unwrap();
        assert_eq!(dummy.known_type_fields[0].type_name, "core/v1/ResourceList");
    }

    #[test]
    fn defaults_ignore_status_everywhere() {
        let s = Settings::argocd_defaults();
        let all = s.ignore_rules();
        assert!(
            all.iter()
                .any(|r| r.group == "*" && r.kind == "*" && r.json_pointers == ["/status"])
        );
    }

    #[test]
    fn bad_split_key_is_an_error() {
        let cm = json!({"data": {"resource.customizations.ignoreDifferences.a_b_C": "jsonPointers: []"}});
        assert!(
            Settings::from_configmap(&cm)
                .unwrap_err()
                .0
                .contains("a_b_C")
        );
    }

    #[test]
    fn application_fields() {
        let app = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "payments-prod", "annotations": {"argocd.argoproj.io/compare-options": "ServerSideDiff=true, IncludeMutationWebhook=true"}},
            "spec": {"destination": {"namespace": "pay-prod"},
                     "ignoreDifferences": [{"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}],
                     "syncPolicy": {"syncOptions": ["RespectIgnoreDifferences=true"]}}});
        let a = Application::from_value(&app).unwrap();
        assert_eq!(a.name, "payments-prod");
        assert_eq!(a.destination_namespace.as_deref(), Some("pay-prod"));
        assert_eq!(a.compare_options.server_side_diff, Some(true));
        assert!(a.compare_options.include_mutation_webhook);
        assert!(a.has_sync_option("RespectIgnoreDifferences=true"));
        assert_eq!(a.ignore_differences[0].json_pointers, ["/spec/replicas"]);
    }
}
