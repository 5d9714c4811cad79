//! Remote repositories (`repoURL` `https://…`, `ssh://…`, `git://…`, `git@host:path`): kept as
//! bare mirrors in a cache directory and fetched with the `git` command, as Argo CD's repo
//! server does — so credentials come from git's own configuration (credential helpers, SSH
//! keys, `GIT_ASKPASS`), and a rendering reads the mirror like any local repository.
//!
//! A repository is cloned once (`git clone --mirror`) and fetched again (`git fetch --prune`,
//! which the mirror configuration turns into "every branch and tag") when its last fetch is
//! older than the cache's interval (a clone or fetch outcome, success or failure, stands for
//! the interval, unless [`RepoCache::expire`] — a push webhook — ends it early). The mirror
//! follows the remote's default branch and is checked to be the URL's. One git command runs
//! per repository at a time, each with a deadline ([`GIT_TIMEOUT`], Argo CD's 90 s). Errors
//! are one line: git's last message, with any password in the URL hidden.
//!
//! This is the only place plumb talks to a git server. The cache is `$PLUMB_REPO_CACHE`, else
//! under `$XDG_CACHE_HOME`. **Invariant:** a URL never reaches git as an option (it always
//! follows `--`). External tools (git here, and the kustomize and helm binaries of
//! [`crate::render`]) run through `output_within`, against a deadline.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one git command may run (Argo CD's repo server: 90 s).
pub const GIT_TIMEOUT: Duration = Duration::from_secs(90);

/// Whether `url` names a repository to fetch (not a local path or `file://` URL).
pub fn is_remote(url: &str) -> bool {
    let url = url.trim();
    if url.starts_with('-') {
        return false;
    }
    if ["https://", "http://", "ssh://", "git://"]
        .iter()
        .any(|p| url.starts_with(p))
    {
        return true;
    }
    // scp-like `user@host:path` (not a Windows drive, not an absolute path).
    match url.split_once(':') {
        Some((host, path)) => {
            host.contains('@') && !host.contains('/') && !path.is_empty() && !url.starts_with('/')
        }
        None => false,
    }
}

/// `url` with its credentials hidden: the whole user-info part (`https://TOKEN@host`,
/// `https://user:secret@host` → `https://***@host`).
pub fn redact(url: &str) -> String {
    plumb_core::redact_url(url)
}

/// `text` with the credentials of `url` (its user-info part, and each piece of it) hidden.
fn hide_password(url: &str, text: &str) -> String {
    let userinfo = url
        .split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
        .and_then(|authority| authority.rsplit_once('@'))
        .map(|(info, _)| info)
        .filter(|i| !i.is_empty());
    let Some(info) = userinfo else {
        return text.to_string();
    };
    let mut out = text.replace(info, "***");
    for piece in info.split(':').filter(|p| p.len() >= 4) {
        out = out.replace(piece, "***");
    }
    out
}

/// The last clone or fetch of one repository.
#[derive(Debug, Default)]
struct Attempt {
    at: Option<Instant>,
    /// Its error: repeated, without running git, until the interval has passed.
    error: Option<String>,
    /// The mirror's `remote.origin.url` was checked against the URL.
    verified: bool,
}

/// Bare mirrors of remote repositories under one directory.
#[derive(Debug)]
pub struct RepoCache {
    dir: PathBuf,
    /// A repository fetched less than this long ago is not fetched again.
    interval: Duration,
    /// Per repository: its lock (one git command at a time) and what it last did.
    repos: Mutex<HashMap<String, Arc<Mutex<Attempt>>>>,
    git: PathBuf,
    /// Charts from Helm chart repositories, under `dir/helm` (shared with renders, which
    /// fetch a chart's dependencies through it).
    charts: Arc<crate::chart::ChartCache>,
}

