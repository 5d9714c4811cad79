//! The first steps of the application pipeline, the same for every command and the
//! controller: an Application's source → where its repository is ([`locate`]) → the
//! repository opened at its revision ([`fetch`]); [`render_fetched`](crate::render::render_fetched)
//! renders it.
//!
//! The rules, in one place:
//! - `--repo` (an [`Overrides`]) replaces every source's `repoURL`;
//! - a `file://` URL or a path is a local repository; a relative path is relative to the
//!   directory the Application was read from (its file's), and refused
//!   ([`FetchError::RelativeRepoUrl`]) when it was read from a cluster or a snapshot (neither
//!   a controller's working directory nor a snapshot's means anything to it);
//! - a remote URL (`https://`, `ssh://`, `git://`, `user@host:path`) is read from its mirror in
//!   the repository cache ([`RepoCache`]), cloned or fetched first — the one step that blocks on
//!   the network;
//! - a git repository is read at the revision asked for (`--revision`), else the source's
//!   `targetRevision`, else `HEAD`; a plain directory has only its working tree (asking it
//!   for a revision is an error; its `targetRevision` is ignored);
//! - a `chart` source is read from its HTTP(S) chart repository or OCI registry through the
//!   repository cache's [`ChartCache`](crate::chart::ChartCache): the version resolved, the
//!   chart unpacked.
//!
//! [`fetch`] blocks (git, HTTP); the sync runner calls it in `spawn_blocking`.
//!
//! ```no_run
//! use plumb_core::argo::AppSource;
//! use plumb_render::fetch::{Overrides, fetch, locate};
//! use plumb_render::remote::RepoCache;
//! use std::path::Path;
//!
//! let source = AppSource { repo_url: "https://github.com/org/deploy.git".into(),
//!     path: "overlays/prod".into(), ..AppSource::default() };
//! let cache = RepoCache::new(RepoCache::default_dir(), std::time::Duration::ZERO);
//! let at = locate(&source, &Overrides::default(), Some(Path::new("."))).unwrap();
//! let fetched = fetch(&at, &cache).unwrap();
//! println!("{} at {}", fetched.dir.display(), fetched.commit);
//! ```

use crate::LoadError;
use crate::remote::{RepoCache, is_remote};
use crate::source::{GitSource, SourceFs, is_git_repository, open_source};
use plumb_core::argo::AppSource;
use std::path::{Path, PathBuf};

/// What the caller says instead of the Application (the CLI's `--repo/--revision/--path`; the
/// runner's local clone).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// A local repository read instead of the source's `repoURL`.
    pub repo: Option<PathBuf>,
    /// A revision asked for explicitly: an error for a plain directory.
    pub revision: Option<String>,
    /// The path inside the repository, instead of the source's.
    pub path: Option<String>,
}

/// Where a source's repository is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoRef {
    /// A directory on this machine: a git repository or a plain directory.
    Local(PathBuf),
    /// A remote URL, read from its mirror in the repository cache.
    Remote(String),
    /// A chart of a Helm chart repository (`spec.source.chart`), downloaded into the
    /// repository cache's `helm/`.
    Chart { repo: String, chart: String },
}

/// Which revision of the repository to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// Asked for explicitly: a plain directory cannot serve it.
    Explicit(String),
    /// The source's `targetRevision` (empty: `HEAD`); a plain directory ignores it.
    Target(String),
}

/// One source, located: what to render and where its repository is.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRef {
    /// The source as it renders (its `path` as overridden).
    pub source: AppSource,
    pub repo: RepoRef,
    pub revision: Revision,
}

