//! Destination clusters, declared as Argo CD declares them: Secrets labelled
//! `argocd.argoproj.io/secret-type: cluster` in the controller's namespace, with `name`,
//! `server`, optional `namespaces` / `clusterResources` / `project`, and `config` (JSON:
//! `bearerToken`, `username` / `password`, `tlsClientConfig`, `execProviderConfig`).
//!
//! [`Clusters::resolve`] turns an Application's `spec.destination` into the one cluster it
//! names — by `server` or by `name` — or an error in Argo CD's words. The cluster plumb runs
//! in is always known as `https://kubernetes.default.svc` (name `in-cluster`); a Secret with
//! that server overrides its name and namespaces. **An unknown destination resolves to
//! nothing**: nothing is ever applied to a cluster that was not named.
//!
//! Credentials never reach `Debug` or `Display` output ([`Sensitive`]).
//!
//! ```
//! use plumb_core::clusters::{Clusters, IN_CLUSTER_SERVER};
//! use plumb_core::project::Destination;
//! let secret = serde_json::json!({
//!     "apiVersion": "v1", "kind": "Secret",
//!     "metadata": {"name": "prod-eu", "namespace": "plumb-system",
//!                  "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
//!     "stringData": {"name": "prod-eu", "server": "https://prod-eu.example:6443",
//!                    "config": "{\"bearerToken\": \"s3cr3t\"}"},
//! });
//! let (clusters, errors) = Clusters::from_secrets([&secret]);
//! assert!(errors.is_empty());
//! let by_name = clusters.resolve(&Destination::new("", "prod-eu", "web")).unwrap();
//! assert_eq!(by_name.server, "https://prod-eu.example:6443");
//! assert!(!format!("{by_name:?}").contains("s3cr3t"));
//! let here = clusters.resolve(&Destination::new(IN_CLUSTER_SERVER, "", "web")).unwrap();
//! assert!(here.is_in_cluster());
//! assert!(clusters.resolve(&Destination::new("https://elsewhere:6443", "", "web")).is_err());
//! ```

use crate::project::Destination;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The label that marks Argo CD's configuration Secrets, and its value for clusters.
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
/// The [`SECRET_TYPE_LABEL`] value of a cluster Secret.
pub const SECRET_TYPE_CLUSTER: &str = "cluster";
/// The cluster the controller runs in.
pub const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";
/// The in-cluster cluster's name, unless a Secret for its server names it otherwise.
pub const IN_CLUSTER_NAME: &str = "in-cluster";

/// A value that must never be printed: `Debug` and `Display` show `<redacted>`.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Sensitive(String);

impl Sensitive {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Sensitive {
        Sensitive(value.into())
    }

    /// The value itself, for the one place that uses it (a connection).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty (not given).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Sensitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Sensitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `config.tlsClientConfig`. `caData`, `certData` and `keyData` are base64 of PEM, as in
/// Argo CD.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TlsClientConfig {
    /// `insecure`: do not verify the server's certificate.
    pub insecure: bool,
    /// `serverName`: the name the server's certificate is verified against (and sent as SNI).
    pub server_name: String,
    /// `caData`: the CA certificates to trust.
    pub ca_data: String,
    /// `certData`: the client certificate.
    pub cert_data: String,
    /// `keyData`: the client certificate's private key.
    pub key_data: Sensitive,
}

/// `config.execProviderConfig`: a client-go credential plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExecProviderConfig {
    /// `command`: the plugin to run.
    pub command: String,
    /// `args`: its arguments.
    pub args: Vec<String>,
    /// `env`: environment variables set for it.
    pub env: BTreeMap<String, String>,
    /// `apiVersion`: the `ExecCredential` version it speaks
    /// (`client.authentication.k8s.io/v1beta1`).
    pub api_version: String,
    /// `installHint`: shown when the command cannot be found.
    pub install_hint: String,
}

