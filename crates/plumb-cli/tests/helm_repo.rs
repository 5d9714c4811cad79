//! End-to-end tests of charts from Helm chart repositories (`spec.source.chart`): a real
//! HTTPS server on 127.0.0.1 (axum + rustls, a CA made with rcgen, basic auth on
//! `/private/`) serving charts packaged and indexed by the real `helm package` /
//! `helm repo index`; plumb trusts the test CA through `SSL_CERT_FILE`.
//!
//! helm comes from `PLUMB_HELM` (or PATH); without it every test prints `SKIP` and passes,
//! unless `REQUIRE_HELM=1`.

mod common;
use common::{TmpDir, copy_tree, err, out, write};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// helm

fn helm_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PLUMB_HELM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "PLUMB_HELM={} is not a file", p.display());
        return Some(std::fs::canonicalize(&p).expect("PLUMB_HELM resolves"));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("helm"))
        .find(|p| p.is_file())
}

/// A directory with a program named `helm` in it (plumb looks for that name on PATH).
fn helm_dir(helm: &Path) -> PathBuf {
    if helm.file_name().is_some_and(|n| n == "helm") {
        return helm.parent().expect("a directory").to_path_buf();
    }
    let d = std::env::temp_dir().join(format!("plumb-helmrepo-test-{}-bin", std::process::id()));
    std::fs::create_dir_all(&d).expect("bin dir");
    let link = d.join("helm");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(helm, &link).expect("symlink helm");
    d
}

macro_rules! helm_or_skip {
    ($name:expr) => {
        match helm_bin() {
            Some(h) => h,
            None => {
                assert!(
                    std::env::var("REQUIRE_HELM").as_deref() != Ok("1"),
                    "REQUIRE_HELM=1 but helm was not found (PLUMB_HELM)"
                );
                println!("SKIP {}: helm not found", $name);
                return;
            }
        }
    };
}

fn helm_env(cmd: &mut Command, home: &Path) {
    cmd.env("HELM_CONFIG_HOME", home.join(".helm-home/config"))
        .env("HELM_CACHE_HOME", home.join(".helm-home/cache"))
        .env("HELM_DATA_HOME", home.join(".helm-home/data"))
        .env("KUBECONFIG", home.join(".helm-home/no-kubeconfig"));
}

fn run_helm(helm: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(helm);
    cmd.args(args).current_dir(dir);
    helm_env(&mut cmd, dir);
    let o = cmd.output().expect("helm runs");
    assert!(o.status.success(), "helm {args:?}: {}", err(&o));
    o
}

// ---------------------------------------------------------------------------------------
// The chart repository server

/// A CA (PEM) and a serving certificate for 127.0.0.1 it signed (DER).
fn certs() -> (String, Vec<u8>, Vec<u8>) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.distinguished_name
        .push(DnType::CommonName, "plumb test chart repository CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("key")).expect("CA");
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    p.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    p.subject_alt_names = vec![SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))];
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("key");
    let cert = p.signed_by(&key, &ca).expect("certificate");
    (ca.as_ref().pem(), cert.der().to_vec(), key.serialize_der())
}

const USER: &str = "charts";
const PASSWORD: &str = "s3cret-Pa55word";

struct Served {
    root: PathBuf,
    requests: AtomicUsize,
}

