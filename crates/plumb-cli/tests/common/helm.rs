//! helm for the tests that package charts or let plumb run it: `PLUMB_HELM`, else `helm` on
//! PATH; none found is a skip, unless `REQUIRE_HELM=1`.

#![allow(dead_code)] // each test binary uses its own subset

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The helm binary, or `None` (the test skips). Panics when `REQUIRE_HELM=1` and there is none.
pub fn helm() -> Option<PathBuf> {
    let found = match std::env::var_os("PLUMB_HELM").filter(|p| !p.is_empty()) {
        Some(p) => Some(std::fs::canonicalize(&p).expect("PLUMB_HELM resolves")),
        None => std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("helm"))
                .find(|p| p.is_file())
        }),
    };
    assert!(
        found.is_some() || std::env::var("REQUIRE_HELM").as_deref() != Ok("1"),
        "REQUIRE_HELM=1 but helm was not found (PLUMB_HELM)"
    );
    found
}

/// PATH with a directory holding a program named `helm` (plumb runs that name) first.
pub fn path_with(helm: &Path, scratch: &Path) -> OsString {
    let dir = if helm.file_name().is_some_and(|n| n == "helm") {
        helm.parent().expect("helm's directory").to_path_buf()
    } else {
        let d = scratch.join("helm-bin");
        std::fs::create_dir_all(&d).expect("helm dir");
        let _ = std::os::unix::fs::symlink(helm, d.join("helm"));
        d
    };
    let mut paths = vec![dir];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(paths).expect("PATH")
}

/// helm's configuration, cache and data kept under `home` (and no kubeconfig), for helm or a
/// plumb that runs it.
pub fn env(cmd: &mut Command, home: &Path) {
    cmd.env("HELM_CONFIG_HOME", home.join(".helm-home/config"))
        .env("HELM_CACHE_HOME", home.join(".helm-home/cache"))
        .env("HELM_DATA_HOME", home.join(".helm-home/data"))
        .env("KUBECONFIG", home.join(".helm-home/no-kubeconfig"));
}

/// Runs helm in `dir` with its configuration and cache kept there; it must succeed.
pub fn run(helm: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(helm);
    cmd.args(args).current_dir(dir);
    env(&mut cmd, dir);
    let o = cmd.output().expect("helm runs");
    assert!(
        o.status.success(),
        "helm {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A chart repository over plain HTTP on 127.0.0.1, serving the files of `root` (its
/// `index.yaml` and packaged charts) until the process ends. Returns its URL.
pub fn serve_dir(root: &Path) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // The headers, read and dropped.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let rel = path.trim_start_matches('/');
            let body = (!rel.split('/').any(|c| c == ".."))
                .then(|| std::fs::read(root.join(rel)).ok())
                .flatten();
            let mut s = &stream;
            let _ = match body {
                Some(b) => s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|_| s.write_all(&b)),
                None => s.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    url
}
