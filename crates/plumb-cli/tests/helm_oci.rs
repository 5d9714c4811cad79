//! End-to-end tests of Helm charts from an OCI registry: the real CNCF distribution registry
//! (`PLUMB_REGISTRY`, built by `testbed/build-registry.sh`) started on 127.0.0.1 with TLS (a
//! CA made with rcgen, trusted by plumb through `SSL_CERT_FILE`) and htpasswd authentication;
//! charts packaged and pushed by the real `helm package` / `helm push` (`PLUMB_HELM`).
//!
//! Without the registry or helm every test prints `SKIP` and passes, unless
//! `REQUIRE_REGISTRY=1` / `REQUIRE_HELM=1`.

mod common;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;
use common::{TmpDir, err, out, write};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const USER: &str = "pusher";
const PASSWORD: &str = "oci-Pa55word-42";

fn bin(var: &str, name: &str, require: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{var}={} is not a file", p.display());
        return Some(std::fs::canonicalize(&p).expect("resolves"));
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var(require).as_deref() != Ok("1"),
            "{require}=1 but {name} was not found ({var})"
        );
    }
    found
}

macro_rules! tools_or_skip {
    ($name:expr) => {
        match (
            bin("PLUMB_HELM", "helm", "REQUIRE_HELM"),
            bin("PLUMB_REGISTRY", "registry", "REQUIRE_REGISTRY"),
        ) {
            (Some(h), Some(r)) => (h, r),
            _ => {
                println!(
                    "SKIP {}: helm or the distribution registry not found",
                    $name
                );
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

/// A CA and a serving certificate and key for 127.0.0.1, all PEM.
fn certs() -> Certs {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.distinguished_name
        .push(DnType::CommonName, "plumb test registry CA");
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
    Certs {
        ca_pem: ca.as_ref().pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        cert_der: cert.der().to_vec(),
        key_der: key.serialize_der(),
    }
}

/// A test CA and a certificate for 127.0.0.1 it signed.
#[derive(Clone)]
struct Certs {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

/// A bcrypt hash of `password` for htpasswd (the registry reads only bcrypt), made by the
/// system's crypt(3) through Python's standard library (up to Python 3.12), else by Apache's
/// `htpasswd` when installed.
fn bcrypt(password: &str) -> String {
    if let Ok(o) = Command::new("htpasswd")
        .args(["-nbBC", "5", "u", password])
        .output()
        && o.status.success()
        && let Some((_, hash)) = out(&o).trim().split_once(':')
    {
        return hash.to_string();
    }
    let o = Command::new("python3")
        .args([
            "-W",
            "ignore",
            "-c",
            "import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32)))",
            password,
        ])
        .output()
        .expect("python3 runs");
    let hash = out(&o).trim().to_string();
    assert!(
        o.status.success() && hash.starts_with("$2"),
        "python3 crypt made no bcrypt hash: {}",
        err(&o)
    );
    hash
}

/// The distribution registry on 127.0.0.1 with TLS and htpasswd auth; stopped on drop.
struct Registry {
    child: Child,
    host: String,
    data: PathBuf,
    ca_file: PathBuf,
}

impl Registry {
    fn start(bin: &Path, dir: &Path) -> Registry {
        let auth = format!(
            "  htpasswd:\n    realm: plumb-test\n    path: {}/htpasswd\n",
            dir.display()
        );
        Registry::start_with(bin, dir, &auth, &certs())
    }

    /// The registry with `auth` (the YAML under `auth:`).
    fn start_with(bin: &Path, dir: &Path, auth: &str, certs: &Certs) -> Registry {
        let (ca, cert, key) = (&certs.ca_pem, &certs.cert_pem, &certs.key_pem);
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca).expect("CA");
        std::fs::write(dir.join("registry-cert.pem"), cert).expect("cert");
        std::fs::write(dir.join("registry-key.pem"), key).expect("key");
        let hash = bcrypt(PASSWORD);
        std::fs::write(dir.join("htpasswd"), format!("{USER}:{hash}\n")).expect("htpasswd");
        let port = {
            let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
            l.local_addr().expect("address").port()
        };
        let data = dir.join("registry-data");
        let config = format!(
            "version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {data}
http:
  addr: 127.0.0.1:{port}
  secret: plumb-test-secret
  tls:
    certificate: {dir}/registry-cert.pem
    key: {dir}/registry-key.pem
auth:
{auth}",
            data = data.display(),
            dir = dir.display(),
        );
        std::fs::write(dir.join("registry.yaml"), config).expect("config");
        let log = std::fs::File::create(dir.join("registry.log")).expect("log");
        let child = Command::new(bin)
            .arg("serve")
            .arg(dir.join("registry.yaml"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("registry starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the registry did not listen within 30s: {}",
                std::fs::read_to_string(dir.join("registry.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Registry {
            child,
            host: format!("127.0.0.1:{port}"),
            data,
            ca_file,
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The stored bytes of blob `digest` (`sha256:…`).
    fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.data
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

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
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  plumbApi: {{ .Capabilities.APIVersions.Has "plumb.dev/v1alpha1" | quote }}
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

struct Env {
    dir: TmpDir,
    helm: PathBuf,
    registry: Registry,
}

impl Env {
    fn new(name: &str) -> Option<Env> {
        let (helm, registry) = match (
            bin("PLUMB_HELM", "helm", "REQUIRE_HELM"),
            bin("PLUMB_REGISTRY", "registry", "REQUIRE_REGISTRY"),
        ) {
            (Some(h), Some(r)) => (h, r),
            _ => return None,
        };
        let dir = common::tmp("helmoci", name);
        let registry = Registry::start(&registry, &dir);
        Some(Env {
            dir,
            helm,
            registry,
        })
    }

    /// `shop` at `version`, packaged by helm and pushed to `charts/` of the registry; the
    /// archive's path and the manifest's digest.
    fn push(&self, version: &str) -> (PathBuf, String) {
        let src = self.dir.join(format!("src/{version}/shop"));
        let s = |rel: &str, text: &str| write(&src, rel, text);
        s(
            "Chart.yaml",
            &format!("apiVersion: v2\nname: shop\nversion: {version}\nappVersion: \"{version}\"\n"),
        );
        s(
            "values.yaml",
            "color: blue\nsize: small\ngreeting: hello\nreplicas: 1\ntoken: default-token\n",
        );
        s("values-prod.yaml", "size: large\nreplicas: 3\n");
        s("templates/all.yaml", CHART_TPL);
        let pkg = self.dir.join("pkg");
        run_helm(
            &self.helm,
            &self.dir,
            &[
                "package",
                &src.to_string_lossy(),
                "-d",
                &pkg.to_string_lossy(),
            ],
        );
        let archive = pkg.join(format!("shop-{version}.tgz"));
        let o = run_helm(
            &self.helm,
            &self.dir,
            &[
                "push",
                &archive.to_string_lossy(),
                &format!("oci://{}/charts", self.registry.host),
                "--ca-file",
                &self.registry.ca_file.to_string_lossy(),
                "--username",
                USER,
                "--password",
                PASSWORD,
            ],
        );
        let text = format!("{}{}", out(&o), err(&o));
        let digest = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Digest: "))
            .expect("helm push prints the digest")
            .trim()
            .to_string();
        (archive, digest)
    }

    fn plumb(&self, args: &[&str]) -> Output {
        self.plumb_with(args, &[])
    }

    /// [`Env::plumb`] with more environment (set last).
    fn plumb_with(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
        let helm_dir = self.helm.parent().expect("helm's directory").to_path_buf();
        let mut paths = vec![helm_dir];
        if let Some(p) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&p));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
        cmd.args(args)
            .current_dir(&*self.dir)
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env("PLUMB_REPO_CACHE", self.dir.join("cache"))
            .env("SSL_CERT_FILE", &self.registry.ca_file)
            .env_remove("PLUMB_HTTP_TIMEOUT");
        helm_env(&mut cmd, &self.dir);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        cmd.output().expect("plumb runs")
    }

    /// Argo CD's repository Secret of an OCI Helm repository.
    fn secret(&self, url: &str, password: &str) {
        write(
            &self.dir,
            "creds/registry.yaml",
            &format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  type: helm\n  enableOCI: \"true\"\n  url: {url}\n  username: {USER}\n  password: {password}\n"
            ),
        );
    }
}

fn app(repo: &str, target: &str, helm: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
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
    assert!(!e.contains(PASSWORD) && !e.contains("wrong-Pa55"), "{e}");
    println!("{e}");
    e
}

#[test]
fn an_oci_chart_renders_exactly_as_helm_template_and_constraints_use_the_tags() {
    let (_h, _r) = tools_or_skip!("an_oci_chart_renders_exactly_as_helm_template");
    let Some(mut env) = Env::new("equal") else {
        return;
    };
    let (archive, _) = env.push("1.2.0");
    for v in ["1.0.0", "1.2.3", "2.0.0", "1.2.4+build.7"] {
        env.push(v);
    }
    // Argo CD's form: no scheme, enableOCI in the repository Secret.
    let repo = format!("{}/charts", env.registry.host);
    env.secret(&repo, PASSWORD);
    let helm = "    helm:
      releaseName: storefront
      valueFiles:
      - values-prod.yaml
      values: |
        greeting: from-values
      parameters:
      - name: color
        value: red,green
";
    write(&env.dir, "app.yaml", &app(&repo, "1.2.0", helm));
    let o = env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let (header, body) = text.split_once('\n').expect("a header");
    assert_eq!(header, "# Helm source shop at 1.2.0: 3 objects");
    let values = env.dir.join("inline.yaml");
    std::fs::write(&values, "greeting: from-values\n").expect("values");
    let expected = run_helm(
        &env.helm,
        &env.dir,
        &[
            "template",
            "storefront",
            &archive.to_string_lossy(),
            "--namespace",
            "shop",
            "--values",
            &env.dir
                .join("src/1.2.0/shop/values-prod.yaml")
                .to_string_lossy(),
            "--values",
            &values.to_string_lossy(),
            "--set",
            "color=red\\,green",
            "--include-crds",
        ],
    );
    assert_eq!(body, as_plumb_prints(&out(&expected)), "byte for byte");
    assert!(body.contains("  size: large\n") && !body.contains("default-token"));

    // `oci://` and constraints, resolved through the tags list (`_` in a tag is `+`).
    let oci = format!("oci://{repo}");
    for (target, want) in [
        ("~1.2", "1.2.4+build.7"),
        (">=1.0.0 <1.2.0", "1.0.0"),
        ("*", "2.0.0"),
    ] {
        write(&env.dir, "app.yaml", &app(&oci, target, ""));
        let o = env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]);
        assert_eq!(o.status.code(), Some(0), "{target}: {}", err(&o));
        assert!(
            out(&o).starts_with(&format!("# Helm source shop at {want}: 3 objects\n")),
            "{target}: {}",
            out(&o)
        );
        assert!(out(&o).contains(&format!("chartVersion: {want}")));
    }

    // An exact version in the cache needs no registry at all.
    env.registry.stop();
    write(&env.dir, "app.yaml", &app(&repo, "1.2.0", helm));
    let again = env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]);
    assert_eq!(again.status.code(), Some(0), "{}", err(&again));
    assert_eq!(out(&again), text, "the same output from the cache");
}

#[test]
fn oci_errors_are_one_line_and_never_print_the_password() {
    let (_h, _r) = tools_or_skip!("oci_errors_are_one_line");
    let Some(env) = Env::new("errors") else {
        return;
    };
    env.push("1.0.0");
    let (_, digest) = env.push("1.1.0");
    let repo = format!("{}/charts", env.registry.host);
    write(&env.dir, "app.yaml", &app(&repo, "1.0.0", ""));

    // No Secret: the registry asks for a password plumb does not have.
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"]));
    assert!(
        e.contains(&repo) && e.contains("authentication required"),
        "{e}"
    );

    // A wrong password: names the repository and the Secret, never the password.
    env.secret(&repo, "wrong-Pa55");
    let o = env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]);
    let e = one_error_line(&o);
    assert!(
        e.contains(&repo) && e.contains("the credentials of Secret argocd/registry were refused"),
        "{e}"
    );
    assert!(!out(&o).contains("wrong-Pa55"));

    // A tag that does not exist: the versions there are.
    env.secret(&repo, PASSWORD);
    write(&env.dir, "app.yaml", &app(&repo, "9.9.9", ""));
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]));
    assert!(
        e.contains("has no version matching \"9.9.9\" (available: 1.1.0, 1.0.0)"),
        "{e}"
    );
    write(&env.dir, "app.yaml", &app(&repo, "3.*", ""));
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]));
    assert!(e.contains("has no version matching \"3.*\""), "{e}");
    // No such repository in the registry.
    write(
        &env.dir,
        "app.yaml",
        &app(&repo, "1.0.0", "").replace("chart: shop", "chart: nope"),
    );
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]));
    assert!(e.contains("charts/nope"), "{e}");

    // A corrupt blob: the registry's stored chart layer of 1.1.0 altered (same size).
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(env.registry.blob_path(&digest)).expect("the manifest blob"),
    )
    .expect("a manifest");
    let layer = manifest["layers"][0]["digest"]
        .as_str()
        .expect("a chart layer")
        .to_string();
    let at = env.registry.blob_path(&layer);
    let mut bytes = std::fs::read(&at).expect("the layer");
    for b in &mut bytes {
        *b = !*b;
    }
    std::fs::write(&at, bytes).expect("corrupted");
    write(&env.dir, "app.yaml", &app(&repo, "1.1.0", ""));
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]));
    assert!(
        e.contains("chart layer digest") && e.contains("does not match the manifest's"),
        "{e}"
    );

    // Nothing listening: one line naming the repository.
    let closed = {
        let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        l.local_addr().expect("address").port()
    };
    let url = format!("oci://127.0.0.1:{closed}/charts");
    write(&env.dir, "app.yaml", &app(&url, "1.0.0", ""));
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml"]));
    assert!(e.contains(&url), "{e}");
}

