//! kustomize's field specs (which field of which kinds a transformer touches) and the
//! walk that finds (and, with `create`, makes) those fields.

use super::resource::{FastMap, IdRef};
use super::tree::{Map, Node, Org, Scalar};
use std::sync::OnceLock;

/// One field spec: a slash-separated path (`\/` escapes a slash, `x[]` marks a list) for
/// the kinds its group/version/kind select (empty parts select everything).
#[derive(Clone, Debug)]
pub struct FieldSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub path: String,
    pub create: bool,
    /// `path` split once, on first use.
    segs: OnceLock<Vec<(String, bool)>>,
}

impl FieldSpec {
    pub fn new(group: &str, version: &str, kind: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            path: path.into(),
            create,
            segs: OnceLock::new(),
        }
    }

    pub fn selects(&self, id: IdRef) -> bool {
        id.gvk_selected(&self.group, &self.version, &self.kind)
    }

    /// The path's segments: (field name, marked as list).
    pub fn segments(&self) -> &[(String, bool)] {
        self.segs.get_or_init(|| split_path(&self.path))
    }
}

/// A group, version and kind.
pub type Gvk<'a> = (&'a str, &'a str, &'a str);

/// Items grouped by kind: for each key of `keys` (an item's group, version and kind), the
/// index of its kind's value in the list returned beside, `make` called once per kind (with
/// an id of that kind, no name and no namespace), in the order kinds first come. What
/// depends on the kind alone (the field specs that select it) is worked out once per kind,
/// not once per object.
pub fn by_kind<'a, T>(
    keys: impl Iterator<Item = Gvk<'a>>,
    mut make: impl FnMut(IdRef<'a>) -> T,
) -> (Vec<usize>, Vec<T>) {
    let mut seen: FastMap<Gvk<'a>, usize> = FastMap::default();
    let mut values = Vec::new();
    let of = keys
        .map(|key| {
            *seen.entry(key).or_insert_with(|| {
                let (group, version, kind) = key;
                values.push(make(IdRef {
                    group,
                    version,
                    kind,
                    name: "",
                    namespace: "",
                }));
                values.len() - 1
            })
        })
        .collect();
    (of, values)
}

pub fn split_path(path: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                cur.push('/');
                chars.next();
            }
            '/' => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| match s.strip_suffix("[]") {
            Some(n) => (n.to_string(), true),
            None => (s, false),
        })
        .collect()
}

/// The kind of node `create` makes at the end of a path.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    Map,
    Scalar,
}

/// Walks `node` along `segs`, calling `set` on every node found at the end. Lists on the
/// way are entered element by element; missing fields are created when `create` is set
/// (never inside a field marked as a list).
pub fn walk(
    node: &mut Node,
    segs: &[(String, bool)],
    create: bool,
    leaf: Leaf,
    set: &mut dyn FnMut(&mut Node) -> Result<(), String>,
) -> Result<(), String> {
    let Some(((field, is_seq), rest)) = segs.split_first() else {
        return set(node);
    };
    match node {
        Node::Scalar(Scalar::Null, _) => Ok(()),
        Node::Seq(items) => {
            for it in items {
                walk(it, segs, create, leaf, set)?;
            }
            Ok(())
        }
        Node::Map(m) => {
            if !create || *is_seq {
                match m.get_mut(field) {
                    Some(child) => walk(child, rest, create, leaf, set),
                    None => Ok(()),
                }
            } else {
                let make = || {
                    if rest.is_empty() && leaf == Leaf::Scalar {
                        Node::str("", Org::NONE)
                    } else {
                        Node::Map(Map::new())
                    }
                };
                let child = m.get_or_insert_with(field, make);
                if child.is_null() {
                    *child = make();
                }
                walk(child, rest, create, leaf, set)
            }
        }
        Node::Scalar(..) => Err(format!(
            "expected sequence or mapping node at {field:?} of path"
        )),
    }
}

type Row = (&'static str, &'static str, &'static str, &'static str, bool);