async fn serve_file(
    axum::extract::State(st): axum::extract::State<Arc<Served>>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    st.requests.fetch_add(1, Ordering::SeqCst);
    let path = uri.path().trim_start_matches('/');
    if path.split('/').any(|c| c == ".." || c.is_empty()) {
        return StatusCode::NOT_FOUND.into_response();
    }
    if path.starts_with("private/") {
        use base64::Engine as _;
        let want = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
        );
        let given = headers.get("authorization").and_then(|v| v.to_str().ok());
        if given != Some(want.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                [("www-authenticate", "Basic realm=\"charts\"")],
            )
                .into_response();
        }
    }
    match std::fs::read(st.root.join(path)) {
        Ok(bytes) => bytes.into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A chart repository server: `https://127.0.0.1:PORT/<dir>/` serves `root/<dir>/`.
struct Repo {
    base: String,
    ca_file: PathBuf,
    served: Arc<Served>,
    handle: axum_server::Handle<SocketAddr>,
    _rt: tokio::runtime::Runtime,
}

impl Repo {
    fn start(root: &Path) -> Repo {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (ca_pem, cert, key) = certs();
        let ca_file = root.join("ca.pem");
        std::fs::write(&ca_file, ca_pem).expect("CA file");
        let served = Arc::new(Served {
            root: root.join("srv"),
            requests: AtomicUsize::new(0),
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert)],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
            )
            .expect("certificate");
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(tls));
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("address").port();
        let handle = axum_server::Handle::new();
        let app = axum::Router::new()
            .fallback(serve_file)
            .with_state(served.clone());
        let h = handle.clone();
        rt.block_on(async {
            let server = axum_server::from_tcp_rustls(listener, config)
                .expect("TLS server")
                .handle(h.clone());
            tokio::spawn(async move {
                if let Err(e) = server.serve(app.into_make_service()).await {
                    eprintln!("chart repository server: {e}");
                }
            });
            h.listening().await;
        });
        Repo {
            base: format!("https://127.0.0.1:{port}"),
            ca_file,
            served,
            handle,
            _rt: rt,
        }
    }

    fn requests(&self) -> usize {
        self.served.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

// ---------------------------------------------------------------------------------------
// Charts and Applications

const CHART_TPL: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  chartVersion: {{ .Chart.Version | quote }}
  namespace: {{ .Release.Namespace | quote }}
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  greeting: {{ .Values.greeting | quote }}
  motd: {{ .Values.motd | default "none" | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-secret
stringData:
  token: {{ .Values.token | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: "registry.example.com/shop:{{ .Chart.AppVersion }}"
"#;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.shop.example.com
spec:
  group: shop.example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

/// `shop` at each of `versions`, packaged by helm into `srv/<dir>/`, indexed by helm.
fn publish(helm: &Path, root: &Path, dir: &str, versions: &[&str]) {
    for v in versions {
        let src = root.join(format!("src/{dir}-{v}/shop"));
        let s = |rel: &str, text: &str| write(&src, rel, text);
        s(
            "Chart.yaml",
            &format!("apiVersion: v2\nname: shop\nversion: {v}\nappVersion: \"{v}\"\n"),
        );
        s(
            "values.yaml",
            "color: blue\nsize: small\ngreeting: hello\nreplicas: 1\ntoken: default-token\n",
        );
        s("values-prod.yaml", "size: large\nreplicas: 3\n");
        s("motd.txt", "welcome, shopper");
        s("templates/all.yaml", CHART_TPL);
        s("crds/widget.yaml", CRD);
        package(helm, root, &src, dir);
    }
    let dest = root.join("srv").join(dir);
    run_helm(helm, root, &["repo", "index", &dest.to_string_lossy()]);
}

fn app(name: &str, repo: &str, target: &str, helm: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: argocd
spec:
  project: default
  source:
    repoURL: {repo}
    chart: shop
    targetRevision: {target:?}
{helm}  destination:
    server: https://kubernetes.default.svc
    namespace: shop
"
    )
}

const FULL_HELM: &str = "    helm:
      releaseName: storefront
      valueFiles:
      - values-prod.yaml
      values: |
        greeting: from-values
      parameters:
      - name: color
        value: red,green
      fileParameters:
      - name: motd
        path: motd.txt
      skipSchemaValidation: true
";

struct Env {
    dir: TmpDir,
    helm: PathBuf,
    repo: Repo,
}

fn setup(name: &str, helm: PathBuf) -> Env {
    let dir = common::tmp("helmrepo", name);
    let repo = Repo::start(&dir);
    Env { dir, helm, repo }
}

impl Env {
    fn plumb(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
        let mut paths = vec![helm_dir(&self.helm)];
        if let Some(p) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&p));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
        cmd.args(args)
            .current_dir(&*self.dir)
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env("PLUMB_REPO_CACHE", self.dir.join("cache"))
            .env("SSL_CERT_FILE", &self.repo.ca_file)
            .env_remove("PLUMB_HTTP_TIMEOUT");
        helm_env(&mut cmd, &self.dir);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        cmd.output().expect("plumb runs")
    }

    fn url(&self, dir: &str) -> String {
        format!("{}/{dir}", self.repo.base)
    }
}

/// The objects of a YAML stream as plumb prints them (Secret data masked).
fn as_plumb_prints(text: &str) -> String {
    let ms = plumb_render::parse_str(text, Path::new("helm-output.yaml")).expect("helm's YAML");
    let mut s = String::new();
    for m in ms {
        let mut o = m.object;
        plumb_diff::mask::hide_secret_data(&mut [&mut o], &[]);
        s.push_str("---\n");
        s.push_str(&plumb_diff::text::to_yaml(&o));
    }
    s
}

fn one_error_line(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "{}{}", out(o), err(o));
    let e = err(o);
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("error: "), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    println!("{e}");
    e
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn a_chart_app_renders_exactly_as_helm_template_with_argo_flags() {
    let helm = helm_or_skip!("a_chart_app_renders_exactly_as_helm_template_with_argo_flags");
    let env = setup("equal", helm.clone());
    publish(&helm, &env.dir, "public", &["1.0.0", "1.2.0"]);
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("public"), "1.2.0", FULL_HELM),
    );
    let o = env.plumb(&["render", "--app", "app.yaml"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let (header, body) = text.split_once('\n').expect("a header");
    assert_eq!(header, "# Helm source shop at 1.2.0: 4 objects");

    // The same chart archive through helm itself, with the flags Argo CD passes.
    let chart = env.dir.join("srv/public/shop-1.2.0.tgz");
    let src = env.dir.join("src/public-1.2.0/shop");
    let values = env.dir.join("inline.yaml");
    std::fs::write(&values, "greeting: from-values\n").expect("values");
    let expected = run_helm(
        &helm,
        &env.dir,
        &[
            "template",
            "storefront",
            &chart.to_string_lossy(),
            "--namespace",
            "shop",
            "--values",
            &src.join("values-prod.yaml").to_string_lossy(),
            "--values",
            &values.to_string_lossy(),
            "--set",
            "color=red\\,green",
            "--set-file",
            &format!("motd={}", src.join("motd.txt").display()),
            "--include-crds",
            "--skip-schema-validation",
        ],
    );
    let expected = as_plumb_prints(&out(&expected));
    assert_eq!(body, expected, "byte for byte, after Secret masking");
    for line in [
        "  chartVersion: 1.2.0",
        "  color: red,green",
        "  size: large",
        "  greeting: from-values",
        "  motd: welcome, shopper",
        "  namespace: shop",
        "  name: widgets.shop.example.com",
    ] {
        assert!(body.lines().any(|l| l == line), "{line:?} in:\n{body}");
    }
    assert!(!body.contains("default-token"), "Secret data masked");

    // skipCrds drops the CRD, as helm template without --include-crds.
    let skip = FULL_HELM.replace(
        "      releaseName",
        "      skipCrds: true\n      releaseName",
    );
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("public"), "1.2.0", &skip),
    );
    let o = env.plumb(&["render", "--app", "app.yaml"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).starts_with("# Helm source shop at 1.2.0: 3 objects\n"));
}