/// The controller's pipeline on the test bed (`plumb app sync`): a multi-source Application
/// — a chart from the registry (credentials from a repository Secret in the control
/// namespace) with `$values/envs/prod.yaml` from a git source — synced; the chart sees the
/// cluster's version and API versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_source_oci_app_syncs_on_the_test_bed() {
    let (_h, _r) = tools_or_skip!("a_multi_source_oci_app_syncs_on_the_test_bed");
    let Some(cluster) = support::testbed("a_multi_source_oci_app_syncs_on_the_test_bed").await
    else {
        return;
    };
    let crd_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/crd.yaml"
    ))
    .expect("deploy/crd.yaml");
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple(&crd_text).expect("CRD YAML");
    support::apply(&cluster, docs).await;
    support::wait_until("applications.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.resource_for("plumb.dev", "Application").await.ok()
    })
    .await;
    let Some(env) = Env::new("testbed") else {
        return;
    };
    env.push("1.0.0");
    let repo = format!("{}/charts", env.registry.host);
    let values = env.dir.join("values-repo");
    write(&values, "envs/prod.yaml", "size: huge\nreplicas: 0\n");
    common::git(&values, &["init", "-q", "-b", "main"]);
    common::git(&values, &["add", "-A"]);
    common::git(&values, &["commit", "-qm", "prod values"]);

    let ns = support::namespace(&cluster, "ocisrc", serde_json::json!({})).await;
    let app_ns = support::namespace(&cluster, "ocisrc-apps", serde_json::json!({})).await;
    let name = support::unique("shop");
    let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "registry", "namespace": app_ns,
            "labels": {"argocd.argoproj.io/secret-type": "repository"}},
        "stringData": {"type": "helm", "enableOCI": "true", "url": repo,
            "username": USER, "password": PASSWORD}});
    let app = serde_json::json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": app_ns},
        "spec": {"project": "default",
            "sources": [
                {"repoURL": repo, "chart": "shop", "targetRevision": "~1.0",
                 "helm": {"releaseName": "shop", "valueFiles": ["$values/envs/prod.yaml"]}},
                {"repoURL": format!("file://{}", values.display()), "targetRevision": "HEAD",
                 "ref": "values"}],
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns}}});
    let secret_text = secret.to_string();
    support::apply(&cluster, vec![secret, app]).await;

    let run = |args: &[&str]| {
        let helm_dir = env.helm.parent().expect("helm's directory").to_path_buf();
        let mut paths = vec![helm_dir];
        if let Some(p) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&p));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
        cmd.args(args)
            .current_dir(&*env.dir)
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env("PLUMB_REPO_CACHE", env.dir.join("cache"))
            .env("SSL_CERT_FILE", &env.registry.ca_file);
        helm_env(&mut cmd, &env.dir);
        if let Some(k) = std::env::var_os("KUBECONFIG") {
            cmd.env("KUBECONFIG", k);
        }
        let o = cmd.output().expect("plumb runs");
        assert!(!err(&o).contains(PASSWORD) && !out(&o).contains(PASSWORD));
        o
    };
    let o = run(&["app", "sync", &name, "--cluster", "-N", &app_ns]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    let cm = cluster
        .get_object("", "ConfigMap", &ns, "shop-config")
        .await
        .expect("read")
        .expect("the chart's ConfigMap is applied");
    assert_eq!(
        cm["data"]["size"], "huge",
        "the $values file of the git source"
    );
    assert_eq!(cm["data"]["chartVersion"], "1.0.0");
    let sv = cluster.server_version();
    let want = format!(
        "v{}",
        sv.trim_start_matches('v')
            .split(['+', '-'])
            .next()
            .unwrap_or("")
    );
    assert_eq!(
        cm["data"]["kube"],
        want.as_str(),
        "--kube-version from the cluster"
    );
    assert_eq!(
        cm["data"]["plumbApi"], "true",
        "--api-versions from discovery"
    );
    let o = run(&["app", "history", &name, "--cluster", "-N", &app_ns]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    println!("{}", out(&o));
    assert!(out(&o).contains("1.0.0"), "{}", out(&o));
    // Both sources' revisions are recorded and printed (one table per source).
    let values_head = common::git(&values, &["rev-parse", "HEAD"]);
    let history = out(&o);
    assert!(
        history.contains(&format!("SOURCE  {repo}\n"))
            && history.contains(&format!("HEAD ({})", &values_head.trim()[..7])),
        "{history}"
    );
    let stored = cluster
        .get_object("plumb.dev", "Application", &app_ns, &name)
        .await
        .expect("read")
        .expect("the Application");
    assert_eq!(
        stored["status"]["history"][0]["revisions"],
        serde_json::json!(["1.0.0", values_head.trim()])
    );
    // doctor --cluster renders the chart for the cluster's version as the sync did: the
    // ConfigMap's `kube` (from .Capabilities) is no difference.
    let creds = env.dir.join("repo-creds.json");
    std::fs::write(&creds, secret_text).expect("write creds");
    let creds = creds.display().to_string();
    let o = run(&["doctor", &name, "--cluster", "--repo-creds", &creds]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    assert!(!out(&o).contains("kube"), "{}", out(&o));
}

// ---------------------------------------------------------------------------------------
// The Bearer token flow: the registry with `auth: token`, a token server the test runs.

/// base64url without padding (JWT).
fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An ECDSA signature in DER (`SEQUENCE { r, s }`) as JWS's 64 bytes `r || s`.
fn der_to_raw(der: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 2;
    for _ in 0..2 {
        assert_eq!(der[i], 0x02, "an INTEGER");
        let len = der[i + 1] as usize;
        let int = &der[i + 2..i + 2 + len];
        let int = &int[int.len().saturating_sub(32)..];
        out.extend(std::iter::repeat_n(0u8, 32 - int.len()));
        out.extend_from_slice(int);
        i += 2 + len;
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A token server on 127.0.0.1 (plain HTTP): answers `GET /token?service=..&scope=..` with
/// a JWT for the scopes asked, signed by `key` (its certificate `cert_der` in `x5c`), to a
/// client with the right Basic credentials; 401 otherwise. Counts the tokens issued.
fn token_server(
    key: KeyPair,
    cert_der: Vec<u8>,
    tls: &Certs,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use std::io::{Read as _, Write as _};
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(tls.cert_der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(tls.key_der.clone())),
        )
        .expect("certificate"),
    );
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().expect("address").port();
    let issued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = issued.clone();
    std::thread::spawn(move || {
        use base64::Engine as _;
        use rcgen::SigningKey as _;
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
        );
        for conn in listener.incoming() {
            let Ok(tcp) = conn else { continue };
            let Ok(server) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            let mut conn = rustls::StreamOwned::new(server, tcp);
            let mut buf = Vec::new();
            let mut byte = [0u8; 1];
            while !buf.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                buf.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&buf).into_owned();
            let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let authorized = head.lines().any(|l| {
                l.to_ascii_lowercase().starts_with("authorization:") && l[14..].trim() == basic
            });
            if !authorized {
                let _ = write!(
                    conn,
                    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                conn.conn.send_close_notify();
                let _ = conn.flush();
                continue;
            }
            let query = target.split_once('?').map_or("", |(_, q)| q);
            let mut access = Vec::new();
            for (k, v) in query.split('&').filter_map(|kv| kv.split_once('=')) {
                if k != "scope" {
                    continue;
                }
                let scope = percent_decode(v);
                let mut parts = scope.splitn(3, ':');
                let (Some(kind), Some(name), Some(actions)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                access.push(serde_json::json!({"type": kind, "name": name,
                    "actions": actions.split(',').collect::<Vec<_>>()}));
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs();
            let header = serde_json::json!({"alg": "ES256", "typ": "JWT",
                "x5c": [base64::engine::general_purpose::STANDARD.encode(&cert_der)]});
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let claims = serde_json::json!({"iss": "plumb-test-issuer", "sub": USER,
                "aud": "plumb-registry", "exp": now + 300, "nbf": now - 10, "iat": now - 10,
                "jti": format!("token-{n}"), "access": access});
            let signing_input = format!(
                "{}.{}",
                b64url(header.to_string().as_bytes()),
                b64url(claims.to_string().as_bytes())
            );
            let sig = key.sign(signing_input.as_bytes()).expect("sign");
            let jwt = format!("{signing_input}.{}", b64url(&der_to_raw(&sig)));
            let body = serde_json::json!({"token": jwt, "expires_in": 300}).to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            conn.conn.send_close_notify();
            let _ = conn.flush();
        }
    });
    (format!("https://127.0.0.1:{port}/token"), issued)
}

#[test]
fn the_bearer_token_flow_of_a_token_authenticated_registry() {
    let (helm, registry_bin) = tools_or_skip!("the_bearer_token_flow");
    let dir = common::tmp("helmoci", "bearer");
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, "plumb test token issuer");
    let cert = params.self_signed(&key).expect("certificate");
    std::fs::write(dir.join("token-cert.pem"), cert.pem()).expect("bundle");
    let cert_der = cert.der().to_vec();
    let tls = certs();
    let (realm, issued) = token_server(key, cert_der, &tls);
    let auth = format!(
        "  token:\n    realm: {realm}\n    service: plumb-registry\n    issuer: plumb-test-issuer\n    rootcertbundle: {}/token-cert.pem\n",
        dir.display()
    );
    let registry = Registry::start_with(&registry_bin, &dir, &auth, &tls);
    let env = Env {
        dir,
        helm,
        registry,
    };
    env.push("1.0.0");
    env.push("1.1.0");
    let repo = format!("oci://{}/charts", env.registry.host);
    env.secret(&repo, PASSWORD);
    let before = issued.load(std::sync::atomic::Ordering::SeqCst);
    write(&env.dir, "app.yaml", &app(&repo, "^1.0", ""));
    let o = env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    assert!(
        out(&o).starts_with("# Helm source shop at 1.1.0: 3 objects\n"),
        "{}",
        out(&o)
    );
    assert!(
        issued.load(std::sync::atomic::Ordering::SeqCst) > before,
        "a token was asked for"
    );
    // A wrong password: the token server refuses; one line, no password.
    env.secret(&repo, "wrong-Pa55");
    write(&env.dir, "app.yaml", &app(&repo, "1.0.0", ""));
    let e = one_error_line(&env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]));
    assert!(
        e.contains("token from https://127.0.0.1") && e.contains("were refused"),
        "{e}"
    );
}

