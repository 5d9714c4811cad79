//! `plumb ui`: the read-only web pages ([`plumb_web::server`]) over a snapshot or a cluster.
//! The list reads the Applications' status; an app's page is `plumb doctor` on that app, run
//! with the same arguments the command takes ([`doctor_cmd::diagnose_argv`]), so the page and
//! the command never disagree.

use crate::cluster_args::ClusterArgs;
use crate::doctor_cmd;
use anyhow::{Result, anyhow, bail};
use plumb_web::server::{Access, AppRow, AppView, Backend};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct UiArgs {
    /// A `plumb snapshot` directory: its Applications, their live objects and the context.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "cluster",
        conflicts_with = "cluster"
    )]
    live: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The repository the apps render from, as `plumb doctor --repo` (else each app's
    /// repoURL through the repository cache).
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
    /// Where to listen. Port 0 picks a free one. An address other than loopback needs
    /// --token-file.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A file holding the token every request must carry (as a bearer token, or once in the
    /// URL, exchanged for a session cookie).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Another name the server answers to (a `Host` header), e.g. `plumb.example.com:8080`;
    /// loopback names are always accepted. Requests for any other name are refused (421).
    #[arg(long, value_name = "HOST[:PORT]")]
    allowed_host: Vec<String>,
    /// Offer "Refresh now" on each app's page: a POST (with the page's CSRF token) that
    /// refreshes the app as `plumb app get --refresh` does, writing its status with your
    /// credentials. The pages' only write.
    #[arg(long, requires = "cluster")]
    allow_refresh: bool,
}

struct UiBackend {
    live: Option<PathBuf>,
    cluster: ClusterArgs,
    /// `--repo`, for a refresh's render.
    repo: Option<PathBuf>,
    /// The arguments every app's `plumb doctor` takes besides the app.
    doctor_argv: Vec<String>,
}

impl UiBackend {
    fn applications(&self) -> Result<Vec<Value>> {
        match &self.live {
            Some(dir) => doctor_cmd::snapshot_applications(dir),
            None => crate::app_cmd::read_apps(&self.cluster, None),
        }
    }
}

fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A list row: what the Application's status says.
fn row(app: &Value) -> AppRow {
    let sync = plumb_doctor::status::read(app);
    AppRow {
        namespace: text(app, "/metadata/namespace"),
        name: text(app, "/metadata/name"),
        project: text(app, "/spec/project"),
        sync: text(app, "/status/sync/status"),
        health: text(app, "/status/health/status"),
        revision: text(app, "/status/sync/revision"),
        last_sync: sync.last_sync_at.map(plumb_core::time::format_rfc3339),
        verdict: plumb_doctor::status_verdict(app),
    }
}

impl Backend for UiBackend {
    fn apps(&self) -> Result<Vec<AppRow>, String> {
        self.applications()
            .map(|apps| apps.iter().map(row).collect())
            .map_err(|e| e.to_string())
    }

    fn app(&self, namespace: &str, name: &str) -> Result<Option<AppView>, String> {
        let apps = self.applications().map_err(|e| e.to_string())?;
        let Some(application) = apps.into_iter().find(|a| {
            text(a, "/metadata/namespace") == namespace && text(a, "/metadata/name") == name
        }) else {
            return Ok(None);
        };
        let argv: Vec<String> = std::iter::once(format!("{namespace}/{name}"))
            .chain(self.doctor_argv.iter().cloned())
            .collect();
        let d = doctor_cmd::diagnose_argv(&argv).map_err(|e| e.to_string())?;
        // The files the page shows lines of: where git declares each field, but a Secret's.
        let mut files = BTreeMap::new();
        for f in &d.report.findings {
            let secret = f.resource.is_secret();
            if let Some(at) = f.declared_at.as_ref().filter(|_| !secret)
                && !files.contains_key(&at.file)
                && let Some(t) = d.file(&at.file)
            {
                files.insert(at.file.clone(), t);
            }
        }
        // The resources that differ, with the live object each was compared with (for the
        // managers that last wrote its fields).
        let changes = d
            .diffs
            .iter()
            .filter(|r| r.status != plumb_diff::compare::Status::Equal)
            .map(|r| plumb_web::diff::ResourceChange {
                resource: r.key.to_string(),
                status: format!("{:?}", r.status),
                live: r.result.normalized_live.clone(),
                desired: r.result.predicted_live.clone(),
                live_object: d
                    .live
                    .iter()
                    .find(|o| plumb_core::ResourceKey::of(o).as_ref() == Some(&r.key))
                    .cloned(),
            })
            .collect();
        Ok(Some(AppView {
            report: d.report,
            files,
            changes,
            application,
            live: d.live,
        }))
    }

    fn render_at(&self, namespace: &str, name: &str, revision: &str) -> Result<Vec<Value>, String> {
        // The doctor's own pipeline at that revision (its comparison is not used).
        let argv: Vec<String> = [format!("{namespace}/{name}")]
            .into_iter()
            .chain(self.doctor_argv.iter().cloned())
            .chain(["--revision".to_string(), revision.to_string()])
            .collect();
        doctor_cmd::diagnose_argv(&argv)
            .map(|d| d.rendered)
            .map_err(|e| format!("at {revision}: {e}"))
    }