#[test]
fn a_constraint_resolves_to_the_newest_match_and_exact_versions_come_from_the_cache() {
    let helm = helm_or_skip!("a_constraint_resolves_to_the_newest_match");
    let env = setup("constraint", helm.clone());
    publish(
        &helm,
        &env.dir,
        "public",
        &["1.0.0", "1.2.0", "1.2.3", "1.3.0", "2.0.0"],
    );
    let version_of = |o: &Output| {
        assert_eq!(o.status.code(), Some(0), "{}", err(o));
        let text = out(o);
        let header = text.lines().next().unwrap_or_default().to_string();
        assert!(
            text.lines().any(|l| header.contains(&format!(
                "at {}:",
                l.trim().trim_start_matches("chartVersion: ")
            ))),
            "the revision shown is the chart's version: {text}"
        );
        header
    };
    for (target, want) in [
        ("~1.2", "1.2.3"),
        ("1.2.*", "1.2.3"),
        (">=1.0.0 <2.0.0", "1.3.0"),
        ("^1.2", "1.3.0"),
        ("*", "2.0.0"),
    ] {
        write(
            &env.dir,
            "app.yaml",
            &app("shop", &env.url("public"), target, ""),
        );
        let o = env.plumb(&["render", "--app", "app.yaml"], &[]);
        assert_eq!(
            version_of(&o),
            format!("# Helm source shop at {want}: 4 objects"),
            "{target}"
        );
    }
    // A constraint asks the index every time (it may resolve differently) …
    let before = env.repo.requests();
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("public"), "~1.2", ""),
    );
    env.plumb(&["render", "--app", "app.yaml"], &[]);
    assert_eq!(env.repo.requests(), before + 1, "only index.yaml");
    // … an exact version already in the cache asks nothing.
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("public"), "1.2.3", ""),
    );
    let before = env.repo.requests();
    let o = env.plumb(&["render", "--app", "app.yaml"], &[]);
    assert_eq!(
        version_of(&o),
        "# Helm source shop at 1.2.3: 4 objects".to_string()
    );
    assert_eq!(env.repo.requests(), before, "no network call");
}

