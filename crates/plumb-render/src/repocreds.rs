//! Repository credentials as Argo CD keeps them: Secrets labelled
//! `argocd.argoproj.io/secret-type: repository` (one repository, matched by its URL) or
//! `repo-creds` (a template for every repository whose URL starts with its `url`; the
//! longest prefix wins). A repository Secret without credentials of its own takes them from
//! the matching template, as Argo CD does.
//!
//! Values are read from `data` (base64) or `stringData`. Nothing here prints a password or
//! a key: [`RepoCreds`]'s `Debug` shows only which fields are set.
//!
//! Read from objects ([`CredStore::from_objects`]) or files (the CLI's `--repo-creds`). The
//! runner (plumb-sync's `run::repository_secrets`) lists them in the control namespace before
//! it fetches an app with a chart source, and hands them to the shared chart cache
//! (`ChartCache::set_creds`).

use serde_json::Value;
use std::path::Path;

/// The label that marks a Secret as a repository or a credential template.
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";

/// Which kind of Secret the credentials came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredsKind {
    /// `secret-type: repository`: exactly one repository.
    Repository,
    /// `secret-type: repo-creds`: every repository under `url`.
    Template,
}

/// One repository Secret or credential template.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RepoCreds {
    /// The Secret's `namespace/name`, for messages.
    pub secret: String,
    /// The repository's `name` (Argo CD's; a Helm dependency's `@name`/`alias:name`
    /// refers to it).
    pub name: String,
    pub url: String,
    /// `git`, `helm` (empty: git, as in Argo CD).
    pub repo_type: String,
    pub username: String,
    pub password: String,
    /// PEM.
    pub tls_client_cert_data: String,
    /// PEM.
    pub tls_client_cert_key: String,
    /// Skip TLS verification.
    pub insecure: bool,
    pub enable_oci: bool,
}

impl std::fmt::Debug for RepoCreds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &str| if s.is_empty() { "<unset>" } else { "<set>" };
        f.debug_struct("RepoCreds")
            .field("secret", &self.secret)
            .field("name", &self.name)
            .field("url", &self.url)
            .field("repo_type", &self.repo_type)
            .field("username", &set(&self.username))
            .field("password", &set(&self.password))
            .field("tls_client_cert_data", &set(&self.tls_client_cert_data))
            .field("tls_client_cert_key", &set(&self.tls_client_cert_key))
            .field("insecure", &self.insecure)
            .field("enable_oci", &self.enable_oci)
            .finish()
    }
}

impl RepoCreds {
    /// Whether this entry carries credentials (not only a URL and options).
    pub fn has_credentials(&self) -> bool {
        !self.username.is_empty()
            || !self.password.is_empty()
            || !self.tls_client_cert_data.is_empty()
    }
}

/// A Secret that cannot be read as credentials (never quoting its values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CredsError(pub String);

/// Every repository Secret and credential template at hand.
#[derive(Debug, Clone, Default)]
pub struct CredStore {
    repositories: Vec<RepoCreds>,
    templates: Vec<RepoCreds>,
}

/// A URL as compared: trimmed, without a trailing `/`, lower-case scheme and host are not
/// folded (Argo CD compares the normalized URL; for HTTP(S) that is this).
pub(crate) fn normalize(url: &str) -> &str {
    url.trim().trim_end_matches('/')
}

impl CredStore {
    /// The Secrets among `objects` that carry the label; other objects are ignored.
    pub fn from_objects<'a>(
        objects: impl IntoIterator<Item = &'a Value>,
    ) -> Result<CredStore, CredsError> {
        let mut store = CredStore::default();
        for o in objects {
            if o.get("kind").and_then(Value::as_str) != Some("Secret") {
                continue;
            }
            let kind = match o
                .pointer("/metadata/labels")
                .and_then(|l| l.get(SECRET_TYPE_LABEL))
                .and_then(Value::as_str)
            {
                Some("repository") => CredsKind::Repository,
                Some("repo-creds") => CredsKind::Template,
                _ => continue,
            };
            let creds = read_secret(o)?;
            match kind {
                CredsKind::Repository => store.repositories.push(creds),
                CredsKind::Template => store.templates.push(creds),
            }
        }
        Ok(store)
    }

    /// Secrets from a YAML/JSON file or a directory of them (`--repo-creds`).
    pub fn load(path: &Path) -> Result<CredStore, CredsError> {
        let ms = crate::load_paths(&[path.to_path_buf()]).map_err(|e| CredsError(e.to_string()))?;
        CredStore::from_objects(ms.iter().map(|m| &m.object))
    }

    /// Whether there is nothing in the store.
    pub fn is_empty(&self) -> bool {
        self.repositories.is_empty() && self.templates.is_empty()
    }

    /// The URL of the repository Secret named `name` (a Helm dependency's `@name` or
    /// `alias:name`, as Argo CD adds its Helm repositories to helm under their names).
    pub fn url_named(&self, name: &str) -> Option<&str> {
        self.repositories
            .iter()
            .find(|r| !r.name.is_empty() && r.name == name)
            .map(|r| r.url.as_str())
    }

    /// The credentials for `url`: its repository Secret, else the credential template with
    /// the longest matching prefix; a repository Secret without credentials takes them (not
    /// its own options) from the template.
    pub fn lookup(&self, url: &str) -> Option<RepoCreds> {
        let url = normalize(url);
        let template = self
            .templates
            .iter()
            .filter(|t| {
                let prefix = normalize(&t.url);
                !prefix.is_empty() && url.starts_with(prefix)
            })
            .max_by_key(|t| normalize(&t.url).len());
        let repository = self.repositories.iter().find(|r| normalize(&r.url) == url);
        match (repository, template) {
            (Some(r), Some(t)) if !r.has_credentials() => {
                let mut out = r.clone();
                out.username = t.username.clone();
                out.password = t.password.clone();
                out.tls_client_cert_data = t.tls_client_cert_data.clone();
                out.tls_client_cert_key = t.tls_client_cert_key.clone();
                Some(out)
            }
            (Some(r), _) => Some(r.clone()),
            (None, Some(t)) => Some(t.clone()),
            (None, None) => None,
        }
    }
}

