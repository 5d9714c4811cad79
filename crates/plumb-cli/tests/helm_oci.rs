//! End-to-end tests of Helm charts from an OCI registry: the real CNCF distribution registry
//! (`PLUMB_REGISTRY`, built by `testbed/build-registry.sh`) started on 127.0.0.1 with TLS (a
//! CA made with rcgen, trusted by plumb through `SSL_CERT_FILE`) and htpasswd authentication;
//! charts packaged and pushed by the real `helm package` / `helm push` (`PLUMB_HELM`).
//!
//! Without the registry or helm every test prints `SKIP` and passes, unless
//! `REQUIRE_REGISTRY=1` / `REQUIRE_HELM=1`.

mod common;
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
fn certs() -> (String, String, String) {
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
    (ca.as_ref().pem(), cert.pem(), key.serialize_pem())
}

/// A bcrypt hash of `password` for htpasswd (the registry reads only bcrypt), made by the
/// system's crypt(3) through Python's standard library.
fn bcrypt(password: &str) -> String {
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
        let (ca, cert, key) = certs();
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
  htpasswd:
    realm: plumb-test
    path: {dir}/htpasswd
",
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