#[test]
fn credentials_from_repository_secrets_and_a_wrong_password_is_one_line() {
    let helm = helm_or_skip!("credentials_from_repository_secrets");
    let env = setup("creds", helm.clone());
    publish(&helm, &env.dir, "private", &["1.0.0"]);
    let url = env.url("private");
    write(&env.dir, "app.yaml", &app("shop", &url, "1.0.0", ""));
    // No Secret: the server refuses, plumb says so.
    let o = env.plumb(&["render", "--app", "app.yaml"], &[]);
    let e = one_error_line(&o);
    assert!(e.contains(&url) && e.contains("HTTP 401"), "{e}");

    let secret = |name: &str, kind: &str, url: &str, password: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: {kind}\nstringData:\n  type: helm\n  url: {url}\n  username: {USER}\n  password: {password}\n"
        )
    };
    // A template for the whole host with the wrong password; the longer prefix is right.
    write(
        &env.dir,
        "creds/host.yaml",
        &secret("host", "repo-creds", &env.repo.base, "wrong-Pa55"),
    );
    let o = env.plumb(
        &["render", "--app", "app.yaml", "--repo-creds", "creds"],
        &[],
    );
    let e = one_error_line(&o);
    assert!(e.contains(&url), "names the repository: {e}");
    assert!(
        e.contains("the credentials of Secret argocd/host were refused"),
        "{e}"
    );
    assert!(!e.contains("wrong-Pa55") && !e.contains(PASSWORD), "{e}");
    assert!(!out(&o).contains("wrong-Pa55"));

    write(
        &env.dir,
        "creds/private.yaml",
        &secret("private", "repo-creds", &url, PASSWORD),
    );
    let o = env.plumb(
        &["render", "--app", "app.yaml", "--repo-creds", "creds"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).starts_with("# Helm source shop at 1.0.0: 4 objects\n"));
    assert!(!out(&o).contains(PASSWORD) && !err(&o).contains(PASSWORD));
}