    fn refresh(&self, namespace: &str, name: &str) -> Result<bool, String> {
        if self.live.is_some() {
            return Err(
                "a snapshot is not refreshed: its pages are made from it on each request".into(),
            );
        }
        self.refresh_app(namespace, name).map_err(|e| e.to_string())
    }
}

impl UiBackend {
    /// `plumb app get --refresh` on one app of the cluster.
    fn refresh_app(&self, namespace: &str, name: &str) -> Result<bool> {
        let Some(app) = crate::app_cmd::read_apps(&self.cluster, Some(namespace))?
            .into_iter()
            .find(|a| text(a, "/metadata/name") == name)
        else {
            return Ok(false);
        };
        let c = crate::cluster_args::connect(&self.cluster)?;
        let opts = plumb_sync::run::RunOptions {
            repo_override: self.repo.clone(),
            destinations: Some(crate::app_cmd::destinations()),
            ..Default::default()
        };
        c.block_on(plumb_sync::run::refresh_app(
            &c.cluster,
            &app,
            &opts,
            std::time::SystemTime::now(),
        ))
        .map_err(|e| anyhow!("{e}"))?;
        Ok(true)
    }
}

/// 32 random bytes as hex, from the kernel.
fn session_secret() -> Result<String> {
    use std::io::Read as _;
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| anyhow!("cannot read /dev/urandom for a session secret: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The token in `file` (trimmed; at least 16 characters), named by `flag` in errors.
fn read_token(flag: &str, file: Option<&std::path::Path>) -> Result<Option<String>> {
    let Some(f) = file else { return Ok(None) };
    let t = std::fs::read_to_string(f)
        .map_err(|e| anyhow!("{flag} {}: {e}", f.display()))?
        .trim()
        .to_string();
    if t.len() < 16 {
        bail!(
            "{flag} {}: the token must be at least 16 characters",
            f.display()
        );
    }
    Ok(Some(t))
}

/// The refusal of pages on an address other than loopback without a token.
fn not_loopback(listen_flag: &str, addr: SocketAddr, token_flag: &str) -> anyhow::Error {
    anyhow!(
        "{listen_flag} {addr}: not a loopback address; pass {token_flag} FILE so that only holders of the token can read the pages"
    )
}

/// Who may read the pages served at `addr`: the names of the port (loopback's, the address,
/// `allowed`), and the token of `token_file`, which an address other than loopback requires.
/// `listen_flag` and `token_flag` name the options in errors.
pub fn access(
    addr: SocketAddr,
    listen_flag: &str,
    token_flag: &str,
    token_file: Option<&std::path::Path>,
    allowed: &[String],
) -> Result<Access> {
    let token = read_token(token_flag, token_file)?;
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(not_loopback(listen_flag, addr, token_flag));
    }
    let port = addr.port();
    let mut hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("localhost:{port}"),
        addr.to_string(),
    ];
    hosts.extend(allowed.iter().cloned());
    Ok(Access {
        hosts,
        token,
        session: session_secret()?,
        refresh: false,
        csrf: session_secret()?,
    })
}

/// The backend of the controller's pages: its cluster, with the credentials it runs with.
pub fn cluster_backend(cluster: &ClusterArgs) -> Arc<dyn Backend> {
    let doctor_argv = cluster.argv();
    Arc::new(UiBackend {
        live: None,
        repo: None,
        cluster: ClusterArgs {
            cluster: true,
            ..cluster.clone()
        },
        doctor_argv,
    })
}

pub fn run(args: UiArgs) -> Result<u8> {
    // Refused before anything is bound, naming the address as given.
    if !args.listen.ip().is_loopback() && args.token_file.is_none() {
        return Err(not_loopback("--listen", args.listen, "--token-file"));
    }
    let mut doctor_argv: Vec<String> = Vec::new();
    if let Some(dir) = &args.live {
        doctor_argv.extend(["--live".into(), dir.display().to_string()]);
    }
    if args.cluster.cluster {
        doctor_argv.extend(args.cluster.argv());
    }
    if let Some(repo) = &args.repo {
        doctor_argv.extend(["--repo".into(), repo.display().to_string()]);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(args.listen))
        .map_err(|e| anyhow!("--listen {}: {e}", args.listen))?;
    let addr = listener.local_addr()?;
    let port = addr.port();
    let access = access(
        addr,
        "--listen",
        "--token-file",
        args.token_file.as_deref(),
        &args.allowed_host,
    )?;
    let shown = if addr.ip().is_unspecified() {
        format!("127.0.0.1:{port}")
    } else {
        addr.to_string()
    };
    let url = match &access.token {
        Some(t) => format!("http://{shown}/?token={t}"),
        None => format!("http://{shown}/"),
    };
    let access = Access {
        refresh: args.allow_refresh,
        ..access
    };
    let backend = Arc::new(UiBackend {
        live: args.live,
        repo: args.repo,
        cluster: args.cluster,
        doctor_argv,
    });
    let router = plumb_web::server::router(backend, access);
    println!("{url}");
    use std::io::Write as _;
    std::io::stdout().flush()?;
    runtime.block_on(async {
        tokio::select! {
            () = crate::serve::serve_router(listener, router) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
    Ok(crate::EXIT_IN_SYNC)
}
