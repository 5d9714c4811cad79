//! Finding the cluster the way kubectl does, and making sure it answers.
//!
//! Precedence (as client-go's loading rules):
//! 1. an explicit kubeconfig file (`--kubeconfig`): must exist;
//! 2. `KUBECONFIG`, a `:`-separated list (`;` on Windows): the files that exist
//!    are merged, first value wins; files that do not exist are skipped;
//! 3. `~/.kube/config`, when it exists;
//! 4. in-cluster (service account token and `KUBERNETES_SERVICE_HOST`), when
//!    running in a pod and no kubeconfig was found.
//!
//! `--context` picks a context of the kubeconfig (its absence is an error
//! naming the file), otherwise `current-context` is used.
//!
//! An unreachable or hanging server fails [`crate::Cluster::connect`] within 10 s (a 5 s
//! connect timeout, a 9 s version probe); there is no read timeout, since a LIST of many
//! thousand objects may take long.

use crate::error::{ClusterError, Result};
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long establishing a TCP + TLS connection may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the first request (the version probe) may take in total, so that an
/// unreachable or hanging server fails [`crate::Cluster::connect`] within 10 s.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(9);

/// Where to find the cluster. Both fields `None` behaves as plain `kubectl`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectOptions {
    /// An explicit kubeconfig file (kubectl's `--kubeconfig`).
    pub kubeconfig: Option<PathBuf>,
    /// A context of the kubeconfig (kubectl's `--context`).
    pub context: Option<String>,
}

/// A resolved client configuration and where it came from (for messages).
pub(crate) struct Resolved {
    pub config: Config,
    /// The kubeconfig file(s), or `in-cluster`.
    pub source: String,
}

fn kubeconfig_error(file: &str, reason: impl std::fmt::Display) -> ClusterError {
    ClusterError::Kubeconfig {
        file: file.to_string(),
        reason: crate::error::one_line(&reason.to_string()),
    }
}

/// Reads one kubeconfig file, with its reason on failure (the file name is
/// carried by the error, so it is stripped from kube's message).
fn read_file(path: &Path) -> Result<Kubeconfig> {
    let name = path.display().to_string();
    if !path.exists() {
        return Err(kubeconfig_error(&name, "no such file"));
    }
    Kubeconfig::read_from(path).map_err(|e| kubeconfig_error(&name, kube_reason(&e)))
}

/// kube's kubeconfig errors repeat the path (`failed to read kubeconfig from
/// '"/x"': ...`), which the error carries already: keep the cause.
fn kube_reason(e: &kube::config::KubeconfigError) -> String {
    use kube::config::KubeconfigError as K;
    match e {
        K::ReadConfig(io, _) => io.to_string(),
        K::LoadContext(name) => format!("context \"{name}\" not found"),
        K::LoadClusterOfContext(name) => format!("the cluster of context \"{name}\" not found"),
        K::CurrentContextNotSet => "current-context is not set (pass --context)".to_string(),
        // serde-saphyr appends a multi-line source snippet after " --> ".
        K::Parse(inner) => {
            let text = inner.to_string();
            let text = text.split(" --> ").next().unwrap_or_default();
            format!(
                "invalid YAML: {}",
                text.trim_start_matches("error: ").trim()
            )
        }
        other => other.to_string(),
    }
}

/// The parts of the process environment that decide where the configuration
/// comes from (a value, so resolution can be tested without touching the
/// process environment).
#[derive(Debug, Clone, Default)]
pub(crate) struct Env {
    /// `KUBECONFIG`, unsplit.
    pub kubeconfig: Option<std::ffi::OsString>,
    /// `~/.kube/config`.
    pub home_config: Option<PathBuf>,
    /// `KUBERNETES_SERVICE_HOST` is set: running in a pod.
    pub in_pod: bool,
}

impl Env {
    pub fn from_process() -> Env {
        let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"));
        Env {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home_config: home.map(|h| PathBuf::from(h).join(".kube").join("config")),
            in_pod: std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
        }
    }

    /// How to name the kubeconfig that was looked for, when none was found.
    fn looked_for(&self) -> String {
        match &self.kubeconfig {
            Some(list) if !list.is_empty() => list.to_string_lossy().into_owned(),
            _ => self
                .home_config
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "~/.kube/config".into()),
        }
    }
}