/// `commonLabels` (and `labels` with `includeSelectors`) field specs.
const COMMON_LABELS: &[Row] = &[
    ("", "", "", "metadata/labels", true),
    ("", "v1", "Service", "spec/selector", true),
    ("", "v1", "ReplicationController", "spec/selector", true),
    (
        "",
        "v1",
        "ReplicationController",
        "spec/template/metadata/labels",
        true,
    ),
    ("", "", "Deployment", "spec/selector/matchLabels", true),
    ("", "", "Deployment", "spec/template/metadata/labels", true),
    (
        "apps",
        "",
        "Deployment",
        "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "Deployment",
        "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "Deployment",
        "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "Deployment",
        "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "Deployment",
        "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels",
        false,
    ),
    (
        "extensions",
        "v1beta1",
        "ReplicaSet",
        "spec/selector/matchLabels",
        false,
    ),
    ("", "", "ReplicaSet", "spec/selector/matchLabels", true),
    ("", "", "ReplicaSet", "spec/template/metadata/labels", true),
    (
        "extensions",
        "v1beta1",
        "DaemonSet",
        "spec/selector/matchLabels",
        false,
    ),
    ("", "", "DaemonSet", "spec/selector/matchLabels", true),
    ("", "", "DaemonSet", "spec/template/metadata/labels", true),
    (
        "apps",
        "v1beta1",
        "StatefulSet",
        "spec/selector/matchLabels",
        false,
    ),
    ("apps", "", "StatefulSet", "spec/selector/matchLabels", true),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/template/metadata/labels",
        true,
    ),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels",
        false,
    ),
    (
        "apps",
        "",
        "StatefulSet",
        "spec/volumeClaimTemplates[]/metadata/labels",
        true,
    ),
    ("batch", "", "Job", "spec/selector/matchLabels", false),
    ("batch", "", "Job", "spec/template/metadata/labels", true),
    (
        "batch",
        "",
        "CronJob",
        "spec/jobTemplate/spec/selector/matchLabels",
        false,
    ),
    (
        "batch",
        "",
        "CronJob",
        "spec/jobTemplate/metadata/labels",
        true,
    ),
    (
        "batch",
        "",
        "CronJob",
        "spec/jobTemplate/spec/template/metadata/labels",
        true,
    ),
    (
        "policy",
        "",
        "PodDisruptionBudget",
        "spec/selector/matchLabels",
        false,
    ),
    (
        "networking.k8s.io",
        "",
        "NetworkPolicy",
        "spec/podSelector/matchLabels",
        false,
    ),
    (
        "networking.k8s.io",
        "",
        "NetworkPolicy",
        "spec/ingress/from/podSelector/matchLabels",
        false,
    ),
    (
        "networking.k8s.io",
        "",
        "NetworkPolicy",
        "spec/egress/to/podSelector/matchLabels",
        false,
    ),
];

/// `commonAnnotations` field specs.
const COMMON_ANNOTATIONS: &[Row] = &[
    ("", "", "", "metadata/annotations", true),
    (
        "",
        "v1",
        "ReplicationController",
        "spec/template/metadata/annotations",
        true,
    ),
    (
        "",
        "",
        "Deployment",
        "spec/template/metadata/annotations",
        true,
    ),
    (
        "",
        "",
        "ReplicaSet",
        "spec/template/metadata/annotations",
        true,
    ),
    (
        "",
        "",
        "DaemonSet",
        "spec/template/metadata/annotations",
        true,
    ),
    (
        "",
        "",
        "StatefulSet",
        "spec/template/metadata/annotations",
        true,
    ),
    (
        "batch",
        "",
        "Job",
        "spec/template/metadata/annotations",
        true,
    ),
    (
        "batch",
        "",
        "CronJob",
        "spec/jobTemplate/metadata/annotations",
        true,
    ),
    (
        "batch",
        "",
        "CronJob",
        "spec/jobTemplate/spec/template/metadata/annotations",
        true,
    ),
];

