//! The builtin transformers, run in kustomize's fixed order over a kustomization's
//! accumulated resources.

use super::config::Config;
use super::fieldspec::{self, FieldSpec, Leaf, walk};
use super::kustfile::{Kust, Spanned, entry_bool, entry_str, known_fields, string_map_of};
use super::resource::{Res, cluster_scoped};
use super::tree::{self, Node, Org, Scalar};
use super::{Ctx, KustomizeError, patches, replacements};
use regex::Regex;

fn kerr(k: &Kust, org: Option<Org>, m: impl Into<String>) -> KustomizeError {
    super::load_error(&k.path, org.filter(|o| o.file == k.file), m)
}

/// Runs a kustomization's transformers over `ra`.
/// `config`: the build's transformer configs (`configurations`), added to the builtin specs.
pub fn run(
    ctx: &mut Ctx,
    k: &Kust,
    ra: &mut Vec<Res>,
    config: &Config,
) -> Result<(), KustomizeError> {
    patches::patches_strategic_merge(ctx, k, ra)?;
    patches::patches(ctx, k, ra)?;
    namespace(k, ra, config)?;
    prefix_suffix(k, ra)?;
    labels(k, ra, config)?;
    annotations(k, ra, config)?;
    patches::patches_json6902(ctx, k, ra)?;
    replicas(k, ra)?;
    images(k, ra)?;
    replacements::run(ctx, k, ra)
}

/// `namespace`: metadata.namespace of namespaced kinds, the name of Namespace objects,
/// RoleBinding subjects named `default`, and a few service references.
fn namespace(k: &Kust, ra: &mut [Res], config: &Config) -> Result<(), KustomizeError> {
    let Some(ns) = k.string("namespace").map_err(|m| kerr(k, None, m))? else {
        return Ok(());
    };
    if ns.value.is_empty() {
        return Ok(());
    }
    let mut specs = vec![
        FieldSpec::new("", "", "Namespace", "metadata/name", true),
        FieldSpec::new(
            "apiregistration.k8s.io",
            "",
            "APIService",
            "spec/service/namespace",
            true,
        ),
        FieldSpec::new(
            "apiextensions.k8s.io",
            "",
            "CustomResourceDefinition",
            "spec/conversion/webhook/clientConfig/service/namespace",
            false,
        ),
    ];
    super::config::merge_specs(&mut specs, &config.namespace);
    let value = Node::str(ns.value.clone(), ns.org);
    // Each resource on its own, on every core.
    plumb_core::parallel::try_each_mut(ra, |_, r| {
        if r.is_empty() {
            return Ok::<(), KustomizeError>(());
        }
        r.store_previous_id();
        // The id just stored is the current one (the node is changed below).
        let id = r.prev.last().expect("just stored").as_ref();
        if !cluster_scoped(id.group, id.version, id.kind)
            && let Some(m) = r.node.map_at(&["metadata"])
        {
            tree::set(m, "namespace", value.clone());
        }
        if matches!(id.kind, "RoleBinding" | "ClusterRoleBinding")
            && let Some(Node::Seq(subjects)) = r.node.get_mut("subjects")
        {
            for s in subjects.iter_mut() {
                if s.get("name").and_then(Node::as_str) == Some("default")
                    && let Some(m) = s.as_map_mut()
                {
                    m.insert("namespace", value.clone());
                }
            }
        }
        // The name of a Namespace only when its apiVersion is exactly `v1`: a `Namespace`
        // kind of another group or version is an ordinary object.
        let core_namespace = id.group.is_empty() && id.version == "v1";
        for fs in specs
            .iter()
            .filter(|f| f.selects(id) && (core_namespace || f.path != "metadata/name"))
        {
            walk(
                &mut r.node,
                fs.segments(),
                fs.create,
                Leaf::Scalar,
                &mut |n| {
                    *n = value.clone();
                    Ok(())
                },
            )
            .map_err(|m| kerr(k, Some(ns.org), m))?;
        }
        Ok(())
    })?;
    if let Some(i) = super::resource::IdIndex::with_capacity(ra.len()).first_duplicate(ra, 0) {
        return Err(kerr(
            k,
            Some(ns.org),
            format!(
                "namespace transformation produces ID conflict: {}",
                ra[i].cur_id().display()
            ),
        ));
    }
    Ok(())
}