#[test]
fn a_git_chart_with_an_oci_dependency_renders_as_helm_dependency_build() {
    let (_h, _r) = tools_or_skip!("a_git_chart_with_an_oci_dependency");
    let Some(env) = Env::new("dependency") else {
        return;
    };
    for v in ["1.2.0", "1.2.3", "2.0.0"] {
        env.push(v);
    }
    let oci = format!("oci://{}/charts", env.registry.host);
    let chart = |root: &Path| {
        write(
            root,
            "apps/web/Chart.yaml",
            &format!(
                "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n- name: shop\n  version: ~1.2.0\n  repository: {oci}\n"
            ),
        );
        write(root, "apps/web/values.yaml", "shop:\n  color: teal\n");
    };
    let repo = env.dir.join("repo");
    chart(&repo);
    let oracle = env.dir.join("oracle");
    chart(&oracle);
    let owc = oracle.join("apps/web");
    run_helm(
        &env.helm,
        &env.dir,
        &[
            "dependency",
            "build",
            &owc.to_string_lossy(),
            "--ca-file",
            &env.registry.ca_file.to_string_lossy(),
            "--username",
            USER,
            "--password",
            PASSWORD,
        ],
    );
    let expected = run_helm(
        &env.helm,
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
    env.secret(&oci, PASSWORD);
    write(
        &env.dir,
        "app.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {}\n    path: apps/web\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: shop\n",
            repo.display()
        ),
    );
    let o = env.plumb(&["render", "--app", "app.yaml", "--repo-creds", "creds"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let (_, body) = text.split_once('\n').expect("a header");
    assert_eq!(
        body,
        as_plumb_prints(&out(&expected)),
        "as helm dependency build + template"
    );
    assert!(
        body.contains("chartVersion: 1.2.3") && body.contains("color: teal"),
        "{body}"
    );
    assert!(
        err(&o).contains("helm dependency shop 1.2.3 fetched from oci://"),
        "{}",
        err(&o)
    );

    // A wrong password: one line naming the dependency, no password.
    env.secret(&oci, "wrong-Pa55");
    let fresh = env.dir.join("cache-2");
    let e = one_error_line(&env.plumb_with(
        &["render", "--app", "app.yaml", "--repo-creds", "creds"],
        &[("PLUMB_REPO_CACHE", &fresh.to_string_lossy())],
    ));
    assert!(
        e.contains("apps/web/Chart.yaml: dependency shop ~1.2.0"),
        "{e}"
    );
}