/// A cluster Secret's `config`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterConfig {
    /// `bearerToken`: a token to authenticate with (a ServiceAccount's).
    pub bearer_token: Sensitive,
    /// `username`: for basic authentication, with `password`.
    pub username: String,
    /// `password`: for basic authentication, with `username`.
    pub password: Sensitive,
    /// `tlsClientConfig`: how TLS is verified, and client certificates.
    pub tls_client_config: TlsClientConfig,
    /// `execProviderConfig`: a command that provides credentials.
    pub exec_provider_config: Option<ExecProviderConfig>,
    /// `proxyUrl`: the proxy to reach the API server through.
    pub proxy_url: String,
    /// `disableCompression`: ask the API server for uncompressed responses.
    pub disable_compression: bool,
    /// `awsAuthConfig` (EKS IAM): not supported; a Secret with it is refused by name.
    #[serde(skip_serializing)]
    pub aws_auth_config: Option<serde_json::Value>,
}

/// One destination cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The Secret that declares it (`namespace/name`); empty for the implicit in-cluster.
    pub secret: String,
    /// The Secret's `metadata.resourceVersion` (a connection made from it is rebuilt when it
    /// changes); empty for the implicit in-cluster.
    pub resource_version: String,
    /// `name`: how Applications name the cluster (default: `server`).
    pub name: String,
    /// `server`: the API server URL.
    pub server: String,
    /// Namespaces the controller may manage there (empty: all).
    pub namespaces: Vec<String>,
    /// With `namespaces` set: whether cluster-scoped resources may be managed too.
    pub cluster_resources: bool,
    /// The project the cluster is scoped to (`project`), if any.
    pub project: String,
    /// `config`: credentials and TLS settings.
    pub config: ClusterConfig,
}

impl Cluster {
    /// The cluster plumb runs in, as it is known without a Secret.
    pub fn in_cluster() -> Cluster {
        Cluster {
            secret: String::new(),
            resource_version: String::new(),
            name: IN_CLUSTER_NAME.into(),
            server: IN_CLUSTER_SERVER.into(),
            namespaces: Vec::new(),
            cluster_resources: false,
            project: String::new(),
            config: ClusterConfig::default(),
        }
    }

    /// Whether this is the cluster plumb runs in (server [`IN_CLUSTER_SERVER`]).
    pub fn is_in_cluster(&self) -> bool {
        self.server == IN_CLUSTER_SERVER
    }

    /// Whether the controller may manage `namespace` (empty: a cluster-scoped resource)
    /// on this cluster, as the Secret's `namespaces` / `clusterResources` say.
    pub fn manages(&self, namespace: &str) -> bool {
        if self.namespaces.is_empty() {
            return true;
        }
        if namespace.is_empty() {
            return self.cluster_resources;
        }
        self.namespaces.iter().any(|n| n == namespace)
    }

    /// Reads a cluster Secret (`data` base64, or `stringData`).
    pub fn from_secret(secret: &Value) -> Result<Cluster, ClusterSecretError> {
        let id = format!(
            "{}/{}",
            secret
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            secret
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>")
        );
        let err = |field: &str, reason: String| ClusterSecretError {
            secret: id.clone(),
            field: field.to_string(),
            reason,
        };
        let field =
            |key: &str| secret_string(secret, key).map_err(|(field, reason)| err(&field, reason));
        let at = |key: &str| {
            if secret.pointer(&format!("/stringData/{key}")).is_some() {
                format!("stringData.{key}")
            } else {
                format!("data.{key}")
            }
        };
        let server = field("server")?.unwrap_or_default().trim().to_string();
        if server.is_empty() {
            return Err(err(&at("server"), "a cluster Secret needs a server".into()));
        }
        let name = field("name")?.unwrap_or_default().trim().to_string();
        let namespaces = field("namespaces")?
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect();
        let cluster_resources = match field("clusterResources")?.as_deref().map(str::trim) {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(err(
                    &at("clusterResources"),
                    format!("{other:?} is neither true nor false"),
                ));
            }
        };
        let project = field("project")?.unwrap_or_default();
        let config = match field("config")? {
            None => ClusterConfig::default(),
            Some(text) if text.trim().is_empty() => ClusterConfig::default(),
            // The error names line and column, never the text (it holds credentials).
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                err(
                    &at("config"),
                    format!(
                        "invalid JSON at line {} column {}: {}",
                        e.line(),
                        e.column(),
                        json_error_kind(&e)
                    ),
                )
            })?,
        };
        if config
            .aws_auth_config
            .as_ref()
            .is_some_and(|v| !v.is_null())
        {
            return Err(err(
                &at("config"),
                "awsAuthConfig (EKS IAM authentication) is not supported; use bearerToken".into(),
            ));
        }
        Ok(Cluster {
            secret: id,
            resource_version: secret
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            name: if name.is_empty() {
                server.clone()
            } else {
                name
            },
            server,
            namespaces,
            cluster_resources,
            project,
            config,
        })
    }
}

