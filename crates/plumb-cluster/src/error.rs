//! [`ClusterError`]: every failure of this crate, each printable as one line.
//!
//! Errors from the Kubernetes client are translated here, with the context of
//! the request that failed (verb, resource, namespace), so callers never see a
//! `kube::Error` and never have to parse a server `Status` themselves.
//!
//! A credential plugin's failure (`execProviderConfig`, a kubeconfig's `exec`) is said as its
//! exit status only (`credential_plugin_failure`): kube's own message carries the command with
//! its environment and the plugin's output, any of which may hold a credential.

use std::error::Error as _;

/// The result type of this crate.
pub type Result<T, E = ClusterError> = std::result::Result<T, E>;

/// What went wrong talking to (or getting ready to talk to) a cluster.
///
/// `Display` is always a single line (newlines from servers or libraries are
/// folded into spaces), so the CLI can print it after `error:` as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// The API server could not be reached (connection refused, DNS, TLS
    /// handshake, timeout).
    #[error("cannot reach the API server at {server}: {reason}")]
    Unreachable { server: String, reason: String },

    /// The server answered 403. `namespace` is empty for cluster-scope requests.
    #[error("{}", forbidden_message(.user, .verb, .resource, .namespace))]
    Forbidden {
        /// The user the server named in its answer, when it did.
        user: Option<String>,
        verb: String,
        /// `plural` for the core group, `plural.group` otherwise
        /// (`deployments.apps`), with `/subresource` when there is one.
        resource: String,
        namespace: String,
    },

    /// The server does not serve this kind (for a custom resource: its CRD is
    /// not installed).
    #[error("{}", unknown_kind_message(.group, .kind))]
    UnknownKind { group: String, kind: String },

    /// The kubeconfig could not be read or used (missing file, bad YAML,
    /// missing context, cluster or user, unreadable certificate).
    #[error("kubeconfig {file}: {reason}")]
    Kubeconfig { file: String, reason: String },

    /// Any other answer from the server that is not a success.
    #[error("API error {code}: {message}")]
    Api { code: u16, message: String },

    /// An object handed to this crate cannot be sent (no apiVersion, kind or name).
    #[error("invalid object: {reason}")]
    InvalidObject { reason: String },

    /// The server answered something this crate could not read.
    #[error("unexpected answer from the API server: {reason}")]
    Protocol { reason: String },

    /// Writing a snapshot failed.
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
}

fn forbidden_message(user: &Option<String>, verb: &str, resource: &str, namespace: &str) -> String {
    let who = match user {
        Some(u) => format!("user \"{u}\""),
        None => "the current user".to_string(),
    };
    let scope = if namespace.is_empty() {
        "at cluster scope".to_string()
    } else {
        format!("in namespace \"{namespace}\"")
    };
    format!("forbidden: {who} cannot {verb} {resource} {scope}")
}

fn unknown_kind_message(group: &str, kind: &str) -> String {
    if group.is_empty() {
        format!("the server has no kind {kind} in the core API group")
    } else {
        format!(
            "the server has no kind {kind} in API group {group} (is its CustomResourceDefinition installed?)"
        )
    }
}

/// Folds a message onto one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The request a client error happened in: enough to name a 403 precisely.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext<'a> {
    /// The server URL (for `Unreachable`).
    pub server: &'a str,
    pub verb: &'static str,
    /// As in [`ClusterError::Forbidden::resource`].
    pub resource: String,
    /// Empty for cluster scope.
    pub namespace: String,
}

/// The parts of a 403 message: `deployments.apps "web" is forbidden: User "bob"
/// cannot patch resource "deployments" in API group "apps" in the namespace "prod"`
/// (or `... at the cluster scope`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ForbiddenParts {
    pub user: Option<String>,
    pub verb: Option<String>,
    pub resource: Option<String>,
    pub group: Option<String>,
    pub namespace: Option<String>,
}

/// The text between `after` and the next `"` (for `User "bob"`-like phrases).
fn quoted_after<'m>(message: &'m str, after: &str) -> Option<&'m str> {
    let start = message.find(after)? + after.len();
    let rest = &message[start..];
    Some(&rest[..rest.find('"')?])
}

pub(crate) fn parse_forbidden(message: &str) -> ForbiddenParts {
    let verb = message.find(" cannot ").and_then(|i| {
        message[i + " cannot ".len()..]
            .split_whitespace()
            .next()
            .map(String::from)
    });
    ForbiddenParts {
        user: quoted_after(message, "User \"").map(String::from),
        verb,
        resource: quoted_after(message, "resource \"").map(String::from),
        group: quoted_after(message, "API group \"").map(String::from),
        namespace: quoted_after(message, "in the namespace \"").map(String::from),
    }
}

/// A credential plugin's failure (`execProviderConfig`, a kubeconfig's `exec`), said
/// without what kube's message carries — the command with its environment and the plugin's
/// whole output, any of which may hold a credential. `None` for any other error.
pub(crate) fn credential_plugin_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let auth = match e.downcast_ref::<kube::Error>() {
        Some(kube::Error::Auth(auth)) => auth,
        _ => e.downcast_ref::<kube::client::AuthError>()?,
    };
    match auth {
        kube::client::AuthError::AuthExecRun { out, .. } => {
            Some(format!("the credential plugin failed ({})", out.status))
        }
        kube::client::AuthError::AuthExecParse(_) => {
            Some("the credential plugin's output is not an ExecCredential".to_string())
        }
        _ => None,
    }
}

