//! A chart's dependencies, as Argo CD's repo server has them before `helm template`: when
//! `Chart.yaml` (or an `apiVersion: v1` chart's `requirements.yaml`) lists a dependency that
//! `charts/` lacks, Argo CD runs `helm dependency build`; plumb fetches it itself, through
//! the repository cache's [`ChartCache`] (the same credentials, deadlines, size limits and
//! cache as a `spec.source.chart`), into the private copy of the source that helm renders.
//!
//! - `https://…`/`http://…` chart repositories and `oci://…` registries: the version
//!   `Chart.lock` (`requirements.lock`) pins, else the newest matching `Chart.yaml`'s
//!   constraint; a lock whose version no longer satisfies the constraint is refused as
//!   helm refuses it (out of sync);
//! - `@name` / `alias:name`: the repository Secret of that `name` (Argo CD adds its Helm
//!   repositories to helm under their names);
//! - `file://PATH`: a chart directory inside the same repository (relative to the chart);
//!   one outside is refused;
//! - no repository: the chart must already be in `charts/`.
//!
//! A dependency already in `charts/` (a directory whose `Chart.yaml` names it, or a
//! `NAME-VERSION.tgz`) is used as it is: no network. Every failure is one line naming
//! `Chart.yaml`, the dependency, and why — never a render without it.

use super::ChartCache;
use crate::LoadError;
use crate::source::join;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Default, Deserialize)]
struct DependencyFile {
    #[serde(default)]
    dependencies: Option<Vec<Dependency>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Dependency {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    repository: String,
}

/// Where a dependency comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    /// A chart repository or registry URL.
    Remote(String),
    /// A repository-relative chart directory.
    Local(String),
    /// Nowhere: it must be in `charts/`.
    Vendored,
}

/// Fills `charts/` of the chart at `chart` (repository-relative, in the materialized source
/// at `root`) with the dependencies it lacks. Returns a note per dependency fetched.
pub(crate) fn build_missing(
    root: &Path,
    chart: &str,
    cache: Option<&ChartCache>,
) -> Result<Vec<String>, LoadError> {
    let chart_dir = root.join(chart);
    let (listing, lock) = if chart_dir.join("requirements.yaml").is_file()
        && !declares_dependencies(&chart_dir.join("Chart.yaml"))?
    {
        ("requirements.yaml", "requirements.lock")
    } else {
        ("Chart.yaml", "Chart.lock")
    };
    let listing_rel = rel(chart, listing);
    let Some(deps) = read_dependencies(&chart_dir.join(listing), &listing_rel)? else {
        return Ok(Vec::new());
    };
    let locked = read_dependencies(&chart_dir.join(lock), &rel(chart, lock))?.unwrap_or_default();
    let present = present_charts(&chart_dir.join("charts"));
    let mut notes = Vec::new();
    // (name, version, repository) of those fetched: an aliased chart listed twice is fetched
    // once per version.
    let mut fetched: Vec<(&str, &str, &str)> = Vec::new();
    for dep in &deps {
        let fail = |why: String| {
            crate::render::fail(
                &listing_rel,
                format!(
                    "dependency {} {} ({}): {why}",
                    dep.name,
                    show(&dep.version),
                    show(&crate::remote::redact(&dep.repository))
                ),
            )
        };
        if dep.name.trim().is_empty() {
            return Err(crate::render::fail(
                &listing_rel,
                "a dependency has no name",
            ));
        }
        let key = (
            dep.name.as_str(),
            dep.version.as_str(),
            dep.repository.as_str(),
        );
        if present.iter().any(|n| n == &dep.name) || fetched.contains(&key) {
            continue;
        }
        let origin = origin_of(&dep.repository, chart, &listing_rel, cache).map_err(fail)?;
        let dest = free_dir(&chart_dir.join("charts"), &dep.name);
        match origin {
            Origin::Vendored => {
                return Err(fail(format!(
                    "not in {} and no repository to fetch it from",
                    rel(chart, "charts/")
                )));
            }
            Origin::Local(dir) => {
                let src = root.join(&dir);
                if !src.join("Chart.yaml").is_file() {
                    return Err(fail(format!(
                        "{dir} is not a chart directory (no Chart.yaml)"
                    )));
                }
                copy_dir(&src, &dest).map_err(fail)?;
                notes.push(format!("helm dependency {} copied from {dir}", dep.name));
            }
            Origin::Remote(url) => {
                let cache = cache.ok_or_else(|| {
                    fail("charts/ lacks it and this render has no chart cache to fetch it".into())
                })?;
                let target = locked
                    .iter()
                    .find(|l| l.name == dep.name && same_repo(&l.repository, &dep.repository))
                    .map(|l| l.version.clone());
                if let Some(pinned) = &target {
                    check_lock(pinned, &dep.version, lock).map_err(fail)?;
                }
                let version = target.unwrap_or_else(|| dep.version.clone());
                let got = cache
                    .get(&url, &dep.name, &version, false)
                    .map_err(|e| fail(e.0))?;
                copy_dir(&got.root.join(&dep.name), &dest).map_err(fail)?;
                notes.push(format!(
                    "helm dependency {} {} fetched from {}",
                    dep.name,
                    got.version,
                    crate::remote::redact(&url)
                ));
            }
        }
        fetched.push(key);
    }
    Ok(notes)
}