/// The kubeconfig(s) to use, merged, and their names; `None` when there is none
/// (then in-cluster configuration is tried).
pub(crate) fn load_kubeconfig(
    opts: &ConnectOptions,
    env: &Env,
) -> Result<Option<(Kubeconfig, String)>> {
    if let Some(path) = &opts.kubeconfig {
        return Ok(Some((read_file(path)?, path.display().to_string())));
    }
    if let Some(value) = &env.kubeconfig {
        let existing: Vec<PathBuf> = std::env::split_paths(value)
            .filter(|p| !p.as_os_str().is_empty() && p.exists())
            .collect();
        if !existing.is_empty() {
            let mut merged = Kubeconfig::default();
            for path in &existing {
                let next = read_file(path)?;
                merged = merged
                    .merge(next)
                    .map_err(|e| kubeconfig_error(&path.display().to_string(), kube_reason(&e)))?;
            }
            let names: Vec<String> = existing.iter().map(|p| p.display().to_string()).collect();
            return Ok(Some((merged, names.join(":"))));
        }
    }
    match &env.home_config {
        Some(path) if path.exists() => Ok(Some((read_file(path)?, path.display().to_string()))),
        _ => Ok(None),
    }
}

/// The client configuration of a destination cluster declared by an Argo CD cluster
/// Secret: its `server` and `config` (bearer token, basic auth, TLS client configuration,
/// exec credential plugin), as a one-context kubeconfig built in memory. Errors name the
/// Secret, never a credential.
pub(crate) async fn resolve_destination(
    cluster: &plumb_core::clusters::Cluster,
) -> Result<Resolved> {
    let source = format!("cluster Secret {}", cluster.secret);
    let cfg = &cluster.config;
    let tls = &cfg.tls_client_config;
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let mut user = serde_json::Map::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            user.insert(k.into(), serde_json::Value::String(v));
        }
    };
    put("token", some(cfg.bearer_token.expose()));
    put("username", some(&cfg.username));
    put("password", some(cfg.password.expose()));
    put("client-certificate-data", some(&tls.cert_data));
    put("client-key-data", some(tls.key_data.expose()));
    if let Some(exec) = &cfg.exec_provider_config {
        user.insert(
            "exec".into(),
            serde_json::json!({
                "apiVersion": exec.api_version,
                "command": exec.command,
                "args": exec.args,
                "env": exec.env.iter()
                    .map(|(name, value)| serde_json::json!({"name": name, "value": value}))
                    .collect::<Vec<_>>(),
                "installHint": some(&exec.install_hint),
                "interactiveMode": "Never",
            }),
        );
    }
    let mut server = serde_json::json!({"server": cluster.server});
    let mut set = |k: &str, v: serde_json::Value| {
        if let Some(m) = server.as_object_mut() {
            m.insert(k.into(), v);
        }
    };
    if tls.insecure {
        set("insecure-skip-tls-verify", true.into());
    }
    if let Some(ca) = some(&tls.ca_data) {
        set("certificate-authority-data", ca.into());
    }
    if let Some(name) = some(&tls.server_name) {
        set("tls-server-name", name.into());
    }
    if let Some(proxy) = some(&cfg.proxy_url) {
        set("proxy-url", proxy.into());
    }
    if cfg.disable_compression {
        set("disable-compression", true.into());
    }
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "destination", "cluster": server}],
        "users": [{"name": "destination", "user": user}],
        "contexts": [{"name": "destination", "context": {"cluster": "destination", "user": "destination"}}],
        "current-context": "destination",
    });
    let kubeconfig: Kubeconfig = serde_json::from_value(kubeconfig)
        .map_err(|e| kubeconfig_error(&source, format!("config: {}", field_error(&e))))?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| kubeconfig_error(&source, kube_reason(&e)))?;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = None;
    Ok(Resolved { config, source })
}

/// A serde error without the text it quotes (credentials).
fn field_error(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Data => "a field has the wrong type",
        _ => "invalid",
    }
}

