//! Read-only accessors over an unstructured Kubernetes object, with the
//! zero-value semantics Argo CD gets from converting to typed Go structs:
//! a missing (or `null`) string reads as `""`, a missing integer as `0`.

use serde_json::Value;

use crate::{Health, HealthStatus};

/// Argo CD's hook annotation (`common.AnnotationKeyHook`).
pub(crate) const ANNOTATION_HOOK: &str = "argocd.argoproj.io/hook";
/// Helm's hook annotation, honoured by Argo CD when the Argo one is absent.
pub(crate) const ANNOTATION_HELM_HOOK: &str = "helm.sh/hook";
/// The finalizer Argo CD puts on hooks; such objects are assessed normally while deleting.
pub(crate) const HOOK_FINALIZER: &str = "argocd.argoproj.io/hook-finalizer";

/// Group, version and kind of an object, split out of `apiVersion`/`kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gvk<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
}

impl<'a> Gvk<'a> {
    pub(crate) fn of(obj: &'a Value) -> Self {
        let api_version = str_at(obj, &["apiVersion"]);
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        Gvk {
            group,
            version,
            kind: str_at(obj, &["kind"]),
        }
    }

    /// The Unknown health Argo CD reports when a check does not support the object's
    /// version: `unsupported <Label> GVK: <group>/<version>, Kind=<kind>`.
    pub(crate) fn unsupported(&self, label: &str) -> Health {
        Health::new(
            HealthStatus::Unknown,
            format!(
                "unsupported {label} GVK: {}/{}, Kind={}",
                self.group, self.version, self.kind
            ),
        )
    }
}

/// The value at `path`, treating JSON `null` as absent.
pub(crate) fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// The string at `path`, `""` when absent or not a string.
pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

/// The integer at `path`, if present. Integral floats (`3.0`) count as integers.
pub(crate) fn opt_int_at(v: &Value, path: &[&str]) -> Option<i64> {
    let n = get(v, path)?;
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let f = n.as_f64()?;
    // Only integral floats; `as` saturates, which is fine for counts and generations.
    (f.fract() == 0.0).then_some(f as i64)
}

/// The integer at `path`, `0` when absent (Go's zero value).
pub(crate) fn int_at(v: &Value, path: &[&str]) -> i64 {
    opt_int_at(v, path).unwrap_or(0)
}

/// The array at `path`, empty when absent or not an array.
pub(crate) fn array_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The first condition in `status.conditions` with the given `type`.
pub(crate) fn condition<'a>(obj: &'a Value, cond_type: &str) -> Option<&'a Value> {
    array_at(obj, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == cond_type)
}

/// The value of annotation `key`, if set.
pub(crate) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    get(obj, &["metadata", "annotations", key]).and_then(Value::as_str)
}

/// Comma-separated annotation values, trimmed, empty items dropped, de-duplicated
/// (gitops-engine `GetAnnotationCSVs`).
fn annotation_csvs<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for item in annotation(obj, key).unwrap_or("").split(',') {
        let item = item.trim();
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The hook types of an object: valid Argo CD hook types from `argocd.argoproj.io/hook`,
/// else Helm hook types mapped to Argo ones (gitops-engine `hook.Types`).
fn hook_types(obj: &Value) -> Vec<&'static str> {
    let argo: Vec<&'static str> = annotation_csvs(obj, ANNOTATION_HOOK)
        .into_iter()
        .filter_map(|t| match t {
            "PreSync" => Some("PreSync"),
            "Sync" => Some("Sync"),
            "PostSync" => Some("PostSync"),
            "SyncFail" => Some("SyncFail"),
            "Skip" => Some("Skip"),
            _ => None,
        })
        .collect();
    if !argo.is_empty() {
        return argo;
    }
    annotation_csvs(obj, ANNOTATION_HELM_HOOK)
        .into_iter()
        .filter_map(|t| match t {
            "pre-install" | "pre-upgrade" => Some("PreSync"),
            "post-install" | "post-upgrade" => Some("PostSync"),
            _ => None,
        })
        .collect()
}