fn rel(chart: &str, file: &str) -> String {
    if chart.is_empty() {
        file.to_string()
    } else {
        format!("{chart}/{file}")
    }
}

fn show(s: &str) -> &str {
    if s.trim().is_empty() {
        "\"\""
    } else {
        s.trim()
    }
}

/// Whether `Chart.yaml` itself lists dependencies (then `requirements.yaml` is ignored, as
/// helm ignores it for an `apiVersion: v2` chart).
fn declares_dependencies(chart_yaml: &Path) -> Result<bool, LoadError> {
    let shown = chart_yaml.display().to_string();
    Ok(read_dependencies(chart_yaml, &shown)?.is_some_and(|d| !d.is_empty()))
}

/// The `dependencies` of a Chart.yaml, requirements.yaml or lock file; `None` when the file
/// is absent or lists none.
fn read_dependencies(file: &Path, shown: &str) -> Result<Option<Vec<Dependency>>, LoadError> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(None);
    };
    let parsed: Option<DependencyFile> = serde_saphyr::from_str(&text).map_err(|e| LoadError {
        file: shown.into(),
        line: e.location().map(|l| l.line() as usize),
        column: e.location().map(|l| l.column() as usize),
        message: format!("invalid chart metadata: {}", crate::yaml_reason(&e)),
    })?;
    let Some(parsed) = parsed else {
        return Ok(None);
    };
    Ok(parsed.dependencies.filter(|d| !d.is_empty()))
}

/// The names of the charts `charts/` holds: a directory's `Chart.yaml` `name`, an archive's
/// `NAME-VERSION.tgz`.
fn present_charts(charts: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(charts) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let file = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            #[derive(Deserialize)]
            struct Named {
                name: String,
            }
            let name = std::fs::read_to_string(path.join("Chart.yaml"))
                .ok()
                .and_then(|t| serde_saphyr::from_str::<Named>(&t).ok())
                .map(|n| n.name);
            names.extend(name);
        } else if let Some(stem) = file.strip_suffix(".tgz") {
            // NAME-VERSION: the version starts at the first `-` followed by a digit.
            let cut = stem
                .char_indices()
                .find(|&(i, c)| c == '-' && stem[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
                .map_or(stem.len(), |(i, _)| i);
            names.push(stem[..cut].to_string());
        }
    }
    names
}

/// A dependency's `repository` as a place to fetch from.
fn origin_of(
    repository: &str,
    chart: &str,
    listing: &str,
    cache: Option<&ChartCache>,
) -> Result<Origin, String> {
    let repository = repository.trim();
    if repository.is_empty() {
        return Ok(Origin::Vendored);
    }
    if let Some(path) = repository.strip_prefix("file://") {
        let dir = join(chart, path, listing).map_err(|e| e.message)?;
        return Ok(Origin::Local(dir));
    }
    if let Some(name) = repository
        .strip_prefix('@')
        .or_else(|| repository.strip_prefix("alias:"))
    {
        let url = cache.and_then(|c| c.url_named(name)).ok_or_else(|| {
            format!(
                "no repository Secret is named {name:?} (a Helm repository referred to by name needs an Argo CD repository Secret with that name)"
            )
        })?;
        return Ok(Origin::Remote(url));
    }
    let lower = repository.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("oci://")
    {
        return Ok(Origin::Remote(repository.to_string()));
    }
    Err("the repository is neither a chart repository (https://, oci://), a file:// path nor a repository name (@name)".into())
}

fn same_repo(a: &str, b: &str) -> bool {
    crate::repocreds::normalize(a) == crate::repocreds::normalize(b)
}

/// The lock's version must still satisfy the constraint, else helm says the lock is out of
/// sync and builds nothing.
fn check_lock(pinned: &str, constraint: &str, lock: &str) -> Result<(), String> {
    if constraint.trim().is_empty() {
        return Ok(());
    }
    let c = super::Constraint::parse(constraint)?;
    match super::parse_version(pinned) {
        Some(v) if c.matches(&v) => Ok(()),
        _ => Err(format!(
            "{lock} pins {pinned}, which does not satisfy {constraint:?}: the lock file is out of sync with the dependencies (run `helm dependency update` and commit {lock})"
        )),
    }
}

