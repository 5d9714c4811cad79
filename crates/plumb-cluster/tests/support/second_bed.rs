//! A second test bed for tests that need two API servers: started with `testbed/up.sh`
//! (its own directory and ports) and stopped with `testbed/down.sh`, also when dropped so a
//! failing test leaves nothing running.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A second test bed, started by `testbed/up.sh` and stopped by `testbed/down.sh` (also on
/// drop, so a failing test does not leave it running).
pub struct SecondBed {
    dir: PathBuf,
    running: bool,
}

fn testbed_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../testbed/{name}"))
}

impl SecondBed {
    pub fn start() -> SecondBed {
        let out = Command::new(testbed_script("up.sh"))
            .arg("--no-kcm")
            .output()
            .expect("testbed/up.sh runs");
        assert!(
            out.status.success(),
            "testbed/up.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `export KUBECONFIG=... TESTBED_DIR=...`
        let stdout = String::from_utf8_lossy(&out.stdout);
        let dir = stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix("TESTBED_DIR="))
            .expect("TESTBED_DIR in up.sh's output");
        SecondBed {
            dir: PathBuf::from(dir),
            running: true,
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    pub fn server(&self) -> String {
        std::fs::read_to_string(self.dir.join("server"))
            .expect("server file")
            .trim()
            .to_string()
    }

    /// A kubeconfig field (`certificate-authority-data`, ...): up.sh writes one per line.
    pub fn kubeconfig_field(&self, field: &str) -> String {
        let text = std::fs::read_to_string(self.kubeconfig()).expect("kubeconfig");
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{field}: ")))
            .unwrap_or_else(|| panic!("{field} in the kubeconfig"))
            .to_string()
    }

    pub fn stop(&mut self) {
        if !std::mem::replace(&mut self.running, false) {
            return;
        }
        let status = Command::new(testbed_script("down.sh"))
            .arg(&self.dir)
            .status()
            .expect("testbed/down.sh runs");
        assert!(status.success(), "testbed/down.sh failed");
    }
}

impl Drop for SecondBed {
    fn drop(&mut self) {
        if self.running {
            self.running = false;
            let _ = Command::new(testbed_script("down.sh"))
                .arg(&self.dir)
                .status();
        }
    }
}