/// What kind of JSON error, without serde's message (which can quote the input).
fn json_error_kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "a field has the wrong type",
        serde_json::error::Category::Eof => "unexpected end",
    }
}

/// A cluster Secret plumb cannot read: the Secret and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cluster Secret {secret}: {field}: {reason}")]
pub struct ClusterSecretError {
    /// The Secret, as `namespace/name`.
    pub secret: String,
    /// The field, as `data.server` or `stringData.config`.
    pub field: String,
    /// What is wrong with it (never its value).
    pub reason: String,
}

/// Why a destination names no cluster (the Application's `InvalidSpecError` condition).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// Neither `server` nor `name` is given.
    #[error("application destination spec is invalid: a destination needs a server or a name")]
    Missing,
    /// Both `server` and `name` are given.
    #[error(
        "application destination spec is invalid: application destination can't have both name and server defined: {name} {server}"
    )]
    Both {
        /// The `name` given.
        name: String,
        /// The `server` given.
        server: String,
    },
    /// No cluster has the `name` given.
    #[error(
        "application destination spec is invalid: unable to find destination server: there are no clusters with this name: {0}"
    )]
    NoSuchName(String),
    /// More than one cluster has the `name` given: their servers.
    #[error(
        "application destination spec is invalid: unable to find destination server: there are {} clusters with the same name: [{}]", .0.len(), .0.join(" ")
    )]
    AmbiguousName(Vec<String>),
    /// No cluster has the `server` given.
    #[error("application destination spec is invalid: cluster '{0}' has not been configured")]
    NoSuchServer(String),
}

/// A string of a Secret: `stringData.KEY` as written, else `data.KEY` decoded from base64;
/// `None` when neither is there. An error is the field (`data.KEY`) and why.
pub fn secret_string(secret: &Value, key: &str) -> Result<Option<String>, (String, String)> {
    if let Some(v) = secret.pointer(&format!("/stringData/{key}")) {
        return match v.as_str() {
            Some(s) => Ok(Some(s.to_string())),
            None => Err((format!("stringData.{key}"), "not a string".into())),
        };
    }
    let Some(v) = secret.pointer(&format!("/data/{key}")) else {
        return Ok(None);
    };
    let at = || format!("data.{key}");
    let text = v
        .as_str()
        .ok_or_else(|| (at(), "not a string".to_string()))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| (at(), format!("invalid base64: {e}")))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| (at(), "not UTF-8".to_string()))
}

/// The destination clusters plumb knows.
#[derive(Debug, Clone, Default)]
pub struct Clusters {
    clusters: Vec<Cluster>,
}