/// `charts/NAME`, or `charts/NAME-N` when that is taken by something else.
fn free_dir(charts: &Path, name: &str) -> std::path::PathBuf {
    let mut dest = charts.join(name);
    let mut n = 1;
    while dest.exists() {
        dest = charts.join(format!("{name}-plumb-{n}"));
        n += 1;
    }
    dest
}

/// Copies the chart directory `src` (regular files and directories only) to `dest`.
fn copy_dir(src: &Path, dest: &Path) -> Result<(), String> {
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
    for entry in std::fs::read_dir(src).map_err(|e| io(src, e))? {
        let entry = entry.map_err(|e| io(src, e))?;
        let kind = entry.file_type().map_err(|e| io(&entry.path(), e))?;
        let to = dest.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &to).map_err(|e| io(&to, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("plumb-deps-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("tmp");
        d
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn file_dependencies_are_copied_and_vendored_ones_are_used_as_they_are() {
        let root = tmp("file");
        write(
            &root,
            "libs/common/Chart.yaml",
            "apiVersion: v2\nname: common\nversion: 0.1.0\n",
        );
        write(&root, "apps/web/charts/redis-17.0.1.tgz", "not read");
        write(
            &root,
            "apps/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n- name: common\n  version: 0.1.0\n  repository: file://../../libs/common\n- name: redis\n  version: 17.x\n  repository: https://charts.example.com\n",
        );
        let notes = build_missing(&root, "apps/web", None).expect("builds");
        assert_eq!(notes, ["helm dependency common copied from libs/common"]);
        assert!(root.join("apps/web/charts/common/Chart.yaml").is_file());
        // Built: a second pass finds both in charts/.
        assert_eq!(
            build_missing(&root, "apps/web", None).expect("again"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn what_cannot_be_had_is_one_line_naming_the_dependency() {
        let root = tmp("bad");
        let case = |deps: &str| {
            write(
                &root,
                "c/Chart.yaml",
                &format!("apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n{deps}"),
            );
            let e = build_missing(&root, "c", None)
                .expect_err("refused")
                .to_string();
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(e.starts_with("c/Chart.yaml: dependency "), "{e}");
            e
        };
        let e = case("- name: up\n  version: 1.0.0\n  repository: file://../../outside\n");
        assert!(e.contains("leaves the repository"), "{e}");
        let e = case("- name: gone\n  version: 1.0.0\n");
        assert!(e.contains("not in c/charts/ and no repository"), "{e}");
        let e = case("- name: named\n  version: 1.0.0\n  repository: \"@stable\"\n");
        assert!(
            e.contains("no repository Secret is named \"stable\""),
            "{e}"
        );
        let e = case("- name: s3\n  version: 1.0.0\n  repository: s3://bucket/charts\n");
        assert!(e.contains("neither a chart repository"), "{e}");
        let e = case(
            "- name: r\n  version: 1.0.0\n  repository: https://user:hunter2@charts.example.com\n",
        );
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("no chart cache"), "{e}");
        write(
            &root,
            "c/Chart.lock",
            "dependencies:\n- name: pinned\n  version: 1.0.0\n  repository: https://charts.example.com\n",
        );
        let cache = ChartCache::new(root.join("cache"), std::time::Duration::ZERO);
        let e = {
            write(
                &root,
                "c/Chart.yaml",
                "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n- name: pinned\n  version: ^2.0.0\n  repository: https://charts.example.com\n",
            );
            build_missing(&root, "c", Some(&cache))
                .expect_err("out of sync")
                .to_string()
        };
        assert!(
            e.contains("Chart.lock pins 1.0.0, which does not satisfy \"^2.0.0\""),
            "{e}"
        );
    }

    #[test]
    fn a_v1_chart_lists_its_dependencies_in_requirements_yaml() {
        let root = tmp("v1");
        write(
            &root,
            "lib/Chart.yaml",
            "apiVersion: v1\nname: lib\nversion: 0.2.0\n",
        );
        write(
            &root,
            "old/Chart.yaml",
            "apiVersion: v1\nname: old\nversion: 1.0.0\n",
        );
        write(
            &root,
            "old/requirements.yaml",
            "dependencies:\n- name: lib\n  version: 0.2.0\n  repository: file://../lib\n",
        );
        let notes = build_missing(&root, "old", None).expect("builds");
        assert_eq!(notes, ["helm dependency lib copied from lib"]);
    }

    #[test]
    fn archive_names_give_the_chart_name() {
        let root = tmp("names");
        write(&root, "charts/my-chart-1.2.3.tgz", "");
        write(&root, "charts/x-10.0.0-rc.1.tgz", "");
        write(
            &root,
            "charts/dir/Chart.yaml",
            "name: in-dir\nversion: 1.0.0\n",
        );
        let mut names = present_charts(&root.join("charts"));
        names.sort();
        assert_eq!(names, ["in-dir", "my-chart", "x"]);
    }
}