fn read_secret(o: &Value) -> Result<RepoCreds, CredsError> {
    let ns = o
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = o
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let secret = if ns.is_empty() {
        format!("Secret {name}")
    } else {
        format!("Secret {ns}/{name}")
    };
    let field = |key: &str| -> Result<String, CredsError> {
        if let Some(v) = o.pointer(&format!("/stringData/{key}")) {
            return Ok(scalar(v));
        }
        let Some(v) = o.pointer(&format!("/data/{key}")) else {
            return Ok(String::new());
        };
        use base64::Engine as _;
        let text = scalar(v);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| CredsError(format!("{secret}: data.{key} is not base64")))?;
        String::from_utf8(bytes)
            .map_err(|_| CredsError(format!("{secret}: data.{key} is not UTF-8 text")))
    };
    let url = field("url")?;
    if url.trim().is_empty() {
        return Err(CredsError(format!("{secret}: no url")));
    }
    let flag = |s: String| matches!(s.trim(), "true" | "True" | "TRUE" | "1");
    Ok(RepoCreds {
        name: field("name")?.trim().to_string(),
        url: url.trim().to_string(),
        repo_type: field("type")?,
        username: field("username")?,
        password: field("password")?,
        tls_client_cert_data: field("tlsClientCertData")?,
        tls_client_cert_key: field("tlsClientCertKey")?,
        insecure: flag(field("insecure")?),
        enable_oci: flag(field("enableOCI")?),
        secret,
    })
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(name: &str, kind: &str, string_data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "argocd",
                "labels": {SECRET_TYPE_LABEL: kind}},
            "stringData": string_data})
    }

    #[test]
    fn repository_first_then_the_longest_template_prefix() {
        let objects = [
            secret(
                "all",
                "repo-creds",
                json!({"url": "https://charts.example.com", "username": "a", "password": "pa"}),
            ),
            secret(
                "team",
                "repo-creds",
                json!({"url": "https://charts.example.com/team", "username": "t", "password": "pt"}),
            ),
            secret(
                "exact",
                "repository",
                json!({"url": "https://charts.example.com/team/special/", "type": "helm",
                    "username": "e", "password": "pe"}),
            ),
            secret(
                "bare",
                "repository",
                json!({"url": "https://charts.example.com/team/bare", "type": "helm", "insecure": "true"}),
            ),
            json!({"kind": "Secret", "metadata": {"name": "unlabelled"}, "stringData": {"url": "https://charts.example.com/team/x"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "cm"}}),
        ];
        let store = CredStore::from_objects(objects.iter()).expect("store");
        let user = |url: &str| store.lookup(url).map(|c| c.username);
        assert_eq!(
            user("https://charts.example.com/team/special").as_deref(),
            Some("e")
        );
        assert_eq!(
            user("https://charts.example.com/team/other").as_deref(),
            Some("t")
        );
        assert_eq!(
            user("https://charts.example.com/stable").as_deref(),
            Some("a")
        );
        assert_eq!(user("https://elsewhere.example.com/x"), None);
        // A repository without credentials: the template's credentials, its own options.
        let bare = store
            .lookup("https://charts.example.com/team/bare")
            .expect("bare");
        assert_eq!((bare.username.as_str(), bare.insecure), ("t", true));
        assert_eq!(bare.repo_type, "helm");
    }

    #[test]
    fn data_is_base64_and_debug_never_shows_secrets() {
        use base64::Engine as _;
        let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let o = json!({"kind": "Secret", "metadata": {"name": "r", "namespace": "argocd",
            "labels": {SECRET_TYPE_LABEL: "repository"}},
            "data": {"url": b("https://h/charts"), "password": b("hunter2-secret"), "username": b("me")}});
        let store = CredStore::from_objects([&o]).expect("store");
        let c = store.lookup("https://h/charts/").expect("found");
        assert_eq!(c.password, "hunter2-secret");
        let shown = format!("{c:?} {store:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        let bad = json!({"kind": "Secret", "metadata": {"name": "r", "labels": {SECRET_TYPE_LABEL: "repository"}},
            "data": {"url": b("https://h"), "password": "not base64 hunter2!"}});
        let e = CredStore::from_objects([&bad]).expect_err("bad base64");
        assert_eq!(e.to_string(), "Secret r: data.password is not base64");
    }
}