#[test]
fn bad_repositories_are_one_line_errors() {
    let helm = helm_or_skip!("bad_repositories_are_one_line_errors");
    let env = setup("bad", helm.clone());
    publish(&helm, &env.dir, "public", &["1.0.0"]);

    // A version that does not exist: the newest ten available are named.
    let mut index = String::from("apiVersion: v1\nentries:\n  shop:\n");
    for i in 0..12 {
        index.push_str(&format!(
            "  - name: shop\n    version: 1.{i}.0\n    urls: [shop-1.{i}.0.tgz]\n"
        ));
    }
    write(&env.dir, "srv/many/index.yaml", &index);
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("many"), "9.9.9", ""),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(
        e.contains(
            "has no version matching \"9.9.9\" (available: 1.11.0, 1.10.0, 1.9.0, 1.8.0, 1.7.0, 1.6.0, 1.5.0, 1.4.0, 1.3.0, 1.2.0)"
        ),
        "{e}"
    );

    // A corrupt archive (its digest matches, its bytes are no tar.gz) and one whose digest
    // does not match.
    let garbage = b"this is not a gzipped tar archive";
    write(
        &env.dir,
        "srv/broken/shop-1.0.0.tgz",
        std::str::from_utf8(garbage).expect("text"),
    );
    use std::fmt::Write as _;
    let sum = Command::new("sha256sum")
        .arg(env.dir.join("srv/broken/shop-1.0.0.tgz"))
        .output()
        .expect("sha256sum");
    let sum = out(&sum)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let mut index = String::from("apiVersion: v1\nentries:\n  shop:\n");
    let _ = write!(
        index,
        "  - name: shop\n    version: 1.0.0\n    urls: [shop-1.0.0.tgz]\n    digest: {sum}\n"
    );
    let _ = write!(
        index,
        "  - name: shop\n    version: 1.0.1\n    urls: [shop-1.0.0.tgz]\n    digest: {}\n",
        "0".repeat(64)
    );
    write(&env.dir, "srv/broken/index.yaml", &index);
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("broken"), "1.0.0", ""),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(e.contains("corrupt chart archive"), "{e}");
    assert!(e.contains(&env.url("broken")), "{e}");
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("broken"), "1.0.1", ""),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(e.contains("does not match index.yaml's"), "{e}");

    // An index.yaml of 50 MB.
    let mut huge = String::with_capacity(50 << 20);
    huge.push_str("apiVersion: v1\nentries:\n");
    while huge.len() < 50 << 20 {
        huge.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    write(&env.dir, "srv/huge/index.yaml", &huge);
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("huge"), "1.0.0", ""),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(e.contains("index.yaml is larger than 32 MiB"), "{e}");

    // No chart of that name; an OCI repoURL with nothing listening.
    write(
        &env.dir,
        "app.yaml",
        &app("shop", &env.url("public"), "1.0.0", "").replace("chart: shop", "chart: nope"),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(e.contains("no chart named nope"), "{e}");
    write(
        &env.dir,
        "app.yaml",
        &app("shop", "oci://127.0.0.1:1/charts", "1.0.0", ""),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    // An OCI registry (tests/helm_oci.rs) that is not there: one line naming it.
    assert!(e.contains("oci://127.0.0.1:1/charts"), "{e}");
}

#[test]
fn an_unreachable_repository_fails_at_the_deadline() {
    let helm = helm_or_skip!("an_unreachable_repository_fails_at_the_deadline");
    let env = setup("unreachable", helm);
    // A server that accepts connections and never answers.
    let silent = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = silent.local_addr().expect("address").port();
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for c in silent.incoming().take(4) {
            conns.push(c);
        }
        std::thread::sleep(Duration::from_secs(5));
        drop(conns);
    });
    let url = format!("https://127.0.0.1:{port}/charts");
    write(&env.dir, "app.yaml", &app("shop", &url, "1.0.0", ""));
    let start = Instant::now();
    let o = env.plumb(
        &["render", "--app", "app.yaml"],
        &[("PLUMB_HTTP_TIMEOUT", "1")],
    );
    let took = start.elapsed();
    let e = one_error_line(&o);
    assert!(e.contains(&url) && e.contains("no answer within 1s"), "{e}");
    assert!(
        took < Duration::from_secs(4),
        "the deadline holds: {took:?}"
    );
    drop(held);

    // Nothing listening: refused at once, one line.
    let closed = {
        let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        l.local_addr().expect("address").port()
    };
    let url = format!("https://127.0.0.1:{closed}/charts");
    write(&env.dir, "app.yaml", &app("shop", &url, "1.0.0", ""));
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(e.contains(&url), "{e}");
}