/// The messages of an error and all its sources, deduplicated, on one line
/// (hyper nests "client error (Connect)" around "tcp connect error" around
/// "Connection refused").
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(said) = credential_plugin_failure(e) {
            parts.push(said);
            break;
        }
        let text = match one_line(&e.to_string()).as_str() {
            // hyper-timeout's connect timeout.
            "deadline has elapsed" => format!(
                "no connection within {} s",
                crate::connect::CONNECT_TIMEOUT.as_secs()
            ),
            // hyper's wrapper around every connector error: says nothing more.
            "client error (Connect)" => String::new(),
            other => other.to_string(),
        };
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

impl ClusterError {
    /// Translates a client error, naming the request it happened in.
    pub(crate) fn from_kube(err: kube::Error, ctx: &RequestContext<'_>) -> ClusterError {
        match err {
            kube::Error::Api(status) => Self::from_status(status.code, &status.message, ctx),
            kube::Error::HyperError(_) | kube::Error::Service(_) => ClusterError::Unreachable {
                server: ctx.server.to_string(),
                // Skip the outer "ServiceError: " wrapper, keep what it wraps.
                reason: match err.source() {
                    Some(source) => error_chain(source),
                    None => error_chain(&err),
                },
            },
            kube::Error::SerdeError(e) => ClusterError::Protocol {
                reason: one_line(&e.to_string()),
            },
            kube::Error::Auth(e) => ClusterError::Kubeconfig {
                file: "(credentials)".to_string(),
                reason: error_chain(&e),
            },
            other => ClusterError::Api {
                code: 0,
                message: error_chain(&other),
            },
        }
    }

    /// Translates a non-success `Status` (code and message) from the server.
    pub(crate) fn from_status(code: u16, message: &str, ctx: &RequestContext<'_>) -> ClusterError {
        if code == 403 {
            let parts = parse_forbidden(message);
            // The server's own words win; the request we made fills the gaps.
            let resource = match (parts.resource, parts.group) {
                (Some(r), Some(g)) if !g.is_empty() => match r.split_once('/') {
                    Some((plural, sub)) => format!("{plural}.{g}/{sub}"),
                    None => format!("{r}.{g}"),
                },
                (Some(r), _) => r,
                (None, _) => ctx.resource.clone(),
            };
            let namespace = match parts.namespace {
                Some(ns) => ns,
                None if message.contains("at the cluster scope") => String::new(),
                None => ctx.namespace.clone(),
            };
            return ClusterError::Forbidden {
                user: parts.user,
                verb: parts.verb.unwrap_or_else(|| ctx.verb.to_string()),
                resource,
                namespace,
            };
        }
        ClusterError::Api {
            code,
            message: one_line(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> RequestContext<'static> {
        RequestContext {
            server: "https://127.0.0.1:6443",
            verb: "list",
            resource: "configmaps".into(),
            namespace: "ctx-ns".into(),
        }
    }

    /// A failed credential plugin is said in one line without its command line, its
    /// environment or its output (kube's own message has all three).
    #[test]
    fn a_credential_plugin_failure_shows_no_output() {
        use std::os::unix::process::ExitStatusExt;
        let failed = || {
            kube::Error::Auth(kube::client::AuthError::AuthExecRun {
                cmd: "SECRET_ENV=s3cr3t-env \"/bin/plugin\"".into(),
                out: Box::new(std::process::Output {
                    status: std::process::ExitStatus::from_raw(3 << 8),
                    stdout: b"{\"status\": {\"token\": \"s3cr3t-token\"}}".to_vec(),
                    stderr: b"token s3cr3t-token\nrefused\n".to_vec(),
                }),
            })
        };
        // In a request, and where the client is built (the plugin runs there first).
        let texts = [
            ClusterError::from_kube(failed(), &ctx()).to_string(),
            credential_plugin_failure(&failed()).expect("a plugin failure"),
        ];
        for text in texts {
            assert!(
                text.contains("the credential plugin failed (exit status: 3)"),
                "{text}"
            );
            assert!(!text.contains("s3cr3t"), "{text}");
            assert_eq!(text.lines().count(), 1, "{text}");
        }
        assert_eq!(
            credential_plugin_failure(&kube::Error::LinesCodecMaxLineLengthExceeded),
            None
        );
    }

    #[test]
    fn forbidden_message_is_parsed() {
        let m = r#"deployments.apps "web" is forbidden: User "bob" cannot patch resource "deployments/scale" in API group "apps" in the namespace "prod""#;
        let e = ClusterError::from_status(403, m, &ctx());
        assert_eq!(
            e,
            ClusterError::Forbidden {
                user: Some("bob".into()),
                verb: "patch".into(),
                resource: "deployments.apps/scale".into(),
                namespace: "prod".into(),
            }
        );
        assert_eq!(
            e.to_string(),
            r#"forbidden: user "bob" cannot patch deployments.apps/scale in namespace "prod""#
        );
    }

    #[test]
    fn forbidden_at_cluster_scope_and_unparsable() {
        let m = r#"namespaces is forbidden: User "bob" cannot list resource "namespaces" in API group "" at the cluster scope"#;
        let e = ClusterError::from_status(403, m, &ctx());
        assert_eq!(
            e.to_string(),
            r#"forbidden: user "bob" cannot list namespaces at cluster scope"#
        );
        let e = ClusterError::from_status(403, "nope", &ctx());
        assert_eq!(
            e.to_string(),
            r#"forbidden: the current user cannot list configmaps in namespace "ctx-ns""#
        );
    }

    #[test]
    fn other_status_is_one_line() {
        let e = ClusterError::from_status(422, "bad\nthing", &ctx());
        assert_eq!(e.to_string(), "API error 422: bad thing");
    }

    #[test]
    fn unknown_kind_names_the_kind() {
        let e = ClusterError::UnknownKind {
            group: "example.com".into(),
            kind: "Widget".into(),
        };
        assert!(e.to_string().contains("Widget"));
        assert!(e.to_string().contains("example.com"));
    }
}
