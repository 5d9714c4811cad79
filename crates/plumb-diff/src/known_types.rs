//! `knownTypeFields`: canonicalise a field of a custom resource as a built-in type
//! (`core/v1/PodSpec`, `core/v1/ResourceList`, `core/Quantity`, `meta/v1/Duration`).

use plumb_core::ResourceKey;
use plumb_core::argo::ResourceOverride;
use plumb_core::duration::canonical_go_duration;
use plumb_core::glob::wildcard_match;
use plumb_core::quantity::Quantity;
use plumb_core::schema::{FieldDef, FieldType, Schema};
use serde_json::Value;

/// One configured field: group/kind pattern, dotted path, type.
#[derive(Debug, Clone)]
struct Entry {
    group: String,
    kind: String,
    path: Vec<String>,
    type_name: String,
}

/// The knownTypeFields of all overrides.
#[derive(Debug, Clone, Default)]
pub struct KnownTypes {
    entries: Vec<Entry>,
}

impl KnownTypes {
    pub fn from_overrides(overrides: &[ResourceOverride]) -> KnownTypes {
        let mut entries = Vec::new();
        for o in overrides {
            for f in &o.known_type_fields {
                entries.push(Entry {
                    group: o.group.clone(),
                    kind: o.kind.clone(),
                    path: f.field.split('.').map(String::from).collect(),
                    type_name: f.type_name.clone(),
                });
            }
        }
        KnownTypes { entries }
    }

    /// Canonicalises the configured fields of `obj` in place; unknown types and missing
    /// paths are skipped.
    pub fn apply(&self, key: &ResourceKey, obj: &mut Value, schema: &Schema) {
        for e in &self.entries {
            if wildcard_match(&e.group, &key.group) && wildcard_match(&e.kind, &key.kind) {
                let Some(def) = field_def(&e.type_name) else {
                    tracing::warn!(type_name = %e.type_name, "unknown knownTypeFields type ignored");
                    continue;
                };
                walk(obj, &e.path, &def, schema);
            }
        }
    }
}

/// A knownTypeFields type name as a field definition.
fn field_def(type_name: &str) -> Option<FieldDef> {
    let mk = |t: FieldType, r: Option<String>, values: Option<FieldDef>| FieldDef {
        t,
        type_ref: r,
        type_idx: None,
        items: None,
        values: values.map(Box::new),
        strategy: None,
        merge_key: None,
        list_type: None,
        map_keys: Vec::new(),
        omitempty: false,
        ptr: false,
    };
    match type_name {
        "core/Quantity" => Some(mk(FieldType::Quantity, None, None)),
        "meta/v1/Duration" => Some(mk(FieldType::String, Some("duration".into()), None)),
        "core/v1/ResourceList" => Some(mk(
            FieldType::Map,
            None,
            Some(mk(FieldType::Quantity, None, None)),
        )),
        _ => {
            let name = type_name.strip_prefix("core/v1/")?;
            let full = format!("io.k8s.api.core.v1.{name}");
            Schema::builtin().type_def(&full)?;
            Some(mk(FieldType::Object, Some(full), None))
        }
    }
}

fn walk(v: &mut Value, path: &[String], def: &FieldDef, schema: &Schema) {
    match v {
        // The first list on the way is iterated; the rest of the path applies per element.
        Value::Array(items) => items.iter_mut().for_each(|it| walk(it, path, def, schema)),
        _ => match path.split_first() {
            None => {
                if let Some(c) = canonical(v, def, schema) {
                    *v = c;
                }
            }
            Some((head, rest)) => {
                if let Some(child) = v.get_mut(head.as_str()) {
                    walk(child, rest, def, schema);
                }
            }
        },
    }
}

fn canonical(v: &Value, def: &FieldDef, schema: &Schema) -> Option<Value> {
    if def.type_ref.as_deref() == Some("duration") {
        return v
            .as_str()
            .and_then(canonical_go_duration)
            .map(Value::String);
    }
    if def.t == FieldType::Quantity {
        return Quantity::from_json(v).map(|q| Value::String(q.canonical()));
    }
    crate::remarshal::canonicalize_as(v, def, schema).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_core::argo::Settings;
    use serde_json::json;

    #[test]
    fn pod_spec_of_a_custom_resource() {
        let cm = json!({"data": {"resource.customizations.knownTypeFields.example.com_Dummy":
            "- field: spec.template.spec\n  type: core/v1/PodSpec\n- field: spec.limits\n  type: core/v1/ResourceList\n"}});
        let kt = KnownTypes::from_overrides(&Settings::from_configmap(&cm).unwrap().overrides);
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Dummy", "metadata": {"name": "d"},
            "spec": {"limits": {"cpu": "2000m"}, "template": {"spec": {"containers": [{"name": "a",
                "resources": {"limits": {"cpu": "2000m"}}, "volumeMounts": [{"name": "v", "mountPath": "/x", "readOnly": false}]}]}}}});
        let key = ResourceKey::of(&obj).unwrap();
        kt.apply(&key, &mut obj, Schema::builtin());
        assert_eq!(obj.pointer("/spec/limits/cpu"), Some(&json!("2")));
        assert_eq!(
            obj.pointer("/spec/template/spec/containers/0/resources/limits/cpu"),
            Some(&json!("2"))
        );
        assert!(
            obj.pointer("/spec/template/spec/containers/0/volumeMounts/0/readOnly")
                .is_none()
        );
    }
}
