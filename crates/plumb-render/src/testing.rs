//! Test support (feature `test-support`, and this crate's own tests): `GitDaemon`, a real
//! `git daemon` serving repositories on 127.0.0.1, the remote that the repository cache's
//! tests clone and fetch — this crate's, the CLI's (`tests/remote.rs`, `multi_source.rs`,
//! `webhook.rs`) and the controller's (plumb-sync's `tests/options.rs`). Not part of plumb's
//! runtime.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`GitDaemon::serve`] waits for the daemon to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// `git daemon` serving every repository under a directory, stopped when dropped.
#[derive(Debug)]
pub struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    /// Serves every repository under `root` (`git://127.0.0.1:PORT/<path under root>`) on a
    /// free port; returns once the daemon accepts connections.
    pub fn serve(root: &Path) -> Result<GitDaemon, String> {
        let exec_path = Command::new("git")
            .arg("--exec-path")
            .output()
            .map_err(|e| format!("git --exec-path: {e}"))?;
        // git-daemon itself (not `git daemon`, whose child would outlive a kill).
        let binary =
            PathBuf::from(String::from_utf8_lossy(&exec_path.stdout).trim()).join("git-daemon");
        let mut last = String::new();
        // A free port can be taken between finding it and the daemon binding it: try again.
        for _ in 0..3 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("no free port: {e}"))?
                .port();
            let child = Command::new(&binary)
                .args([
                    "--reuseaddr",
                    "--export-all",
                    "--listen=127.0.0.1",
                    &format!("--port={port}"),
                    &format!("--base-path={}", root.display()),
                ])
                .arg(root)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{}: {e}", binary.display()))?;
            let mut daemon = GitDaemon { child, port };
            match daemon.wait_ready() {
                Ok(()) => return Ok(daemon),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Waits until the daemon accepts a connection (or has exited).
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("git daemon on port {} exited: {status}", self.port));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "git daemon on port {} not listening after {}s",
                    self.port,
                    READY_WITHIN.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The URL of the repository at `path` under the served directory.
    pub fn url(&self, path: &str) -> String {
        format!("git://127.0.0.1:{}/{path}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
