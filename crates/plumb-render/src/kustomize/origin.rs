//! kustomize's `buildMetadata: [originAnnotations]`: each resource says where it came from
//! in a `config.kubernetes.io/origin` annotation (`path:` of its file, or the kustomization
//! and built-in generator that made it), paths relative to the top kustomization; and the
//! annotations kustomize's readers use internally, which it strips from every build's output.
//!
//! Only the top kustomization's `buildMetadata` counts (a base's is ignored), and any value
//! turns the tracking on for the build; the annotations stay in the output only with
//! `originAnnotations`. Checked against `kubectl kustomize` (corpus cases 107 and 108).
//! `managedByLabel` (the kustomize binary's own version) and `transformerAnnotations` are
//! not native: the build falls back to the binary.

use super::resource::Res;
use super::tree::{self, Dialect, Node, Org};

/// The annotation.
pub const KEY: &str = "config.kubernetes.io/origin";

/// Annotations kustomize removes from every object it outputs, whatever the object said:
/// its readers' bookkeeping (file, index, id, indentation), the origin (unless the top
/// kustomization asks for it) and the transformations (`transformerAnnotations`, not native).
const INTERNAL: &[&str] = &[
    "config.kubernetes.io/path",
    "config.kubernetes.io/index",
    "config.k8s.io/id",
    "internal.config.kubernetes.io/path",
    "internal.config.kubernetes.io/index",
    "internal.config.kubernetes.io/id",
    "internal.config.kubernetes.io/seqindent",
    "internal.config.kubernetes.io/annotations-migration-resource-id",
    "alpha.config.kubernetes.io/transformations",
];

/// What the top kustomization's `buildMetadata` asks of the native build.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tracking {
    /// Origins are recorded while the build runs (any `buildMetadata` value).
    pub on: bool,
    /// They stay in the output (`originAnnotations`).
    pub keep: bool,
}

impl Tracking {
    /// From the top kustomization's `buildMetadata` values; `Err` names a value the native
    /// build does not implement.
    pub fn of(values: &[String]) -> Result<Tracking, &str> {
        if let Some(v) = values
            .iter()
            .find(|v| *v == "managedByLabel" || *v == "transformerAnnotations")
        {
            return Err(v);
        }
        Ok(Tracking {
            on: !values.is_empty(),
            keep: values.iter().any(|v| v == "originAnnotations"),
        })
    }
}

/// Go's `filepath.Join`: the parts joined by `/` and cleaned lexically (`.` dropped, `..`
/// taking the part before it away, kept at the start of a relative path).
pub fn join(a: &str, b: &str) -> String {
    let rooted = if a.is_empty() {
        b.starts_with('/')
    } else {
        a.starts_with('/')
    };
    let mut parts: Vec<&str> = Vec::new();
    for seg in a.split('/').chain(b.split('/')) {
        match seg {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// `path` as go-yaml writes it in the annotation's YAML: plain, when it reads back as the
/// same string. `None` for a path it would quote (rare); the caller falls back then.
fn plain(path: &str) -> Option<&str> {
    let safe = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
        && !path.starts_with('-');
    if !safe {
        return None;
    }
    let doc = format!("k: {path}\n");
    let read = tree::parse_stream(&doc, u32::MAX, 0, 0, Dialect::Resource).ok()?;
    match read.first().and_then(|d| d.node.get("k")) {
        Some(Node::Scalar(tree::Scalar::Str(s), _)) if s.as_str() == path => Some(path),
        _ => None,
    }
}

/// The annotation of a resource read from the file at `path`.
pub fn of_file(path: &str) -> Option<String> {
    Some(format!("path: {}\n", plain(path)?))
}

/// The annotation of a resource made by the built-in generator `kind` (`ConfigMapGenerator`,
/// `SecretGenerator`, `HelmChartInflationGenerator`) of the kustomization file at `file`.
pub fn of_generator(file: &str, kind: &str) -> Option<String> {
    Some(format!(
        "configuredIn: {}\nconfiguredBy:\n  apiVersion: builtin\n  kind: {kind}\n",
        plain(file)?
    ))
}

/// Sets the annotation (replacing one the object had).
pub fn annotate(r: &mut Res, value: &str) {
    if let Some(m) = r.node.map_at(&["metadata", "annotations"]) {
        m.insert(KEY, Node::str(value, Org::NONE));
    }
}

/// Removes what kustomize strips from its output ([`INTERNAL`], and the origin unless
/// `keep_origin`).
pub fn strip(node: &mut Node, keep_origin: bool) {
    let Some(Node::Map(m)) = node
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    else {
        return;
    };
    for key in INTERNAL {
        m.remove(key);
    }
    if !keep_origin {
        m.remove(KEY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_as_go_filepath_join() {
        assert_eq!(join("", "cm.yaml"), "cm.yaml");
        assert_eq!(join("", "./sub/cm.yaml"), "sub/cm.yaml");
        assert_eq!(join("../../base", "sub/cm.yaml"), "../../base/sub/cm.yaml");
        assert_eq!(join("../../base", "../comp"), "../../comp");
        assert_eq!(join("a/b", "../../.."), "..");
        assert_eq!(join("", "."), ".");
        assert_eq!(join("/x", "../../y"), "/y");
    }

    #[test]
    fn writes_paths_plain_only_when_they_read_back() {
        assert_eq!(
            of_file("../base/cm.yaml").as_deref(),
            Some("path: ../base/cm.yaml\n")
        );
        // go-yaml would quote these: the caller falls back.
        for p in [
            "true", "123", "1e3", "a b.yaml", "a:b", "-x.yaml", "null", "~",
        ] {
            assert_eq!(of_file(p), None, "{p}");
        }
        assert_eq!(
            of_generator("kustomization.yaml", "SecretGenerator").as_deref(),
            Some(
                "configuredIn: kustomization.yaml\nconfiguredBy:\n  apiVersion: builtin\n  kind: SecretGenerator\n"
            )
        );
    }

    #[test]
    fn only_origin_annotations_is_native() {
        let t = |v: &[&str]| {
            Tracking::of(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map_err(str::to_string)
        };
        assert_eq!(t(&[]), Ok(Tracking::default()));
        assert_eq!(
            t(&["originAnnotations"]),
            Ok(Tracking {
                on: true,
                keep: true
            })
        );
        // Any value turns tracking on; only originAnnotations keeps the annotations.
        assert_eq!(
            t(&["bogus"]),
            Ok(Tracking {
                on: true,
                keep: false
            })
        );
        assert_eq!(
            t(&["originAnnotations", "managedByLabel"]),
            Err("managedByLabel".into())
        );
        assert_eq!(
            t(&["transformerAnnotations"]),
            Err("transformerAnnotations".into())
        );
    }
}