/// Resolves the client configuration as kubectl would.
pub(crate) async fn resolve(opts: &ConnectOptions) -> Result<Resolved> {
    let env = Env::from_process();
    let (mut config, source) = match load_kubeconfig(opts, &env)? {
        Some((kubeconfig, source)) => {
            let options = KubeConfigOptions {
                context: opts.context.clone(),
                cluster: None,
                user: None,
            };
            let config = Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| kubeconfig_error(&source, kube_reason(&e)))?;
            (config, source)
        }
        None => {
            if !env.in_pod || opts.context.is_some() {
                return Err(kubeconfig_error(
                    &env.looked_for(),
                    "no kubeconfig found (and not running in a pod)",
                ));
            }
            let config =
                Config::incluster().map_err(|e| kubeconfig_error("in-cluster", e.to_string()))?;
            (config, "in-cluster".to_string())
        }
    };
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    // No read timeout: a LIST of many thousand objects may legitimately take
    // long; hanging at connect time is caught by the connect timeout and the
    // probe deadline.
    config.read_timeout = None;
    Ok(Resolved { config, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(context: &str, server: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: {context}\n\
             clusters: [{{name: {context}, cluster: {{server: \"{server}\"}}}}]\n\
             users: [{{name: {context}, user: {{token: t}}}}]\n\
             contexts: [{{name: {context}, context: {{cluster: {context}, user: {context}}}}}]\n"
        )
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("plumb-cluster-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn kubeconfig_list_merges_existing_files_first_wins() {
        let dir = scratch("merge");
        let a = dir.join("a");
        let b = dir.join("b");
        std::fs::write(&a, kubeconfig("alpha", "https://a.invalid")).unwrap();
        std::fs::write(&b, kubeconfig("beta", "https://b.invalid")).unwrap();
        let missing = dir.join("missing");
        let list = std::env::join_paths([&missing, &a, &b]).unwrap();
        let env = Env {
            kubeconfig: Some(list),
            home_config: None,
            in_pod: false,
        };
        let (merged, source) = load_kubeconfig(&ConnectOptions::default(), &env)
            .unwrap()
            .unwrap();
        // The missing file is skipped; a's current-context wins; b's context is usable.
        assert_eq!(source, format!("{}:{}", a.display(), b.display()));
        assert_eq!(merged.current_context.as_deref(), Some("alpha"));
        let options = KubeConfigOptions {
            context: Some("beta".into()),
            ..Default::default()
        };
        let config = Config::from_custom_kubeconfig(merged, &options)
            .await
            .unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://b.invalid/");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn explicit_file_wins_and_home_is_the_fallback() {
        let dir = scratch("explicit");
        let explicit = dir.join("explicit");
        let home = dir.join("home");
        std::fs::write(&explicit, kubeconfig("x", "https://x.invalid")).unwrap();
        std::fs::write(&home, kubeconfig("h", "https://h.invalid")).unwrap();
        let env = Env {
            kubeconfig: Some(dir.join("nope").into_os_string()),
            home_config: Some(home.clone()),
            in_pod: false,
        };
        let opts = ConnectOptions {
            kubeconfig: Some(explicit.clone()),
            context: None,
        };
        let (_, source) = load_kubeconfig(&opts, &env).unwrap().unwrap();
        assert_eq!(source, explicit.display().to_string());
        // KUBECONFIG names no existing file: ~/.kube/config.
        let (_, source) = load_kubeconfig(&ConnectOptions::default(), &env)
            .unwrap()
            .unwrap();
        assert_eq!(source, home.display().to_string());
        // Nothing at all: None (in-cluster is tried next).
        let none = Env::default();
        assert!(
            load_kubeconfig(&ConnectOptions::default(), &none)
                .unwrap()
                .is_none()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn no_kubeconfig_outside_a_pod_is_a_kubeconfig_error() {
        // resolve() reads the real environment; exercise its error path only
        // through the pieces it uses.
        let env = Env {
            kubeconfig: Some("/nonexistent/plumb/kubeconfig".into()),
            home_config: None,
            in_pod: false,
        };
        assert!(
            load_kubeconfig(&ConnectOptions::default(), &env)
                .unwrap()
                .is_none()
        );
        assert_eq!(env.looked_for(), "/nonexistent/plumb/kubeconfig");
    }
}