/// `namePrefix` / `nameSuffix` on metadata.name (not of CRDs and Namespaces of any group,
/// nor of `apiregistration.k8s.io` APIServices).
fn prefix_suffix(k: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    let prefix = k.string("namePrefix").map_err(|m| kerr(k, None, m))?;
    let suffix = k.string("nameSuffix").map_err(|m| kerr(k, None, m))?;
    for (affix, is_prefix) in [(prefix, true), (suffix, false)] {
        let Some(a) = affix.filter(|a| !a.value.is_empty()) else {
            continue;
        };
        plumb_core::parallel::try_each_mut(ra, |_, r| {
            let org = r.org_id_ref();
            if matches!(org.kind, "CustomResourceDefinition" | "Namespace")
                || (org.kind == "APIService" && org.group == "apiregistration.k8s.io")
            {
                return Ok::<(), KustomizeError>(());
            }
            r.push_affix(&a.value, is_prefix);
            r.store_previous_id();
            let name = r.name().to_string();
            let new = if is_prefix {
                format!("{}{name}", a.value)
            } else {
                format!("{name}{}", a.value)
            };
            r.set_name(new, a.org);
            Ok(())
        })?;
    }
    Ok(())
}

/// Sets `pairs` into the map found at each field spec that selects each resource, on every
/// core.
fn set_pairs_all(
    k: &Kust,
    ra: &mut [Res],
    specs: &[FieldSpec],
    pairs: &[(String, Spanned)],
) -> Result<(), KustomizeError> {
    let (kind_of, selecting) = super::fieldspec::by_kind(
        ra.iter().map(|r| {
            let id = r.cur_id_ref();
            (id.group, id.version, id.kind)
        }),
        |id| {
            (0..specs.len())
                .filter(|&i| specs[i].selects(id))
                .collect::<Vec<usize>>()
        },
    );
    plumb_core::parallel::try_each_mut(ra, |i, r| {
        set_pairs(k, r, specs, &selecting[kind_of[i]], pairs)
    })
}

/// Sets `pairs` into the map found at each field spec of `selected` (those selecting `r`).
fn set_pairs(
    k: &Kust,
    r: &mut Res,
    specs: &[FieldSpec],
    selected: &[usize],
    pairs: &[(String, Spanned)],
) -> Result<(), KustomizeError> {
    for fs in selected.iter().map(|&i| &specs[i]) {
        walk(&mut r.node, fs.segments(), fs.create, Leaf::Map, &mut |n| {
            let Some(m) = n.as_map_mut() else {
                return Err("expected a mapping for labels or annotations".into());
            };
            for (key, v) in pairs {
                tree::set(m, key, Node::str(v.value.clone(), v.org));
            }
            Ok(())
        })
        .map_err(|m| kerr(k, pairs.first().map(|p| p.1.org), m))?;
    }
    Ok(())
}

/// Reads custom field specs (`labels[].fields`).
fn read_specs(k: &Kust, n: Option<&Node>) -> Result<Vec<FieldSpec>, String> {
    let Some(Node::Seq(items)) = n else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|it| {
            let m = it.as_map().ok_or("field specs must be mappings")?;
            let s = |f: &str| entry_str(k, m, f).map(|s| s.value).unwrap_or_default();
            Ok(FieldSpec::new(
                &s("group"),
                &s("version"),
                &s("kind"),
                &s("path"),
                entry_bool(m, "create"),
            ))
        })
        .collect()
}