fn rows(r: &[Row]) -> Vec<FieldSpec> {
    r.iter()
        .map(|(g, v, k, p, c)| FieldSpec::new(g, v, k, p, *c))
        .collect()
}

pub fn common_labels() -> &'static [FieldSpec] {
    static F: OnceLock<Vec<FieldSpec>> = OnceLock::new();
    F.get_or_init(|| rows(COMMON_LABELS))
}

/// The template-only label specs (`labels` with `includeTemplates`).
pub fn template_labels() -> &'static [FieldSpec] {
    static F: OnceLock<Vec<FieldSpec>> = OnceLock::new();
    F.get_or_init(|| {
        rows(COMMON_LABELS)
            .into_iter()
            .filter(|f| f.create && f.path != "metadata/labels" && f.path.contains("emplate"))
            .collect()
    })
}

pub fn common_annotations() -> &'static [FieldSpec] {
    static F: OnceLock<Vec<FieldSpec>> = OnceLock::new();
    F.get_or_init(|| rows(COMMON_ANNOTATIONS))
}

/// One entry of kustomize's name reference table: fields of `referrer` kinds holding
/// the name of a `target` kind.
#[derive(Clone, Debug)]
pub struct NameRef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub referrers: Vec<FieldSpec>,
}

/// The referrer paths shared by the pod-template kinds for a referenced kind.
fn pod_paths(specs: &mut Vec<FieldSpec>, leafs: &[&str], kinds: &[(&str, &str)]) {
    for (kind, prefix) in kinds {
        for leaf in leafs {
            let path = format!("{prefix}{leaf}");
            let version = if *kind == "Pod" { "v1" } else { "" };
            specs.push(FieldSpec::new("", version, kind, &path, false));
        }
    }
}

/// The kinds whose pod spec may name ConfigMaps and Secrets, and where that spec is
/// (a `PodTemplate` holds it under `template`, without `spec` around it).
const POD_KINDS: &[(&str, &str)] = &[
    ("Pod", "spec/"),
    ("PodTemplate", "template/spec/"),
    ("Deployment", "spec/template/spec/"),
    ("ReplicaSet", "spec/template/spec/"),
    ("DaemonSet", "spec/template/spec/"),
    ("StatefulSet", "spec/template/spec/"),
    ("Job", "spec/template/spec/"),
    ("CronJob", "spec/jobTemplate/spec/template/spec/"),
];