// ---------------------------------------------------------------------------------------
// Dependencies of a chart in git

/// A chart `name` at `version` (one ConfigMap naming it), packaged into `srv/<dir>/` and the
/// directory indexed again.
fn publish_lib(helm: &Path, root: &Path, dir: &str, name: &str, version: &str) {
    let src = root.join(format!("src/{dir}-{name}-{version}/{name}"));
    write(
        &src,
        "Chart.yaml",
        &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
    );
    write(&src, "values.yaml", "note: from-the-library\n");
    write(
        &src,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n  note: {{ .Values.note | quote }}\n",
    );
    package(helm, root, &src, dir);
    let dest = root.join("srv").join(dir);
    run_helm(helm, root, &["repo", "index", &dest.to_string_lossy()]);
}

/// The chart at `src` packaged by helm into `srv/<dir>/`.
fn package(helm: &Path, root: &Path, src: &Path, dir: &str) {
    let dest = root.join("srv").join(dir);
    std::fs::create_dir_all(&dest).expect("srv dir");
    run_helm(
        helm,
        root,
        &[
            "package",
            &src.to_string_lossy(),
            "-d",
            &dest.to_string_lossy(),
        ],
    );
}

/// `repo/apps/web`: a chart whose dependencies come from the public repository (aliased,
/// values set through the alias), the private one (credentials) and `file://` inside the
/// repository.
fn web_chart(repo: &Path, public: &str, private: &str) {
    write(
        repo,
        "libs/common/Chart.yaml",
        "apiVersion: v2\nname: common\nversion: 0.3.0\n",
    );
    write(
        repo,
        "libs/common/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-common\ndata:\n  from: file\n",
    );
    write(
        repo,
        "apps/web/Chart.yaml",
        &format!(
            "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n- name: shop\n  alias: storefront\n  version: ^1.0.0\n  repository: {public}\n- name: badge\n  version: 2.x\n  repository: {private}\n- name: common\n  version: 0.3.0\n  repository: file://../../libs/common\n"
        ),
    );
    write(
        repo,
        "apps/web/values.yaml",
        "storefront:\n  color: green\n  size: medium\n  greeting: hi\n  replicas: 2\n  token: t\nbadge:\n  note: set-by-the-parent\n",
    );
    write(
        repo,
        "apps/web/templates/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  ports:\n  - port: 80\n",
    );
}