/// `commonLabels`, then each `labels` entry.
fn labels(k: &Kust, ra: &mut [Res], config: &Config) -> Result<(), KustomizeError> {
    let with_config = |builtin: &[FieldSpec], extra: &[FieldSpec]| {
        let mut v = builtin.to_vec();
        v.extend(extra.iter().cloned());
        v
    };
    let common_specs = with_config(fieldspec::common_labels(), &config.common_labels);
    let common = k.string_map("commonLabels").map_err(|m| kerr(k, None, m))?;
    if !common.is_empty() {
        set_pairs_all(k, ra, &common_specs, &common)?;
    }
    for e in k.maps("labels").map_err(|m| kerr(k, None, m))? {
        known_fields(
            e,
            &["pairs", "includeSelectors", "includeTemplates", "fields"],
        )
        .map_err(|m| kerr(k, e.values().find_map(Node::org), m))?;
        let pairs = string_map_of(k, e.get("pairs"), "pairs").map_err(|m| kerr(k, None, m))?;
        let mut specs = read_specs(k, e.get("fields")).map_err(|m| kerr(k, None, m))?;
        if entry_bool(e, "includeSelectors") {
            specs.extend(common_specs.iter().cloned());
        } else {
            specs.push(FieldSpec::new("", "", "", "metadata/labels", true));
            if entry_bool(e, "includeTemplates") {
                specs.extend(fieldspec::template_labels().iter().cloned());
            }
        }
        if pairs.is_empty() {
            continue;
        }
        set_pairs_all(k, ra, &specs, &pairs)?;
    }
    Ok(())
}

/// `commonAnnotations`.
fn annotations(k: &Kust, ra: &mut [Res], config: &Config) -> Result<(), KustomizeError> {
    let pairs = k
        .string_map("commonAnnotations")
        .map_err(|m| kerr(k, None, m))?;
    if pairs.is_empty() {
        return Ok(());
    }
    let mut all = fieldspec::common_annotations().to_vec();
    all.extend(config.common_annotations.iter().cloned());
    set_pairs_all(k, ra, &all, &pairs)
}

/// `replicas`: spec.replicas of the named Deployments, ReplicationControllers,
/// ReplicaSets and StatefulSets (by current or earlier name).
fn replicas(k: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    for e in k.maps("replicas").map_err(|m| kerr(k, None, m))? {
        let at = e.values().find_map(Node::org);
        let name = entry_str(k, e, "name").map(|s| s.value).unwrap_or_default();
        // Its type was checked as the kustomization was read: a number, or nothing (no
        // count, or null), which is Go's zero, and kustomize scales to 0.
        let count = match e.get("count") {
            Some(Node::Scalar(Scalar::Num(n), o)) => Node::Scalar(Scalar::Num(n.clone()), *o),
            other => Node::Scalar(
                Scalar::Num(0.into()),
                other.and_then(Node::org).or(at).unwrap_or(Org::NONE),
            ),
        };
        let mut found = false;
        for kind in [
            "Deployment",
            "ReplicationController",
            "ReplicaSet",
            "StatefulSet",
        ] {
            for r in ra.iter_mut() {
                if r.all_ids()
                    .iter()
                    .any(|id| id.name == name && id.kind == kind)
                {
                    found = true;
                    if let Some(spec) = r.node.map_at(&["spec"]) {
                        // kyaml sets the value of the node there, which keeps its type: a
                        // count written as a string (`replicas: "2"`) stays a string.
                        let value = match (spec.get("replicas"), &count) {
                            (Some(Node::Scalar(Scalar::Str(_), _)), Node::Scalar(_, o)) => {
                                Node::str(count.scalar_text().unwrap_or_default(), *o)
                            }
                            _ => count.clone(),
                        };
                        spec.insert("replicas", value);
                    }
                }
            }
        }
        if !found {
            return Err(kerr(
                k,
                at,
                format!(
                    "resource with name {name} does not match a config with the following GVK [~G_~V_Deployment ~G_~V_ReplicationController ~G_~V_ReplicaSet ~G_~V_StatefulSet]"
                ),
            ));
        }
    }
    Ok(())
}

/// One `images` entry.
struct ImageRule {
    matcher: ImageMatcher,
    new_name: Option<String>,
    new_tag: Option<String>,
    digest: Option<String>,
    org: Org,
}

/// Which images an `images` entry's `name` selects. kustomize puts the name unescaped into
/// the regular expression `^NAME(:TAG)?(@sha256:TAG)?$` (a tag of `[a-zA-Z0-9_.{}-]`), so a
/// `.` in it matches any character but a newline. A name of plain characters and dots, as
/// image names are, is matched directly: compiling the expression for it took a third of a
/// megabyte and more time than matching every container of a 2,000-resource build. Any other
/// name goes through the expression.
enum ImageMatcher {
    /// A name without metacharacters but `.`.
    Dotted(String),
    Regex(Regex),
}