impl RepoCache {
    pub fn new(dir: impl Into<PathBuf>, interval: Duration) -> RepoCache {
        let dir = dir.into();
        RepoCache {
            charts: Arc::new(crate::chart::ChartCache::new(dir.join("helm"), interval)),
            dir,
            interval,
            repos: Mutex::new(HashMap::new()),
            git: PathBuf::from("git"),
        }
    }

    /// The same cache, with credentials for chart repositories (Argo CD's repository
    /// Secrets).
    pub fn with_creds(self, creds: crate::repocreds::CredStore) -> RepoCache {
        self.charts.set_creds(creds);
        self
    }

    /// The chart part of the cache: Helm chart repositories.
    pub fn charts(&self) -> &Arc<crate::chart::ChartCache> {
        &self.charts
    }

    /// The default location: `$PLUMB_REPO_CACHE`, else `$XDG_CACHE_HOME/plumb/repos`, else
    /// `$HOME/.cache/plumb/repos`, else a directory under the system's temporary directory.
    pub fn default_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("PLUMB_REPO_CACHE") {
            return PathBuf::from(d);
        }
        if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
            return Path::new(&d).join("plumb/repos");
        }
        if let Some(h) = std::env::var_os("HOME") {
            return Path::new(&h).join(".cache/plumb/repos");
        }
        std::env::temp_dir().join("plumb-repos")
    }

    /// Where the mirror of `url` lives.
    pub fn path_of(&self, url: &str) -> PathBuf {
        // FNV-1a: a stable name for the URL, whatever the Rust version.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in url.trim().as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let tail: String = url
            .trim_end_matches('/')
            .trim_end_matches(".git")
            .rsplit(['/', ':'])
            .next()
            .unwrap_or("repo")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(40)
            .collect();
        self.dir.join(format!("{tail}-{h:016x}.git"))
    }

    /// A local mirror of `url`, cloned or fetched as needed. Blocking (it runs git). Within
    /// the interval after a clone or fetch, its outcome stands (a failing server is asked once
    /// per interval, not once per app).
    pub fn checkout(&self, url: &str) -> Result<PathBuf, String> {
        let url = url.trim();
        let lock = {
            let mut repos = self
                .repos
                .lock()
                .map_err(|_| "repository cache poisoned".to_string())?;
            repos.entry(url.to_string()).or_default().clone()
        };
        let mut attempt = lock
            .lock()
            .map_err(|_| "repository cache poisoned".to_string())?;
        let path = self.path_of(url);
        let mirrored = crate::source::is_git_repository(&path);
        if attempt.at.is_some_and(|t| t.elapsed() < self.interval) {
            return match &attempt.error {
                Some(e) => Err(e.clone()),
                None if mirrored => Ok(path),
                None => Err(format!("{}: the mirror is gone", path.display())),
            };
        }
        let outcome = if mirrored {
            self.fetch(url, &path, !attempt.verified)
        } else {
            self.clone_mirror(url, &path)
        };
        attempt.at = Some(Instant::now());
        attempt.error = outcome.as_ref().err().cloned();
        attempt.verified |= outcome.is_ok();
        outcome.map(|()| path)
    }

    /// Forgets when the repositories whose URL `names` accepts were last fetched, so that
    /// their next [`RepoCache::checkout`] fetches (a push webhook said they changed). A
    /// fetch under way is not disturbed.
    pub fn expire(&self, names: impl Fn(&str) -> bool) -> usize {
        let Ok(repos) = self.repos.lock() else {
            return 0;
        };
        let mut expired = 0;
        for (_, attempt) in repos.iter().filter(|(url, _)| names(url)) {
            if let Ok(mut a) = attempt.lock() {
                a.at = None;
                expired += 1;
            }
        }
        expired
    }

    fn clone_mirror(&self, url: &str, path: &Path) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("{}: cannot create: {e}", self.dir.display()))?;
        let _ = std::fs::remove_dir_all(path);
        // Cloned beside its place and moved in whole: an interrupted clone never looks
        // like a repository; another process's finished clone wins.
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let target = tmp.to_string_lossy().into_owned();
        // `--`: a URL is never read as an option.
        let cloned = self
            .git(None, &["clone", "--mirror", "--quiet", "--", url, &target])
            .map_err(|e| format!("git clone {}: {}", redact(url), hide_password(url, &e)));
        if let Err(e) = cloned {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        if std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
            if !crate::source::is_git_repository(path) {
                return Err(format!(
                    "{}: cannot move the clone into place",
                    path.display()
                ));
            }
        }
        Ok(())
    }

    /// Fetches every branch and tag (the mirror's refspec) and follows the remote's default
    /// branch (HEAD); with `verify`, first checks that the mirror is this URL's.
    fn fetch(&self, url: &str, path: &Path, verify: bool) -> Result<(), String> {
        let fail = |e: String| format!("git fetch {}: {}", redact(url), hide_password(url, &e));
        if verify {
            let origin = self
                .git(Some(path), &["config", "--get", "remote.origin.url"])
                .unwrap_or_default();
            if origin.trim() != url {
                return Err(format!(
                    "{}: the mirror there is of another repository",
                    path.display()
                ));
            }
        }
        self.git(Some(path), &["fetch", "--prune", "--quiet"])
            .map_err(fail)?;
        // The remote's default branch may have moved (or an interrupted clone left HEAD
        // dangling): point HEAD where the remote's does.
        let head = self
            .git(Some(path), &["ls-remote", "--symref", "origin", "HEAD"])
            .map_err(fail)?;
        if let Some(target) = head
            .lines()
            .find_map(|l| l.strip_prefix("ref: "))
            .and_then(|l| l.split_whitespace().next())
            .filter(|r| r.starts_with("refs/heads/"))
        {
            self.git(Some(path), &["symbolic-ref", "HEAD", target])
                .map_err(fail)?;
        }
        Ok(())
    }

    /// Runs git (in `dir` when given), without a terminal to prompt on, for at most
    /// [`GIT_TIMEOUT`] (a stalled server must not hold the repository's lock for ever).
    fn git(&self, dir: Option<&Path>, args: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new(&self.git);
        if let Some(d) = dir {
            cmd.arg("-C").arg(d);
        }
        cmd.args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            // A transfer slower than 1 KB/s for 30 s is given up (before the deadline).
            .env("GIT_HTTP_LOW_SPEED_LIMIT", "1000")
            .env("GIT_HTTP_LOW_SPEED_TIME", "30");
        let (status, out, err) = output_within(&mut cmd, GIT_TIMEOUT)?;
        let out = String::from_utf8_lossy(&out).into_owned();
        let err = String::from_utf8_lossy(&err);
        if status.success() {
            return Ok(out);
        }
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed")
            .trim()
            .to_string();
        Err(last)
    }
}

