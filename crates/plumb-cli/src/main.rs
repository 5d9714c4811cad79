//! `plumb`: a GitOps engine and drift doctor for Kubernetes. This binary is thin:
//! argument parsing, reading inputs, printing; the work is in the library crates. `anyhow`
//! lives here only; a tokio runtime exists only around cluster calls (`cluster_args`).
//!
//! Commands, one file each: `diff`, `render`, `snapshot`, `doctor` (with `--preflight` and
//! `--fix`), `blame`, `health`, `app get|history|list|sync|wait|diff|rollback|terminate-op|delete`
//! (`app_cmd`), `controller` (`controller_cmd`, its HTTP endpoint `serve`). Shared option
//! groups: `source_args` (where desired state comes from) and `cluster_args` (where live state
//! comes from). Exit codes: 0 in sync, 1 differences or findings, 2 error; an error prints as
//! one `error:` line (plus `hint:` lines) on stderr.
//!
//! End-to-end tests share `tests/common/mod.rs` and, for the test-bed tests that run the
//! controller or `plumb app`, `tests/common/testbed.rs`.

mod app_cmd;
mod appset_cmd;
mod blame_cmd;
mod cluster_args;
mod controller_cmd;
mod diff_cmd;
mod doctor_cmd;
mod health_cmd;
mod output;
mod preview_cmd;
mod render_cmd;
mod serve;
mod snapshot_cmd;
mod source_args;
mod ui_cmd;

use clap::{Parser, Subcommand};

/// plumb allocates millions of small maps and strings (parsed objects); mimalloc's
/// per-thread free lists halve the time glibc's allocator spends on them across threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "plumb",
    version,
    about = "GitOps engine and drift doctor for Kubernetes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Only the command run has its arguments built (`defer`): building all eleven commands'
/// arguments was about half a millisecond of every start, a twentieth of a render.
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Compare desired manifests with live objects exactly as Argo CD does.
    ///
    /// Exit code: 0 in sync, 1 differences (modified, missing or extra), 2 error.
    Diff(diff_cmd::DiffArgs),
    /// Render a source (directory, kustomization, Helm chart) at a git revision, as Argo
    /// CD's repo server would, optionally with the file:line of every value.
    Render(render_cmd::RenderArgs),
    /// Save what a diagnosis needs from a cluster as YAML files: the app's objects (with
    /// managedFields), namespaces, webhooks, admission policies, HPAs, CRDs, Applications.
    /// Secret values are never written. `plumb diff --live DIR` reads it back.
    Snapshot(snapshot_cmd::SnapshotArgs),
    /// plumb's Applications in a cluster: get, history, list, sync, wait, diff, rollback,
    /// terminate-op, delete.
    App(app_cmd::AppArgs),
    /// An object's YAML with each value's last writer (manager, operation, time) from its
    /// managedFields, like kubectl-blame.
    Blame(blame_cmd::BlameArgs),
    /// Why an app stays OutOfSync: per differing field, who rewrites it (webhook,
    /// controller, person) with evidence, where git declares it, loop or drift, and the fix.
    ///
    /// Exit code: 0 nothing to report, 1 findings, 2 error.
    Doctor(doctor_cmd::DoctorArgs),
    /// Reconcile every plumb Application: refresh, automated sync, self-heal, retries.
    Controller(Box<controller_cmd::ControllerArgs>),
    /// The health of objects in files (user Lua scripts, built-in checks, generic
    /// conditions): `GROUP/KIND NAMESPACE/NAME STATUS MESSAGE`. Exit code 0.
    Health(health_cmd::HealthArgs),
    /// ApplicationSets: `generate` prints the Applications one generates, without a cluster.
    Appset(appset_cmd::AppsetArgs),
    /// What a change does to every Application of a repository: each rendered at the base
    /// and at the head revision, diffed per object, as a pull-request comment.
    ///
    /// Exit code: 0 no change, 1 changes (see --fail-on), 2 error.
    Preview(preview_cmd::PreviewArgs),
    /// Read-only web pages: the apps, and each app's "why OutOfSync" (the doctor's report).
    /// Prints its URL first; serves until interrupted.
    Ui(ui_cmd::UiArgs),
}

/// Exit codes shared by every command.
pub const EXIT_IN_SYNC: u8 = 0;
pub const EXIT_DIFFERENCES: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                EXIT_ERROR
            } else {
                EXIT_IN_SYNC
            });
        }
    };
    let result = match cli.command {
        Command::Diff(args) => diff_cmd::run(args),
        Command::Render(args) => render_cmd::run(args),
        Command::Snapshot(args) => snapshot_cmd::run(args),
        Command::App(args) => app_cmd::run(args),
        Command::Blame(args) => blame_cmd::run(args),
        Command::Doctor(args) => doctor_cmd::run(args),
        Command::Controller(args) => controller_cmd::run(*args),
        Command::Health(args) => health_cmd::run(args),
        Command::Appset(args) => appset_cmd::run(args),
        Command::Ui(args) => ui_cmd::run(args),
        Command::Preview(args) => preview_cmd::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(EXIT_IN_SYNC);
            }
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "error: {}", one_line_message(&e));
            for cause in e.chain().skip(1) {
                if let Some(h) = cause.downcast_ref::<Hint>() {
                    let _ = writeln!(err, "hint: {}", h.0);
                }
            }
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// An error and its causes as one line: `outer: inner: …`. A cause whose text the line
/// already holds is left out (library errors often display their source too, which
/// would otherwise repeat the same clause), and line breaks inside a message are shown
/// as `\n`, so the error is always exactly one line.
fn one_line_message(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain().filter(|c| c.downcast_ref::<Hint>().is_none()) {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace('\n', "\\n")
}

/// A hint attached (as the source) to an error, printed as `hint: …` after it.
#[derive(Debug)]
pub struct Hint(pub String);

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Hint {}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