/// kustomize's expression for the images an `images` entry's `name` selects.
fn image_pattern(name: &str) -> String {
    format!("^{name}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$")
}

impl ImageMatcher {
    fn new(name: &str) -> Result<ImageMatcher, regex::Error> {
        if !name
            .chars()
            .any(|c| c != '.' && super::select::is_regex_meta(c))
        {
            return Ok(ImageMatcher::Dotted(name.to_string()));
        }
        Regex::new(&image_pattern(name)).map(ImageMatcher::Regex)
    }

    fn matches(&self, image: &str) -> bool {
        let name = match self {
            ImageMatcher::Regex(re) => return re.is_match(image),
            ImageMatcher::Dotted(name) => name,
        };
        let mut rest = image.chars();
        for n in name.chars() {
            match rest.next() {
                Some(c) if c == n || (n == '.' && c != '\n') => {}
                _ => return false,
            }
        }
        let tag_chars = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.{}-".contains(&b))
        };
        let rest = rest.as_str();
        let (tag, digest) = match rest.find('@') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        (tag.is_empty() || tag.strip_prefix(':').is_some_and(tag_chars))
            && digest.is_none_or(|d| d.strip_prefix("@sha256:").is_some_and(tag_chars))
    }
}

/// Splits an image into name, tag and digest as kustomize does.
fn split_image(image: &str) -> (&str, &str, &str) {
    let slash = image.find('/').filter(|i| *i > 0).unwrap_or(0);
    let search = &image[slash..];
    let at = search.find('@');
    let colon = search.find(':');
    match (colon, at) {
        (None, None) => (image, "", ""),
        (c, Some(d)) if c.is_none_or(|c| d < c) => {
            (&image[..slash + d], "", &image[slash + d + 1..])
        }
        (Some(c), Some(d)) => (
            &image[..slash + c],
            &image[slash + c + 1..slash + d],
            &image[slash + d + 1..],
        ),
        (Some(c), None) => (&image[..slash + c], &image[slash + c + 1..], ""),
        (None, Some(_)) => unreachable!("handled above"),
    }
}

impl ImageRule {
    fn apply(&self, value: &str) -> Option<String> {
        if !self.matcher.matches(value) {
            return None;
        }
        let (name, tag, digest) = split_image(value);
        let mut name = name.to_string();
        let (mut tag, mut digest) = (tag.to_string(), digest.to_string());
        if let Some(n) = &self.new_name {
            name = n.clone();
        }
        match (&self.new_tag, &self.digest) {
            (Some(t), Some(d)) => {
                tag = t.clone();
                digest = d.clone();
            }
            (Some(t), None) => {
                tag = t.clone();
                digest.clear();
            }
            (None, Some(d)) => {
                tag.clear();
                digest = d.clone();
            }
            (None, None) => {}
        }
        if !tag.is_empty() {
            name = format!("{name}:{tag}");
        }
        if !digest.is_empty() {
            name = format!("{name}@{digest}");
        }
        Some(name)
    }
}

/// Updates `image` of every element of every `containers`/`initContainers` list.
fn walk_images(n: &mut Node, rule: &ImageRule) {
    match n {
        Node::Map(m) => {
            for (key, v) in m.iter_mut() {
                if matches!(key.as_str(), "containers" | "initContainers")
                    && let Node::Seq(items) = v
                {
                    for c in items.iter_mut() {
                        if let Some(img) = c.get_mut("image")
                            && let Some(cur) = img.as_str()
                            && let Some(new) = rule.apply(cur)
                        {
                            *img = Node::str(new, rule.org);
                        }
                    }
                }
                walk_images(v, rule);
            }
        }
        Node::Seq(s) => s.iter_mut().for_each(|x| walk_images(x, rule)),
        Node::Scalar(..) => {}
    }
}