/// A source's repository, opened at its revision.
pub struct Fetched {
    /// The repository's directory: the local one, or the cache's mirror of a remote.
    pub dir: PathBuf,
    /// Whether `dir` is the cache's (bare) mirror of a remote, not a work tree of the user's.
    pub mirrored: bool,
    /// The repository at the revision.
    pub fs: Box<dyn SourceFs>,
    /// The full commit id; empty for a plain directory; a chart's version.
    pub commit: String,
    /// The revision shown, when the repository's own label is not it (a chart: its
    /// version).
    pub revision_label: Option<String>,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("dir", &self.dir)
            .field("mirrored", &self.mirrored)
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

/// Why a source could not be located or fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Neither a usable local path nor a remote URL.
    #[error(
        "repoURL {url:?} is neither a local repository (an absolute path or file:// URL) nor a remote one (https://, ssh://, git://, user@host:path)"
    )]
    NotARepository { url: String },
    /// A relative path, and no Application file to resolve it from (an Application read
    /// from a cluster or a snapshot).
    #[error(
        "repoURL {url:?} is a relative path, which only an Application read from a file may have (it is relative to that file); use an absolute path, a file:// URL or a remote URL, or pass --repo DIR"
    )]
    RelativeRepoUrl { url: String },
    /// A chart source's `repoURL` that is neither an HTTP(S) chart repository nor an OCI
    /// registry.
    #[error(
        "repoURL {url:?} of a chart source is neither an HTTP(S) chart repository nor an OCI registry (oci://host/path or host/path)"
    )]
    NotAChartRepository { url: String },
    /// A clone or fetch of a remote failed (git's message, credentials hidden).
    #[error("{0}")]
    Remote(String),
    /// A chart could not be had from its repository.
    #[error(transparent)]
    Chart(#[from] crate::chart::ChartError),
    /// The repository or the revision cannot be opened.
    #[error(transparent)]
    Open(#[from] LoadError),
}

/// Where `source`'s repository is, and what to read of it. `base` is the directory relative
/// `repoURL`s are read from (the Application file's); `None` refuses them.
pub fn locate(
    source: &AppSource,
    overrides: &Overrides,
    base: Option<&Path>,
) -> Result<SourceRef, FetchError> {
    let chart = source.chart.as_deref().map(str::trim).unwrap_or("");
    let repo = match &overrides.repo {
        Some(r) => RepoRef::Local(r.clone()),
        None if !chart.is_empty() => chart_repo_of(&source.repo_url, chart)?,
        None => repo_of(&source.repo_url, base)?,
    };
    let revision = match &overrides.revision {
        Some(r) => Revision::Explicit(r.clone()),
        None => Revision::Target(source.target_revision.trim().to_string()),
    };
    let mut source = source.clone();
    if let RepoRef::Chart { chart, .. } = &repo {
        // The chart's directory inside its archive.
        source.path = chart.clone();
    }
    if let Some(p) = &overrides.path {
        source.path = p.clone();
    }
    Ok(SourceRef {
        source,
        repo,
        revision,
    })
}

/// `repoURL` of a chart source: an HTTP(S) chart repository or an OCI registry.
fn chart_repo_of(url: &str, chart: &str) -> Result<RepoRef, FetchError> {
    let url = url.trim();
    if url.starts_with("https://")
        || url.starts_with("http://")
        || crate::chart::is_oci_chart_repo(url)
    {
        return Ok(RepoRef::Chart {
            repo: url.to_string(),
            chart: chart.to_string(),
        });
    }
    Err(FetchError::NotAChartRepository {
        url: crate::remote::redact(url),
    })
}

/// `repoURL` as a repository: remote, `file://`, or a path (relative to `base`).
fn repo_of(url: &str, base: Option<&Path>) -> Result<RepoRef, FetchError> {
    // A URL plumb does not recognise may still carry credentials (`HTTPS://u:tok@…`).
    let not_a_repository = || FetchError::NotARepository {
        url: crate::remote::redact(url),
    };
    if url.is_empty() {
        // No repoURL: the current directory, for a command run in a repository.
        return base
            .map(|_| RepoRef::Local(PathBuf::from(".")))
            .ok_or_else(not_a_repository);
    }
    if is_remote(url) {
        return Ok(RepoRef::Remote(url.trim().to_string()));
    }
    if url.contains("://") && !url.starts_with("file://") {
        return Err(not_a_repository());
    }
    let local = PathBuf::from(url.strip_prefix("file://").unwrap_or(url));
    if local.is_absolute() {
        return Ok(RepoRef::Local(local));
    }
    base.map(|b| RepoRef::Local(b.join(&local)))
        .ok_or_else(|| FetchError::RelativeRepoUrl {
            url: url.to_string(),
        })
}

/// The repository of `at`, cloned or fetched into `cache` when it is remote (blocking: it runs
/// git), opened at its revision.
pub fn fetch(at: &SourceRef, cache: &RepoCache) -> Result<Fetched, FetchError> {
    let (dir, mirrored) = match &at.repo {
        RepoRef::Local(dir) => (dir.clone(), false),
        RepoRef::Remote(url) => (cache.checkout(url).map_err(FetchError::Remote)?, true),
        RepoRef::Chart { repo, chart } => {
            let target = match &at.revision {
                Revision::Explicit(r) | Revision::Target(r) => r,
            };
            let pass = at.source.helm.as_ref().is_some_and(|h| h.pass_credentials);
            let got = cache.charts().get(repo, chart, target, pass)?;
            let fs = open_source(&got.root, None)?;
            return Ok(Fetched {
                dir: got.root,
                mirrored: true,
                fs,
                commit: got.version.clone(),
                revision_label: Some(got.version),
            });
        }
    };
    let (fs, commit): (Box<dyn SourceFs>, String) = if is_git_repository(&dir) {
        let rev = match &at.revision {
            Revision::Explicit(r) => Some(r.as_str()),
            Revision::Target(r) => (!r.is_empty()).then_some(r.as_str()),
        };
        let git = GitSource::open(&dir, rev)?;
        let commit = git.commit_id();
        (Box::new(git), commit)
    } else {
        let explicit = match &at.revision {
            Revision::Explicit(r) => Some(r.as_str()),
            Revision::Target(_) => None,
        };
        (open_source(&dir, explicit)?, String::new())
    };
    Ok(Fetched {
        dir,
        mirrored,
        fs,
        commit,
        revision_label: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(url: &str) -> AppSource {
        AppSource {
            repo_url: url.into(),
            path: "app".into(),
            target_revision: " main ".into(),
            ..AppSource::default()
        }
    }

    #[test]
    fn one_rule_for_every_repo_url() {
        let o = Overrides::default();
        let base = Some(Path::new("/apps"));
        let at = |url: &str, base| locate(&source(url), &o, base).map(|s| s.repo);
        assert_eq!(
            at("https://h/r.git", None).unwrap(),
            RepoRef::Remote("https://h/r.git".into())
        );
        assert_eq!(
            at("git@h:r.git", base).unwrap(),
            RepoRef::Remote("git@h:r.git".into())
        );
        assert_eq!(
            at("file:///srv/r", None).unwrap(),
            RepoRef::Local("/srv/r".into())
        );
        assert_eq!(at("/srv/r", None).unwrap(), RepoRef::Local("/srv/r".into()));
        // Relative: to the Application file's directory; refused without one.
        assert_eq!(
            at("repo", base).unwrap(),
            RepoRef::Local("/apps/repo".into())
        );
        assert_eq!(
            at("file://repo", base).unwrap(),
            RepoRef::Local("/apps/repo".into())
        );
        for relative in ["repo", "../repo", "file://repo"] {
            let e = at(relative, None).unwrap_err();
            assert!(
                matches!(&e, FetchError::RelativeRepoUrl { url } if url == relative),
                "{e}"
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("repoURL {relative:?} is a relative path"))
            );
        }
        assert!(matches!(
            at("s3://bucket/x", base),
            Err(FetchError::NotARepository { .. })
        ));
        assert_eq!(at("", base).unwrap(), RepoRef::Local(".".into()));
        assert!(at("", None).is_err());
    }

    #[test]
    fn overrides_win() {
        let o = Overrides {
            repo: Some("/clone".into()),
            revision: Some("v2".into()),
            path: Some("other".into()),
        };
        let at = locate(&source("https://h/r.git"), &o, None).unwrap();
        assert_eq!(at.repo, RepoRef::Local("/clone".into()));
        assert_eq!(at.revision, Revision::Explicit("v2".into()));
        assert_eq!(at.source.path, "other");
        let at = locate(&source("/srv/r"), &Overrides::default(), None).unwrap();
        assert_eq!(at.revision, Revision::Target("main".into()));
        assert_eq!(at.source.path, "app");
    }

    #[test]
    fn a_plain_directory_ignores_target_revision_and_refuses_an_explicit_one() {
        let dir = std::env::temp_dir().join(format!("plumb-fetch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("app")).expect("mkdir");
        let cache = RepoCache::new(dir.join("cache"), std::time::Duration::ZERO);
        let mut at =
            locate(&source(&dir.to_string_lossy()), &Overrides::default(), None).expect("located");
        let fetched = fetch(&at, &cache).expect("a working tree");
        assert_eq!((fetched.commit.as_str(), fetched.mirrored), ("", false));
        at.revision = Revision::Explicit("main".into());
        let err = fetch(&at, &cache).expect_err("no revisions in a plain directory");
        assert!(err.to_string().contains("not a git repository"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