#[test]
fn a_git_chart_fetches_its_dependencies_as_helm_dependency_build() {
    let helm = helm_or_skip!("a_git_chart_fetches_its_dependencies_as_helm_dependency_build");
    let env = setup("deps", helm.clone());
    publish(&helm, &env.dir, "public", &["1.0.0"]);
    publish_lib(&helm, &env.dir, "private", "badge", "2.0.0");
    let (public, private) = (env.url("public"), env.url("private"));
    let repo = env.dir.join("repo");
    web_chart(&repo, &public, &private);

    // The lock, as a team commits it: `helm dependency update` while shop 1.0.0 was the
    // newest; charts/ is not committed.
    let ca = env.repo.ca_file.to_string_lossy().to_string();
    run_helm(
        &helm,
        &env.dir,
        &["repo", "add", "pub", &public, "--ca-file", &ca],
    );
    run_helm(
        &helm,
        &env.dir,
        &[
            "repo",
            "add",
            "priv",
            &private,
            "--ca-file",
            &ca,
            "--username",
            USER,
            "--password",
            PASSWORD,
        ],
    );
    let web = repo.join("apps/web");
    run_helm(
        &helm,
        &env.dir,
        &["dependency", "update", &web.to_string_lossy()],
    );
    assert!(
        std::fs::read_to_string(web.join("Chart.lock"))
            .expect("lock")
            .contains("version: 1.0.0")
    );
    std::fs::remove_dir_all(web.join("charts")).expect("charts/ not committed");
    // Since then shop 1.2.0 and badge 2.1.0 came out: the lock still says 1.0.0 and 2.0.0.
    publish(&helm, &env.dir, "public", &["1.0.0", "1.2.0"]);
    publish_lib(&helm, &env.dir, "private", "badge", "2.1.0");

    // What Argo CD's repo server runs: `helm dependency build`, then `helm template`.
    let oracle = env.dir.join("oracle");
    copy_tree(&repo, &oracle);
    let owc = oracle.join("apps/web");
    run_helm(
        &helm,
        &env.dir,
        &["dependency", "build", &owc.to_string_lossy()],
    );
    let expected = run_helm(
        &helm,
        &env.dir,
        &[
            "template",
            "web",
            &owc.to_string_lossy(),
            "--namespace",
            "shop",
            "--include-crds",
        ],
    );
    let expected = as_plumb_prints(&out(&expected));

    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {}\n    path: apps/web\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: shop\n",
        repo.display()
    );
    write(&env.dir, "app.yaml", &app);
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: private\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  type: helm\n  url: {private}\n  username: {USER}\n  password: {PASSWORD}\n"
    );
    write(&env.dir, "creds/private.yaml", &secret);
    let o = env.plumb(
        &["render", "--app", "app.yaml", "--repo-creds", "creds"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let (header, body) = text.split_once('\n').expect("a header");
    assert!(header.starts_with("# Helm source apps/web"), "{header}");
    assert_eq!(body, expected, "as helm dependency build + helm template");
    for line in [
        "  chartVersion: 1.0.0",
        "  color: green",
        "  version: 2.0.0",
        "  note: set-by-the-parent",
        "  from: file",
    ] {
        assert!(body.lines().any(|l| l == line), "{line:?} in:\n{body}");
    }
    let notes = err(&o);
    assert!(
        notes.contains("helm dependency shop 1.0.0 fetched from"),
        "{notes}"
    );
    assert!(
        notes.contains("helm dependency common copied from libs/common"),
        "{notes}"
    );
    assert!(!notes.contains(PASSWORD) && !text.contains(PASSWORD));
    // The repository itself is untouched: dependencies go to plumb's private copy.
    assert!(!web.join("charts").exists());

    // The same render again: every dependency version is in the cache, only the private
    // and public indexes are read (a lock pins exact versions: not even those).
    let before = env.repo.requests();
    let o = env.plumb(
        &["render", "--app", "app.yaml", "--repo-creds", "creds"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(out(&o), text);
    assert_eq!(
        env.repo.requests(),
        before,
        "locked versions come from the cache"
    );

    // Without the credentials (and an empty cache) the private dependency is one line
    // naming it.
    let empty = env.dir.join("empty-cache");
    let o = env.plumb(
        &["render", "--app", "app.yaml"],
        &[("PLUMB_REPO_CACHE", &empty.to_string_lossy())],
    );
    let e = one_error_line(&o);
    assert!(
        e.contains("apps/web/Chart.yaml: dependency badge 2.x"),
        "{e}"
    );
    assert!(e.contains("HTTP 401"), "{e}");

    // An unreachable repository, and a dependency that is nowhere.
    let closed = {
        let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        l.local_addr().expect("address").port()
    };
    let gone = format!("https://127.0.0.1:{closed}/charts");
    std::fs::remove_file(web.join("Chart.lock")).expect("no lock");
    let chart = std::fs::read_to_string(web.join("Chart.yaml")).expect("Chart.yaml");
    write(
        &repo,
        "apps/web/Chart.yaml",
        &chart.replace(&private, &gone),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(e.contains(&format!("dependency badge 2.x ({gone})")), "{e}");
    write(
        &repo,
        "apps/web/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n- name: vendored\n  version: 1.0.0\n",
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"], &[]));
    assert!(
        e.contains("dependency vendored 1.0.0 (\"\"): not in apps/web/charts/ and no repository"),
        "{e}"
    );
}

/// A kustomization's `helmCharts` entry with a `repo` (kustomize's
/// TestHelmChartInflationGenerator, which pulls from a chart repository): the chart comes
/// through plumb's chart cache (never written into the repository, where kustomize would
/// `helm pull` it into the chart home) and renders as `kubectl kustomize --enable-helm`
/// renders it, Secret data masked; a version that does not exist is one line.
#[test]
fn kustomize_helm_charts_from_a_chart_repository_render_as_kubectl_kustomize() {
    let helm = helm_or_skip!("kustomize_helm_charts_from_a_chart_repository");
    let env = setup("kustomize", helm.clone());
    publish(&helm, &env.dir, "public", &["1.0.0", "1.2.0"]);
    let kust = |version: &str| {
        format!(
            "namespace: shop\nhelmCharts:\n- name: shop\n  repo: {}\n  version: {version}\n  releaseName: store\n  includeCRDs: true\n  valuesInline:\n    color: green\n",
            env.url("public")
        )
    };
    write(&env.dir, "repo/app/kustomization.yaml", &kust("1.2.0"));
    let o = env.plumb(
        &[
            "render",
            "--repo",
            "repo",
            "--path",
            "app",
            "--kustomize-build-options=--enable-helm",
            "--show-origins",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        !env.dir.join("repo/app/charts").exists(),
        "nothing written into the repository"
    );
    assert!(
        text.contains("  chartVersion: 1.2.0 # app/kustomization.yaml:3"),
        "{text}"
    );
    assert!(
        text.contains("  color: green # app/kustomization.yaml:3"),
        "{text}"
    );

    // The oracle, on a copy (kustomize pulls into the chart home).
    let copy = env.dir.join("oracle");
    copy_tree(&env.dir.join("repo"), &copy);
    let mut paths = vec![helm_dir(&helm)];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut cmd = Command::new("kubectl");
    cmd.args(["kustomize", "--enable-helm"])
        .arg(copy.join("app"))
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("SSL_CERT_FILE", &env.repo.ca_file);
    helm_env(&mut cmd, &env.dir);
    let kubectl = cmd.output().expect("kubectl runs");
    assert!(kubectl.status.success(), "{}", err(&kubectl));
    let plain = env.plumb(
        &[
            "render",
            "--repo",
            "repo",
            "--path",
            "app",
            "--kustomize-build-options=--enable-helm",
        ],
        &[],
    );
    let body = out(&plain);
    let body = body.split_once('\n').expect("a header").1;
    assert_eq!(body, as_plumb_prints(&out(&kubectl)));

    write(&env.dir, "repo/app/kustomization.yaml", &kust("9.9.9"));
    let o = env.plumb(
        &[
            "render",
            "--repo",
            "repo",
            "--path",
            "app",
            "--kustomize-build-options=--enable-helm",
        ],
        &[],
    );
    let e = one_error_line(&o);
    assert!(
        e.contains("app/kustomization.yaml:3:9: helmCharts: chart shop:"),
        "{e}"
    );
    assert!(e.contains("9.9.9"), "{e}");
}