/// `images`.
fn images(k: &Kust, ra: &mut [Res]) -> Result<(), KustomizeError> {
    for e in k.maps("images").map_err(|m| kerr(k, None, m))? {
        let at = e.values().find_map(Node::org).unwrap_or(Org::NONE);
        known_fields(e, &["name", "newName", "newTag", "digest", "tagSuffix"])
            .map_err(|m| kerr(k, Some(at), m))?;
        let s = |f: &str| entry_str(k, e, f).filter(|s| !s.value.is_empty());
        let name = s("name").map(|n| n.value).unwrap_or_default();
        // The most specific entry field written is where the new value comes from.
        let org = s("digest")
            .or_else(|| s("newTag"))
            .or_else(|| s("newName"))
            .map_or(at, |x| x.org);
        let matcher = ImageMatcher::new(&name)
            .map_err(|err| kerr(k, Some(at), format!("invalid image name {name:?}: {err}")))?;
        let rule = ImageRule {
            matcher,
            new_name: s("newName").map(|x| x.value),
            new_tag: s("newTag").map(|x| x.value),
            digest: s("digest").map(|x| x.value),
            org,
        };
        plumb_core::parallel::try_each_mut(ra, |_, r| {
            walk_images(&mut r.node, &rule);
            Ok::<(), KustomizeError>(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct match of a name of plain characters and dots is the regular expression's.
    #[test]
    fn image_names_match_as_the_expression_does() {
        use proptest::prelude::*;
        let alphabet = prop::sample::select(vec![
            'a', 'b', '.', ':', '@', '/', '-', '_', '{', '}', 's', 'h', '2', '5', '6', '\n', 'é',
            '+',
        ]);
        let name = prop::collection::vec(
            prop::sample::select(vec!['a', 'b', '.', '/', '-', 'é', ':', '@']),
            0..5,
        );
        // An image is the name with some characters replaced, then a tail: most cases then
        // reach the tag and digest, and a `.` meets every kind of character.
        let case = name.prop_flat_map(move |name| {
            let n = name.len();
            (
                Just(name),
                prop::collection::vec((any::<bool>(), alphabet.clone()), n..=n),
                prop::collection::vec(alphabet.clone(), 0..12),
            )
        });
        let mut runner = proptest::test_runner::TestRunner::new_with_rng(
            proptest::test_runner::Config::with_cases(4096),
            proptest::test_runner::TestRng::deterministic_rng(
                proptest::test_runner::RngAlgorithm::ChaCha,
            ),
        );
        runner
            .run(&case, |(name, swaps, tail)| {
                let image: String = name
                    .iter()
                    .zip(&swaps)
                    .map(|(&n, &(swap, other))| if swap { other } else { n })
                    .chain(tail)
                    .collect();
                let name: String = name.into_iter().collect();
                let direct = ImageMatcher::new(&name).unwrap();
                assert!(matches!(direct, ImageMatcher::Dotted(_)));
                let re = Regex::new(&image_pattern(&name)).unwrap();
                prop_assert_eq!(
                    direct.matches(&image),
                    re.is_match(&image),
                    "{:?} {:?}",
                    name,
                    image
                );
                Ok(())
            })
            .unwrap();
        // The common cases, spelled out.
        let m = ImageMatcher::new("registry.example.com/team/app").unwrap();
        assert!(m.matches("registry.example.com/team/app:1.0.0"));
        assert!(m.matches("registry.example.com/team/app@sha256:ab"));
        assert!(m.matches("registry.example.com/team/app:1@sha256:ab"));
        assert!(m.matches("registryXexample.com/team/app"));
        assert!(!m.matches("registry.example.com/team/app2"));
        assert!(!m.matches("registry.example.com/team/app:1:2"));
        assert!(!m.matches("registry.example.com/team/app@sha512:ab"));
        assert!(matches!(
            ImageMatcher::new("app|web").unwrap(),
            ImageMatcher::Regex(_)
        ));
    }

    #[test]
    fn image_split() {
        assert_eq!(split_image("nginx"), ("nginx", "", ""));
        assert_eq!(split_image("nginx:1.2"), ("nginx", "1.2", ""));
        assert_eq!(split_image("nginx@sha256:ab"), ("nginx", "", "sha256:ab"));
        assert_eq!(
            split_image("reg:5000/a/b:t@sha256:ab"),
            ("reg:5000/a/b", "t", "sha256:ab")
        );
    }
}