/// kustomize's default name reference table (behaviour facts, in kustomize's order).
pub fn name_refs() -> &'static [NameRef] {
    static T: OnceLock<Vec<NameRef>> = OnceLock::new();
    T.get_or_init(|| {
        let hpa = |kind: &'static str| NameRef {
            group: String::new(),
            version: String::new(),
            kind: kind.into(),
            referrers: vec![FieldSpec::new(
                "",
                "",
                "HorizontalPodAutoscaler",
                "spec/scaleTargetRef/name",
                false,
            )],
        };
        let mut cm = Vec::new();
        pod_paths(
            &mut cm,
            &[
                "volumes/configMap/name",
                "containers/env/valueFrom/configMapKeyRef/name",
                "initContainers/env/valueFrom/configMapKeyRef/name",
                "containers/envFrom/configMapRef/name",
                "initContainers/envFrom/configMapRef/name",
                "volumes/projected/sources/configMap/name",
            ],
            POD_KINDS,
        );
        for (k, p, g, v) in [
            ("Node", "spec/configSource/configMap", "", ""),
            ("Role", "rules/resourceNames", "", ""),
            ("ClusterRole", "rules/resourceNames", "", ""),
            (
                "Ingress",
                "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
                "",
                "",
            ),
        ] {
            // (A Knative Service's ConfigMap references are not in kustomize's table,
            // unlike its `secretKeyRef`: kubectl leaves them unchanged.)
            cm.push(FieldSpec::new(g, v, k, p, false));
        }
        let mut secret = Vec::new();
        pod_paths(
            &mut secret,
            &[
                "volumes/secret/secretName",
                "containers/env/valueFrom/secretKeyRef/name",
                "initContainers/env/valueFrom/secretKeyRef/name",
                "containers/envFrom/secretRef/name",
                "initContainers/envFrom/secretRef/name",
                "imagePullSecrets/name",
                "volumes/projected/sources/secret/name",
            ],
            POD_KINDS,
        );
        for (k, p, g, v) in [
            ("Ingress", "spec/tls/secretName", "", ""),
            (
                "Ingress",
                "metadata/annotations/ingress.kubernetes.io\\/auth-secret",
                "",
                "",
            ),
            (
                "Ingress",
                "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
                "",
                "",
            ),
            (
                "Ingress",
                "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
                "",
                "",
            ),
            ("ServiceAccount", "imagePullSecrets/name", "", ""),
            ("StorageClass", "parameters/secretName", "", ""),
            ("StorageClass", "parameters/adminSecretName", "", ""),
            ("StorageClass", "parameters/userSecretName", "", ""),
            ("StorageClass", "parameters/secretRef", "", ""),
            ("Role", "rules/resourceNames", "", ""),
            ("ClusterRole", "rules/resourceNames", "", ""),
            (
                "Service",
                "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
                "serving.knative.dev",
                "v1",
            ),
            ("PersistentVolume", "spec/azureFile/secretName", "", ""),
        ] {
            secret.push(FieldSpec::new(g, v, k, p, false));
        }
        let specs = |rows: &[(&str, &str, &str)]| -> Vec<FieldSpec> {
            rows.iter()
                .map(|(k, p, g)| FieldSpec::new(g, "", k, p, false))
                .collect()
        };
        let workload_paths = |leaf: &str| -> Vec<FieldSpec> {
            [
                ("Pod", "spec/"),
                ("StatefulSet", "spec/template/spec/"),
                ("Deployment", "spec/template/spec/"),
                ("ReplicationController", "spec/template/spec/"),
                ("CronJob", "spec/jobTemplate/spec/template/spec/"),
                ("Job", "spec/template/spec/"),
                ("DaemonSet", "spec/template/spec/"),
            ]
            .iter()
            .map(|(k, p)| FieldSpec::new("", "", k, &format!("{p}{leaf}"), false))
            .collect()
        };
        let mut sa = specs(&[
            ("RoleBinding", "subjects", "rbac.authorization.k8s.io"),
            (
                "ClusterRoleBinding",
                "subjects",
                "rbac.authorization.k8s.io",
            ),
        ]);
        sa.extend(workload_paths("serviceAccountName"));
        let mut pvc = workload_paths("volumes/persistentVolumeClaim/claimName");
        pvc.retain(|_| true);
        vec![
            hpa("Deployment"),
            hpa("ReplicationController"),
            hpa("ReplicaSet"),
            hpa("StatefulSet"),
            NameRef {
                group: "".into(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                referrers: cm,
            },
            NameRef {
                group: "".into(),
                version: "v1".into(),
                kind: "Secret".into(),
                referrers: secret,
            },
            NameRef {
                group: "".into(),
                version: "v1".into(),
                kind: "Service".into(),
                referrers: specs(&[
                    ("StatefulSet", "spec/serviceName", "apps"),
                    ("Ingress", "spec/rules/http/paths/backend/serviceName", ""),
                    ("Ingress", "spec/backend/serviceName", ""),
                    ("Ingress", "spec/rules/http/paths/backend/service/name", ""),
                    ("Ingress", "spec/defaultBackend/service/name", ""),
                    ("APIService", "spec/service/name", "apiregistration.k8s.io"),
                    (
                        "ValidatingWebhookConfiguration",
                        "webhooks/clientConfig/service",
                        "admissionregistration.k8s.io",
                    ),
                    (
                        "MutatingWebhookConfiguration",
                        "webhooks/clientConfig/service",
                        "admissionregistration.k8s.io",
                    ),
                ]),
            },
            NameRef {
                group: "rbac.authorization.k8s.io".into(),
                version: "".into(),
                kind: "Role".into(),
                referrers: specs(&[("RoleBinding", "roleRef/name", "rbac.authorization.k8s.io")]),
            },
            NameRef {
                group: "rbac.authorization.k8s.io".into(),
                version: "".into(),
                kind: "ClusterRole".into(),
                referrers: specs(&[
                    ("RoleBinding", "roleRef/name", "rbac.authorization.k8s.io"),
                    (
                        "ClusterRoleBinding",
                        "roleRef/name",
                        "rbac.authorization.k8s.io",
                    ),
                ]),
            },
            NameRef {
                group: "".into(),
                version: "v1".into(),
                kind: "ServiceAccount".into(),
                referrers: sa,
            },
            NameRef {
                group: "".into(),
                version: "v1".into(),
                kind: "PersistentVolumeClaim".into(),
                referrers: pvc,
            },
            NameRef {
                group: "".into(),
                version: "v1".into(),
                kind: "PersistentVolume".into(),
                referrers: specs(&[
                    ("PersistentVolumeClaim", "spec/volumeName", ""),
                    ("ClusterRole", "rules/resourceNames", ""),
                ]),
            },
            NameRef {
                group: "storage.k8s.io".into(),
                version: "v1".into(),
                kind: "StorageClass".into(),
                referrers: specs(&[
                    ("PersistentVolume", "spec/storageClassName", ""),
                    ("PersistentVolumeClaim", "spec/storageClassName", ""),
                    (
                        "StatefulSet",
                        "spec/volumeClaimTemplates/spec/storageClassName",
                        "",
                    ),
                ]),
            },
            NameRef {
                group: "scheduling.k8s.io".into(),
                version: "v1".into(),
                kind: "PriorityClass".into(),
                referrers: workload_paths("priorityClassName"),
            },
            NameRef {
                group: "networking.k8s.io/v1".into(),
                version: "v1".into(),
                kind: "IngressClass".into(),
                referrers: specs(&[("Ingress", "spec/ingressClassName", "")]),
            },
            NameRef {
                group: "admissionregistration.k8s.io".into(),
                version: "".into(),
                kind: "ValidatingAdmissionPolicy".into(),
                referrers: specs(&[(
                    "ValidatingAdmissionPolicyBinding",
                    "spec/policyName",
                    "admissionregistration.k8s.io",
                )]),
            },
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_with_escapes_and_list_marks() {
        assert_eq!(
            split_path("metadata/annotations/a\\/b"),
            vec![
                ("metadata".to_string(), false),
                ("annotations".to_string(), false),
                ("a/b".to_string(), false)
            ]
        );
        assert_eq!(
            split_path("subjects[]/namespace")[0],
            ("subjects".to_string(), true)
        );
    }

    #[test]
    fn template_labels_are_the_template_paths() {
        let t = template_labels();
        assert!(
            t.iter()
                .any(|f| f.path == "spec/jobTemplate/metadata/labels")
        );
        assert!(
            t.iter()
                .any(|f| f.path.starts_with("spec/volumeClaimTemplates"))
        );
        assert!(!t.iter().any(|f| f.path.contains("selector")));
    }

    #[test]
    fn items_are_grouped_by_kind_each_kind_worked_out_once() {
        let keys = [
            ("apps", "v1", "Deployment"),
            ("", "v1", "Service"),
            ("apps", "v1", "Deployment"),
            ("apps", "v2", "Deployment"),
        ];
        let mut made = Vec::new();
        let (of, values) = super::by_kind(keys.into_iter(), |id| {
            made.push((id.group, id.version, id.kind));
            id.kind.len()
        });
        assert_eq!(of, vec![0, 1, 0, 2]);
        assert_eq!(values, vec![10, 7, 10]);
        assert_eq!(made, vec![keys[0], keys[1], keys[3]]);
    }
}