impl Clusters {
    /// The clusters the given Secrets declare, plus the implicit in-cluster one. Secrets
    /// that are not cluster Secrets are skipped; unreadable ones are reported and left out
    /// (the others still count).
    pub fn from_secrets<'a>(
        secrets: impl IntoIterator<Item = &'a Value>,
    ) -> (Clusters, Vec<ClusterSecretError>) {
        let mut clusters = Vec::new();
        let mut errors = Vec::new();
        for s in secrets {
            let label = s
                .pointer(&format!(
                    "/metadata/labels/{}",
                    crate::pointer::escape_token(SECRET_TYPE_LABEL)
                ))
                .and_then(Value::as_str);
            if label != Some(SECRET_TYPE_CLUSTER) {
                continue;
            }
            match Cluster::from_secret(s) {
                Ok(c) => clusters.push(c),
                Err(e) => errors.push(e),
            }
        }
        if !clusters.iter().any(Cluster::is_in_cluster) {
            clusters.push(Cluster::in_cluster());
        }
        clusters.sort_by(|a, b| (&a.server, &a.secret).cmp(&(&b.server, &b.secret)));
        (Clusters { clusters }, errors)
    }

    /// Only the cluster plumb runs in (no Secrets read).
    pub fn in_cluster_only() -> Clusters {
        Clusters {
            clusters: vec![Cluster::in_cluster()],
        }
    }

    /// Every cluster, ordered by server.
    pub fn iter(&self) -> impl Iterator<Item = &Cluster> {
        self.clusters.iter()
    }

    /// The one cluster `dest` names, as Argo CD resolves it: by name (unique), else by
    /// server; both given is an error.
    pub fn resolve(&self, dest: &Destination) -> Result<&Cluster, DestinationError> {
        match (dest.server.trim(), dest.name.trim()) {
            ("", "") => Err(DestinationError::Missing),
            (server, name) if !server.is_empty() && !name.is_empty() => {
                Err(DestinationError::Both {
                    name: name.into(),
                    server: server.into(),
                })
            }
            ("", name) => {
                let found: Vec<&Cluster> =
                    self.clusters.iter().filter(|c| c.name == name).collect();
                match found.as_slice() {
                    [one] => Ok(one),
                    [] => Err(DestinationError::NoSuchName(name.into())),
                    many => Err(DestinationError::AmbiguousName(
                        many.iter().map(|c| c.server.clone()).collect(),
                    )),
                }
            }
            (server, _) => {
                let server = server.trim_end_matches('/');
                self.clusters
                    .iter()
                    .find(|c| c.server.trim_end_matches('/') == server)
                    .ok_or_else(|| DestinationError::NoSuchServer(server.into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(name: &str, string_data: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "plumb-system",
                         "labels": {SECRET_TYPE_LABEL: "cluster"}},
            "stringData": string_data,
        })
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn aws_auth_is_refused_by_name_and_the_resource_version_kept() {
        let e = Cluster::from_secret(&secret(
            "eks",
            json!({"server": "https://eks.example", "config":
                "{\"awsAuthConfig\": {\"clusterName\": \"prod\"}}"}),
        ))
        .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "cluster Secret plumb-system/eks: stringData.config: awsAuthConfig (EKS IAM authentication) is not supported; use bearerToken"
        );
        let mut s = secret("k", json!({"server": "https://k.example"}));
        s["metadata"]["resourceVersion"] = json!("42");
        assert_eq!(
            Cluster::from_secret(&s).expect("reads").resource_version,
            "42"
        );
    }

    #[test]
    fn reads_every_field_from_data_and_string_data() {
        let config = json!({
            "bearerToken": "tok", "username": "u", "password": "pw",
            "tlsClientConfig": {"insecure": false, "serverName": "api", "caData": "Q0E=",
                                "certData": "Q0VSVA==", "keyData": "S0VZ"},
            "execProviderConfig": {"command": "aws", "args": ["eks", "get-token"],
                                   "env": {"AWS_PROFILE": "prod"},
                                   "apiVersion": "client.authentication.k8s.io/v1beta1"},
        });
        let s = json!({
            "metadata": {"name": "eu", "namespace": "plumb-system",
                         "labels": {SECRET_TYPE_LABEL: "cluster"}},
            "data": {"name": b64("prod-eu"), "server": b64("https://eu:6443"),
                     "namespaces": b64("a, b"), "clusterResources": b64("true"),
                     "project": b64("team"), "config": b64(&config.to_string())},
        });
        let c = Cluster::from_secret(&s).unwrap();
        assert_eq!(c.secret, "plumb-system/eu");
        assert_eq!(
            (c.name.as_str(), c.server.as_str()),
            ("prod-eu", "https://eu:6443")
        );
        assert_eq!(c.namespaces, ["a", "b"]);
        assert!(c.cluster_resources && c.manages("") && c.manages("a") && !c.manages("c"));
        assert_eq!(c.project, "team");
        assert_eq!(c.config.bearer_token.expose(), "tok");
        assert_eq!(c.config.password.expose(), "pw");
        assert_eq!(c.config.tls_client_config.server_name, "api");
        assert_eq!(c.config.tls_client_config.key_data.expose(), "S0VZ");
        let exec = c.config.exec_provider_config.as_ref().unwrap();
        assert_eq!(exec.args, ["eks", "get-token"]);
        let shown = format!("{c:?}");
        for secret in ["tok", "pw", "S0VZ"] {
            assert!(!shown.contains(&format!("\"{secret}\"")), "{shown}");
        }
    }

    #[test]
    fn bad_secrets_name_the_field_and_never_the_credentials() {
        let e = Cluster::from_secret(&secret(
            "bad",
            json!({"server": "https://x", "config": "{\"bearerToken\": \"hunter2\",,}"}),
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster Secret plumb-system/bad: stringData.config: invalid JSON at line 1 column 27: syntax error"
        );
        let e = Cluster::from_secret(&secret(
            "t",
            json!({"server": "https://x", "config": "{\"bearerToken\": 42}"}),
        ))
        .unwrap_err();
        assert!(e.to_string().ends_with("a field has the wrong type"), "{e}");
        let e = Cluster::from_secret(&secret("s", json!({"name": "x"}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cluster Secret plumb-system/s: data.server: a cluster Secret needs a server"
        );
        let e = Cluster::from_secret(&json!({"metadata": {"name": "d", "namespace": "n"},
            "data": {"server": "!!"}}))
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cluster Secret n/d: data.server: invalid base64")
        );
        let e = Cluster::from_secret(&secret(
            "c",
            json!({"server": "https://x", "clusterResources": "yes"}),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("stringData.clusterResources"));
    }

    #[test]
    fn resolves_by_name_or_server_as_argo_cd() {
        let a = secret("a", json!({"name": "prod", "server": "https://a:6443"}));
        let b = secret("b", json!({"name": "dup", "server": "https://b:6443"}));
        let c = secret("c", json!({"name": "dup", "server": "https://c:6443"}));
        let broken = secret("d", json!({"name": "broken"}));
        let other =
            json!({"metadata": {"name": "repo", "labels": {SECRET_TYPE_LABEL: "repository"}}});
        let (clusters, errors) = Clusters::from_secrets([&a, &b, &c, &broken, &other]);
        assert_eq!(errors.len(), 1);
        let d = |server: &str, name: &str| Destination::new(server, name, "ns");
        assert_eq!(
            clusters.resolve(&d("", "prod")).unwrap().server,
            "https://a:6443"
        );
        assert_eq!(
            clusters.resolve(&d("https://a:6443/", "")).unwrap().name,
            "prod"
        );
        assert!(
            clusters
                .resolve(&d("", IN_CLUSTER_NAME))
                .unwrap()
                .is_in_cluster()
        );
        assert!(
            clusters
                .resolve(&d(IN_CLUSTER_SERVER, ""))
                .unwrap()
                .is_in_cluster()
        );
        let err =
            |server: &str, name: &str| clusters.resolve(&d(server, name)).unwrap_err().to_string();
        assert_eq!(
            err("", "nope"),
            "application destination spec is invalid: unable to find destination server: there are no clusters with this name: nope"
        );
        assert_eq!(
            err("", "dup"),
            "application destination spec is invalid: unable to find destination server: there are 2 clusters with the same name: [https://b:6443 https://c:6443]"
        );
        assert_eq!(
            err("https://prod-eu.example:6443", ""),
            "application destination spec is invalid: cluster 'https://prod-eu.example:6443' has not been configured"
        );
        assert!(err("https://a:6443", "prod").contains("can't have both name and server"));
        assert!(err("", "").contains("needs a server or a name"));
    }

    #[test]
    fn a_secret_for_the_in_cluster_server_replaces_the_implicit_one() {
        let s = secret(
            "local",
            json!({"name": "mgmt", "server": IN_CLUSTER_SERVER, "namespaces": "apps"}),
        );
        let (clusters, _) = Clusters::from_secrets([&s]);
        assert_eq!(clusters.iter().count(), 1);
        let c = clusters
            .resolve(&Destination::new("", "mgmt", "apps"))
            .unwrap();
        assert!(c.is_in_cluster() && c.manages("apps") && !c.manages("kube-system"));
        assert!(
            clusters
                .resolve(&Destination::new("", IN_CLUSTER_NAME, "x"))
                .is_err()
        );
    }
}