/// Runs `cmd` without input, its output collected, for at most `timeout`: a command
/// still running then is killed and this is an error ("timed out after Ns").
pub(crate) fn output_within(
    cmd: &mut Command,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>), String> {
    use std::io::Read;
    use std::process::Stdio;
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {}s", timeout.as_secs()));
            }
            Err(e) => return Err(format!("waiting for {program}: {e}")),
        }
    };
    Ok((
        status,
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_and_redaction() {
        for remote in [
            "https://github.com/org/repo.git",
            "ssh://git@host/org/repo",
            "git://127.0.0.1:9418/repo",
            "git@github.com:org/repo.git",
        ] {
            assert!(is_remote(remote), "{remote}");
        }
        for local in [
            "/srv/repo",
            "file:///srv/repo",
            "repo",
            "./a:b",
            "-oProxyCommand=x@host:path",
        ] {
            assert!(!is_remote(local), "{local}");
        }
        assert_eq!(
            redact("https://bot:s3cret@git.example.com/r.git"),
            "https://***@git.example.com/r.git"
        );
        assert_eq!(
            redact("https://ghp_TOKEN123@github.com/o/r.git"),
            "https://***@github.com/o/r.git"
        );
        assert_eq!(
            redact("https://git.example.com/r.git"),
            "https://git.example.com/r.git"
        );
        assert_eq!(
            hide_password("https://bot:s3cret@h/r", "fatal: auth failed for s3cret"),
            "fatal: auth failed for ***"
        );
        assert_eq!(
            hide_password(
                "https://ghp_TOKEN123@h/r",
                "fatal: 'https://ghp_TOKEN123@h/r' denied"
            ),
            "fatal: 'https://***@h/r' denied"
        );
        let cache = RepoCache::new("/c", Duration::from_secs(60));
        let a = cache.path_of("https://github.com/org/payments.git");
        assert!(
            a.starts_with("/c") && a.to_string_lossy().contains("payments-"),
            "{a:?}"
        );
        assert_ne!(a, cache.path_of("https://github.com/other/payments.git"));
    }

    /// A real clone and fetch, from a repository served by `git daemon` on a free port.
    #[test]
    fn clones_then_fetches_what_is_pushed() {
        let root = std::env::temp_dir().join(format!("plumb-remote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let origin = root.join("served/app.git");
        std::fs::create_dir_all(&origin).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        git(&origin, &["init", "-q", "--bare"]);
        let work = root.join("work");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["config", "user.email", "t@example.com"]);
        git(&work, &["config", "user.name", "t"]);
        std::fs::write(work.join("a.txt"), "1").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "one"]);
        git(&work, &["push", "-q", origin.to_str().unwrap(), "main"]);
        let first = git(&work, &["rev-parse", "HEAD"]);

        let daemon = crate::testing::GitDaemon::serve(&root.join("served")).expect("git daemon");
        let url = daemon.url("app.git");
        let cache = RepoCache::new(root.join("cache"), Duration::ZERO);
        let mirror = cache.checkout(&url).expect("cloned");
        assert_eq!(git(&mirror, &["rev-parse", "main"]), first);

        std::fs::write(work.join("a.txt"), "2").unwrap();
        git(&work, &["commit", "-qam", "two"]);
        git(&work, &["push", "-q", origin.to_str().unwrap(), "main"]);
        let second = git(&work, &["rev-parse", "HEAD"]);
        assert_eq!(cache.checkout(&url).expect("fetched"), mirror);
        assert_eq!(git(&mirror, &["rev-parse", "main"]), second);

        // The remote's default branch moves: the mirror's HEAD follows.
        git(&origin, &["branch", "-m", "main", "trunk"]);
        git(&origin, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
        cache.checkout(&url).expect("fetched");
        assert_eq!(git(&mirror, &["rev-parse", "HEAD"]), second);
        assert_eq!(git(&mirror, &["symbolic-ref", "HEAD"]), "refs/heads/trunk");

        let missing = cache.checkout(&daemon.url("nope.git"));
        assert!(missing.is_err_and(|e| e.starts_with("git clone git://")));

        // Within the interval a checkout reads the mirror as it is, until a push webhook
        // expires it.
        let slow = RepoCache::new(root.join("cache"), Duration::from_secs(3600));
        let mirror = slow.checkout(&url).expect("fetched");
        std::fs::write(work.join("a.txt"), "3").unwrap();
        git(&work, &["commit", "-qam", "three"]);
        git(
            &work,
            &["push", "-q", origin.to_str().unwrap(), "main:trunk"],
        );
        let third = git(&work, &["rev-parse", "HEAD"]);
        slow.checkout(&url).expect("cached");
        assert_eq!(git(&mirror, &["rev-parse", "trunk"]), second);
        assert_eq!(slow.expire(|u| u.ends_with("/other.git")), 0);
        assert_eq!(slow.expire(|u| u == url), 1);
        slow.checkout(&url).expect("fetched");
        assert_eq!(git(&mirror, &["rev-parse", "trunk"]), third);
        drop(daemon);
        let _ = std::fs::remove_dir_all(&root);
    }
}