/// gitops-engine `hook.Skip`: the only hook type is `Skip`.
pub(crate) fn is_skip_hook(obj: &Value) -> bool {
    let types = hook_types(obj);
    types.contains(&"Skip") && types.len() == 1
}

/// gitops-engine `hook.IsHook`: an Argo hook annotation that is not just `Skip`,
/// or a Helm hook other than `crd-install`.
pub(crate) fn is_hook(obj: &Value) -> bool {
    if annotation(obj, ANNOTATION_HOOK).is_some() {
        return !is_skip_hook(obj);
    }
    annotation(obj, ANNOTATION_HELM_HOOK).is_some_and(|v| v != "crd-install")
}

/// gitops-engine `ignore.Ignore`: a hook without any recognised hook type.
pub(crate) fn is_ignored(obj: &Value) -> bool {
    is_hook(obj) && hook_types(obj).is_empty()
}

/// Whether the object carries Argo CD's hook finalizer.
pub(crate) fn has_hook_finalizer(obj: &Value) -> bool {
    array_at(obj, &["metadata", "finalizers"])
        .iter()
        .any(|f| f.as_str() == Some(HOOK_FINALIZER))
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(obj: &Value) -> bool {
    !str_at(obj, &["metadata", "deletionTimestamp"]).is_empty()
}

/// Go's `%q` for the strings that occur in Kubernetes names and messages
/// (`strconv.Quote`: double quotes, backslash escapes, `\xNN` for other controls).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0b}' => out.push_str("\\v"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gvk_splits_core_and_grouped_api_versions() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod"});
        assert_eq!(
            Gvk::of(&pod),
            Gvk {
                group: "",
                version: "v1",
                kind: "Pod"
            }
        );
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        assert_eq!(Gvk::of(&deploy).group, "apps");
        assert_eq!(
            Gvk::of(&deploy).unsupported("Deployment").message,
            "unsupported Deployment GVK: apps/v1, Kind=Deployment"
        );
    }

    #[test]
    fn hook_classification_matches_gitops_engine() {
        let cases = [
            (json!({}), false, false, false),
            (
                json!({"argocd.argoproj.io/hook": "PostSync"}),
                true,
                false,
                false,
            ),
            (
                json!({"argocd.argoproj.io/hook": "Skip"}),
                false,
                true,
                false,
            ),
            (
                json!({"argocd.argoproj.io/hook": "Skip, PreSync"}),
                true,
                false,
                false,
            ),
            // An unknown Argo hook type still makes a hook, one Argo CD ignores.
            (
                json!({"argocd.argoproj.io/hook": "Bogus"}),
                true,
                false,
                true,
            ),
            (json!({"helm.sh/hook": "pre-install"}), true, false, false),
            (json!({"helm.sh/hook": "crd-install"}), false, false, false),
            (json!({"helm.sh/hook": "test"}), true, false, true),
        ];
        for (annotations, hook, skip, ignored) in cases {
            let obj = json!({"metadata": {"annotations": annotations}});
            assert_eq!(is_hook(&obj), hook, "is_hook {annotations}");
            assert_eq!(is_skip_hook(&obj), skip, "is_skip_hook {annotations}");
            assert_eq!(is_ignored(&obj), ignored, "is_ignored {annotations}");
        }
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go_quote("guestbook-ui"), "\"guestbook-ui\"");
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\x01\"");
    }

    #[test]
    fn numbers_read_with_go_zero_values() {
        let obj = json!({"a": 3, "b": 2.0, "c": null, "d": "4"});
        assert_eq!(int_at(&obj, &["a"]), 3);
        assert_eq!(int_at(&obj, &["b"]), 2);
        assert_eq!(opt_int_at(&obj, &["c"]), None);
        assert_eq!(opt_int_at(&obj, &["d"]), None);
        assert_eq!(int_at(&obj, &["missing"]), 0);
    }
}
