//! Where manifests are read from: a git tree at one commit ([`GitSource`]: read from the
//! object database with gix, a thread-safe pool of handles and a tree cache) or a plain
//! directory ([`DirSource`], a working tree), both behind the read-only [`SourceFs`] view the
//! renderers use.
//!
//! **Sources never leave their repository**: every path goes through [`join`] or a
//! `SourceFs`, which refuse `..` past the root, absolute paths and escaping symlinks
//! (`SourceFs::real_path` gives the path with symlinks followed, for checks that need it).
//!
//! Paths are repository-relative, '/'-separated and normalized (no "." or ".." segments,
//! no leading '/'); "" is the repository root. Every problem is a [`LoadError`] whose
//! `file` is the repository-relative path concerned (the repository directory for errors
//! while opening) and whose message is one lower-case line.
//!
//! Both sources agree on what is visible:
//! - symlinks are resolved by the source itself and refused (an error naming the link)
//!   when they lead outside the repository; dangling links are treated as absent;
//! - names that are not valid UTF-8, and anything named `.git`, are not visible (git can
//!   neither track a `.git` entry nor address a non-UTF-8 name through a `&str` path);
//! - files larger than [`MAX_FILE_BYTES`] are refused before their contents are loaded.
//!
//! ```ignore
//! use plumb_render::source::{open_source, EntryKind};
//! use std::path::Path;
//!
//! let src = open_source(Path::new("/srv/repo"), Some("v1.2")).unwrap();
//! for (name, kind) in src.list("apps").unwrap() {
//!     if kind == EntryKind::File {
//!         let _bytes = src.read(&format!("apps/{name}")).unwrap();
//!     }
//! }
//! println!("rendered from {}", src.revision_label()); // "v1.2 (0a1b2c3)"
//! ```

use crate::LoadError;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use gix::ObjectId;
use gix::objs::tree::EntryKind as GitEntryKind;

/// Largest file a source will read ([`plumb_core::limits::MAX_FILE_BYTES`]).
pub const MAX_FILE_BYTES: u64 = plumb_core::limits::MAX_FILE_BYTES;

/// How many symlinks one lookup may pass through before it is taken to be a loop
/// (the same bound Linux uses).
const MAX_SYMLINK_HOPS: usize = 40;

/// Longest symlink target accepted from a git blob (PATH_MAX on Linux).
const MAX_LINK_TARGET_BYTES: u64 = 4096;

/// How many tags may wrap one another before a revision is refused.
const MAX_TAG_DEPTH: usize = 32;

/// How many idle thread-local repository handles [`GitSource`] keeps for reuse.
const MAX_IDLE_HANDLES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
}

/// A read-only view of a source tree: a git tree at one commit, or a plain directory.
/// Implementations resolve symlinks themselves and refuse any that lead outside the tree.
pub trait SourceFs: Sync {
    /// What is at `path`, or None when nothing is.
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, LoadError>;
    /// The directory's entries (names only, not paths), sorted by name.
    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>, LoadError>;
    /// A file's bytes; refused above MAX_FILE_BYTES.
    fn read(&self, path: &str) -> Result<Vec<u8>, LoadError>;
    /// How the tree is shown to users: "HEAD (b5e2be1)", "v1.2 (0a1b2c3)", "working tree".
    fn revision_label(&self) -> String;
    /// The directory on disk that holds exactly this tree, when there is one (a plain
    /// directory): external tools can then read it in place instead of from a copy.
    fn on_disk(&self) -> Option<&Path> {
        None
    }
    /// Where `path` really is (repository-relative, every symlink followed), or None when
    /// nothing is there.
    fn real_path(&self, path: &str) -> Result<Option<String>, LoadError> {
        Ok(self.kind(path)?.map(|_| path.to_string()))
    }
    /// Whether the file at `path` is executable (git mode 100755; any `x` bit on disk), for
    /// tools that are given file modes (a config management plugin's `preserveFileMode`).
    /// `false` when the source does not know.
    fn executable(&self, path: &str) -> Result<bool, LoadError> {
        let _ = path;
        Ok(false)
    }
}

/// Joins a relative reference (as written in a kustomization or Application) onto a
/// repository-relative directory. Refuses absolute paths and any `..` that climbs above
/// the root, with an error whose file is `referrer` (the file holding the reference) and
/// whose message quotes `rel`, e.g. `path "../../x" leaves the repository`.
///
/// The join is lexical: `a/../b` is `b` whether or not `a` exists.
pub fn join(dir: &str, rel: &str, referrer: &str) -> Result<String, LoadError> {
    if is_absolute(rel) {
        return Err(error(
            referrer,
            format!("path {rel:?} is absolute; only paths inside the repository are allowed"),
        ));
    }
    let mut parts = Vec::new();
    if !push_segments(&mut parts, dir) || !push_segments(&mut parts, rel) {
        return Err(error(
            referrer,
            format!("path {rel:?} leaves the repository"),
        ));
    }
    Ok(parts.join("/"))
}

/// Opens `repo` as a source: a git repository (a work tree whose own directory holds
/// `.git`, or a bare repository) is read at `revision` (default `HEAD`) from its object
/// database; any other directory is read as it is on disk, which only makes sense
/// without a revision.
pub fn open_source(repo: &Path, revision: Option<&str>) -> Result<Box<dyn SourceFs>, LoadError> {
    if is_git_repository(repo) {
        return Ok(Box::new(GitSource::open(repo, revision)?));
    }
    let dir = DirSource::open(repo)?;
    match revision {
        None => Ok(Box::new(dir)),
        Some(rev) => Err(error(
            repo,
            format!("revision {rev:?} was asked for, but this is not a git repository"),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Plain directories
// ---------------------------------------------------------------------------------------

/// A plain directory read as it is on disk ("working tree").
///
/// Symlinks are followed when their canonical target stays inside the (canonical) root,
/// and refused otherwise. Other special files (FIFOs, sockets, devices) are not visible.
/// Checks and reads are separate system calls, so a tree changed concurrently by someone
/// else may be seen half-changed; the root containment check is made on every lookup.
#[derive(Debug, Clone)]
pub struct DirSource {
    /// Canonical path of the root directory.
    root: PathBuf,
    /// Size limit for `read`; [`MAX_FILE_BYTES`] except in tests.
    max_file_bytes: u64,
}

impl DirSource {
    /// Opens the directory `root` (which must exist and be a directory).
    pub fn open(root: &Path) -> Result<Self, LoadError> {
        let canonical = fs::canonicalize(root).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                error(root, "no such directory")
            } else {
                error(root, io_message(&e))
            }
        })?;
        if !canonical.is_dir() {
            return Err(error(root, "not a directory"));
        }
        Ok(Self {
            root: canonical,
            max_file_bytes: MAX_FILE_BYTES,
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Finds the real (canonical) location of `path` and its metadata, following
    /// symlinks component by component. `Ok(None)` when nothing is there.
    fn resolve(&self, path: &str) -> Result<Option<(PathBuf, fs::Metadata)>, LoadError> {
        let parts = normalize(path)?;
        let mut real = self.root.clone();
        let mut meta = fs::metadata(&real).map_err(|e| error(path, io_message(&e)))?;
        for (i, name) in parts.iter().enumerate() {
            if !meta.is_dir() || !visible_name(name) {
                return Ok(None);
            }
            let candidate = real.join(name);
            let link_meta = match fs::symlink_metadata(&candidate) {
                Ok(m) => m,
                Err(e) if is_not_found(&e) => return Ok(None),
                Err(e) => return Err(error(path, io_message(&e))),
            };
            if link_meta.file_type().is_symlink() {
                let link = parts[..=i].join("/");
                match self.follow_link(&candidate, &link, path)? {
                    Some((target, target_meta)) => {
                        real = target;
                        meta = target_meta;
                    }
                    None => return Ok(None),
                }
            } else {
                real = candidate;
                meta = link_meta;
            }
        }
        Ok(Some((real, meta)))
    }

    /// Follows the symlink at `full` (repository path `link`), refusing a target outside
    /// the root. `Ok(None)` for a dangling link. Errors are reported against `file`.
    fn follow_link(
        &self,
        full: &Path,
        link: &str,
        file: &str,
    ) -> Result<Option<(PathBuf, fs::Metadata)>, LoadError> {
        let target = match fs::canonicalize(full) {
            Ok(t) => t,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(error(file, format!("symlink {link:?}: {}", io_message(&e)))),
        };
        let Ok(inside) = target.strip_prefix(&self.root) else {
            let shown = fs::read_link(full).unwrap_or_else(|_| target.clone());
            return Err(error(
                file,
                format!(
                    "symlink {link:?} leaves the repository (target {:?})",
                    shown.display().to_string()
                ),
            ));
        };
        // A link into a nested `.git` reaches what the source otherwise hides.
        if inside
            .components()
            .any(|c| c.as_os_str().to_str().is_none_or(|s| !visible_name(s)))
        {
            return Ok(None);
        }
        match fs::metadata(&target) {
            Ok(meta) => Ok(Some((target, meta))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(error(file, io_message(&e))),
        }
    }
}

impl SourceFs for DirSource {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, LoadError> {
        Ok(self
            .resolve(path)?
            .and_then(|(_, meta)| kind_of(&meta.file_type())))
    }

    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>, LoadError> {
        let (real, meta) = self
            .resolve(dir)?
            .ok_or_else(|| error(dir, "no such directory"))?;
        if !meta.is_dir() {
            return Err(error(dir, "not a directory"));
        }
        let base = normalize(dir)?.join("/");
        let mut out = Vec::new();
        for entry in fs::read_dir(&real).map_err(|e| error(dir, io_message(&e)))? {
            let entry = entry.map_err(|e| error(dir, io_message(&e)))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // not addressable through a `&str` path
            };
            if !visible_name(&name) {
                continue;
            }
            let file_type = entry.file_type().map_err(|e| error(dir, io_message(&e)))?;
            let kind = if file_type.is_symlink() {
                let child = child_path(&base, &name);
                self.follow_link(&entry.path(), &child, &child)?
                    .and_then(|(_, meta)| kind_of(&meta.file_type()))
            } else {
                kind_of(&file_type)
            };
            if let Some(kind) = kind {
                out.push((name, kind));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, LoadError> {
        let (real, meta) = self
            .resolve(path)?
            .ok_or_else(|| error(path, "no such file"))?;
        if meta.is_dir() {
            return Err(error(path, "is a directory"));
        }
        if !meta.is_file() {
            return Err(error(path, "not a regular file"));
        }
        if meta.len() > self.max_file_bytes {
            return Err(too_big(path, meta.len(), self.max_file_bytes));
        }
        // Read at most one byte past the limit, in case the file grew since the check.
        let file = fs::File::open(&real).map_err(|e| error(path, io_message(&e)))?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(self.max_file_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| error(path, io_message(&e)))?;
        let len = bytes.len() as u64;
        if len > self.max_file_bytes {
            return Err(too_big(path, len, self.max_file_bytes));
        }
        Ok(bytes)
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, LoadError> {
        Ok(self.resolve(path)?.map(|(real, _)| {
            real.strip_prefix(&self.root)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default()
        }))
    }

    fn on_disk(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn revision_label(&self) -> String {
        "working tree".to_owned()
    }

    fn executable(&self, path: &str) -> Result<bool, LoadError> {
        use std::os::unix::fs::PermissionsExt;
        Ok(self
            .resolve(path)?
            .is_some_and(|(_, meta)| meta.is_file() && meta.permissions().mode() & 0o111 != 0))
    }
}

/// Maps a file type to the entry kind the renderers see; special files are invisible.
fn kind_of(file_type: &fs::FileType) -> Option<EntryKind> {
    if file_type.is_dir() {
        Some(EntryKind::Dir)
    } else if file_type.is_file() {
        Some(EntryKind::File)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------
// Git trees
// ---------------------------------------------------------------------------------------

/// What a tree entry is, as far as reading goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Tree,
    /// A regular or executable file.
    Blob,
    /// A symlink (mode 120000): the blob holds the target path.
    Link,
    /// A submodule (mode 160000): a commit of another repository, not stored here.
    Submodule,
}

#[derive(Debug, Clone, Copy)]
struct TreeEntry {
    node: Node,
    id: ObjectId,
    /// A blob of mode 100755.
    exec: bool,
}

/// One decoded tree: visible entry names (sorted, as `BTreeMap` keeps them) to entries.
type TreeDir = BTreeMap<String, TreeEntry>;

/// What a path resolves to inside the commit's tree.
#[derive(Debug, Clone, Copy)]
enum Target {
    Dir(ObjectId),
    File(ObjectId),
}

/// A git tree at one commit, read from the repository's object database: the index and
/// the work tree are never looked at, so uncommitted and untracked files do not appear.
///
/// # Threads
/// `gix::Repository` is `Send` but not `Sync`, so the source keeps the shareable
/// `gix::ThreadSafeRepository` and a small pool of thread-local handles made from it
/// (`to_thread_local`). Each call takes a handle from the pool (or makes one), uses it
/// without holding any lock, and gives it back; concurrent renderers therefore read in
/// parallel, and handles keep their buffers between calls. Decoded trees and symlink
/// targets are cached by object id behind a mutex that is held only for map access.
///
/// # Symlinks
/// Symlink blobs are resolved inside the tree relative to the link's directory, chains
/// included (at most 40 links per lookup). A link whose target is absolute or climbs
/// above the root is refused with an error naming the link; a dangling one is absent.
///
/// # Submodules
/// Submodule contents are not in this repository's object database, so submodules are
/// left out of listings, and looking up a path at or below one is an error
/// (`"vendor/lib" is a git submodule; submodules are not supported`) rather than a
/// silent "no such file".
///
/// # Limits
/// gix's allocation limit for the repository is set to the file limit, so gix refuses
/// an oversized blob from its object header without inflating it. The same limit then
/// applies to every object read, trees and commits included (64 MiB is far above any
/// real tree), and to the buffers gix uses to rebuild a delta-compressed blob in a pack.
pub struct GitSource {
    repo: gix::ThreadSafeRepository,
    /// Idle thread-local handles (see "Threads").
    idle: Mutex<Vec<gix::Repository>>,
    commit: ObjectId,
    root_tree: ObjectId,
    label: String,
    trees: Mutex<HashMap<ObjectId, Arc<TreeDir>>>,
    links: Mutex<HashMap<ObjectId, Arc<str>>>,
    /// Size limit for `read` (and gix's allocation limit); [`MAX_FILE_BYTES`] except in
    /// tests.
    max_file_bytes: u64,
}

impl fmt::Debug for GitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitSource")
            .field("git_dir", &self.repo.git_dir())
            .field("commit", &self.commit)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl GitSource {
    /// Opens the repository at `repo_dir` (a work tree holding `.git`, or a bare
    /// repository; parent directories are not searched) and resolves `revision`
    /// (default `HEAD`): branch and tag names (tags peeled to their commit), full or
    /// short ids, and `rev-parse` forms such as `HEAD~1` or `main^`.
    ///
    /// The repository is opened isolated: only its own configuration is read, and no
    /// `GIT_*` environment variable changes which repository or objects are used.
    pub fn open(repo_dir: &Path, revision: Option<&str>) -> Result<Self, LoadError> {
        Self::open_with_limit(repo_dir, revision, MAX_FILE_BYTES)
    }

    /// [`GitSource::open`] with another file size limit (for tests).
    fn open_with_limit(
        repo_dir: &Path,
        revision: Option<&str>,
        max_file_bytes: u64,
    ) -> Result<Self, LoadError> {
        if !repo_dir.is_dir() {
            let message = if repo_dir.exists() {
                "not a directory"
            } else {
                "no such directory"
            };
            return Err(error(repo_dir, message));
        }
        if !is_git_repository(repo_dir) {
            return Err(error(repo_dir, "not a git repository"));
        }
        // gix refuses, from the object header and before allocating, any object larger
        // than its allocation limit. Setting it to our limit makes an oversized blob cost
        // nothing to refuse, and replaces the 16 MiB default gix applies to repositories
        // owned by another user.
        let shared = gix::open::Options::isolated()
            .config_overrides([format!("gitoxide.objects.allocLimit={max_file_bytes}")])
            .open(repo_dir)
            .map_err(|e| {
                error(
                    repo_dir,
                    format!("cannot open git repository: {}", gix_message(&e)),
                )
            })?;
        let repo = shared.to_thread_local();
        let rev = revision.unwrap_or("HEAD");
        let (commit, root_tree) = resolve_commit(&repo, rev).map_err(|m| error(repo_dir, m))?;
        let label = format!("{rev} ({})", commit.to_hex_with_len(7));
        Ok(Self {
            repo: shared,
            idle: Mutex::new(vec![repo]),
            commit,
            root_tree,
            label,
            trees: Mutex::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            max_file_bytes,
        })
    }

    /// The full hex id of the commit being read.
    pub fn commit_id(&self) -> String {
        self.commit.to_string()
    }

    /// Runs `f` with a thread-local repository handle from the pool.
    fn with_repo<T>(&self, f: impl FnOnce(&gix::Repository) -> T) -> T {
        let repo = lock(&self.idle)
            .pop()
            .unwrap_or_else(|| self.repo.to_thread_local());
        let out = f(&repo);
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE_HANDLES {
            idle.push(repo);
        }
        out
    }

    /// The decoded tree `id`, from the cache or the object database.
    fn tree(
        &self,
        repo: &gix::Repository,
        id: ObjectId,
        file: &str,
    ) -> Result<Arc<TreeDir>, LoadError> {
        if let Some(tree) = lock(&self.trees).get(&id) {
            return Ok(Arc::clone(tree));
        }
        let object = repo.find_object(id).map_err(|e| {
            error(
                file,
                format!("cannot read git tree {id}: {}", gix_message(&e)),
            )
        })?;
        if object.kind != gix::objs::Kind::Tree {
            return Err(error(file, format!("git object {id} is not a tree")));
        }
        let mut dir = TreeDir::new();
        for entry in gix::objs::TreeRefIter::from_bytes(&object.data, repo.object_hash()) {
            let entry = entry
                .map_err(|e| error(file, format!("corrupt git tree {id}: {}", gix_message(&e))))?;
            let Ok(name) = std::str::from_utf8(entry.filename) else {
                continue; // not addressable through a `&str` path
            };
            if !visible_name(name) {
                continue;
            }
            let node = match entry.mode.kind() {
                GitEntryKind::Tree => Node::Tree,
                GitEntryKind::Blob | GitEntryKind::BlobExecutable => Node::Blob,
                GitEntryKind::Link => Node::Link,
                GitEntryKind::Commit => Node::Submodule,
            };
            let id = entry.oid.to_owned();
            let exec = entry.mode.kind() == GitEntryKind::BlobExecutable;
            dir.insert(name.to_owned(), TreeEntry { node, id, exec });
        }
        let dir = Arc::new(dir);
        lock(&self.trees).insert(id, Arc::clone(&dir));
        Ok(dir)
    }

    /// The target stored in symlink blob `id` (repository path `link`).
    fn link_target(
        &self,
        repo: &gix::Repository,
        id: ObjectId,
        link: &str,
        file: &str,
    ) -> Result<Arc<str>, LoadError> {
        if let Some(target) = lock(&self.links).get(&id) {
            return Ok(Arc::clone(target));
        }
        let bytes = self
            .blob(repo, id, MAX_LINK_TARGET_BYTES, file)
            .map_err(|e| error(file, format!("symlink {link:?}: {}", e.message)))?;
        let target: Arc<str> = String::from_utf8_lossy(&bytes).into();
        lock(&self.links).insert(id, Arc::clone(&target));
        Ok(target)
    }

    /// Loads blob `id`, refusing it when it is larger than `limit`.
    ///
    /// For limits at or above the store's allocation limit ([`Self::max_file_bytes`]),
    /// gix itself refuses the object from its header before inflating it; the header is
    /// then read again only to word the error. Smaller limits (symlink targets) are
    /// checked from the header first.
    fn blob(
        &self,
        repo: &gix::Repository,
        id: ObjectId,
        limit: u64,
        file: &str,
    ) -> Result<Vec<u8>, LoadError> {
        let unreadable = |e: gix::Error| {
            error(
                file,
                format!("cannot read git blob {id}: {}", gix_message(&e)),
            )
        };
        let too_big_by_header = || match repo.find_header(id) {
            Ok(header) if header.size() > limit => Some(too_big(file, header.size(), limit)),
            _ => None,
        };
        if limit < self.max_file_bytes
            && let Some(e) = too_big_by_header()
        {
            return Err(e);
        }
        let object = match repo.find_object(id) {
            Ok(object) => object,
            Err(e) => return Err(too_big_by_header().unwrap_or_else(|| unreadable(e))),
        };
        if object.kind != gix::objs::Kind::Blob {
            return Err(error(file, format!("git object {id} is not a blob")));
        }
        let size = object.data.len() as u64;
        if size > limit {
            return Err(too_big(file, size, limit));
        }
        Ok(object.detach().data)
    }

    /// Resolves `path` in the commit's tree, following symlinks. `Ok(None)` when nothing
    /// is there (including dangling links and paths that run through a file).
    fn resolve(&self, repo: &gix::Repository, path: &str) -> Result<Option<Target>, LoadError> {
        Ok(self.resolve_physical(repo, path)?.map(|(t, _)| t))
    }

    /// [`Self::resolve`], with the physical path reached (every symlink followed).
    fn resolve_physical(
        &self,
        repo: &gix::Repository,
        path: &str,
    ) -> Result<Option<(Target, String)>, LoadError> {
        // Components still to walk, the next one last.
        let mut pending: Vec<String> = normalize(path)?
            .into_iter()
            .rev()
            .map(str::to_owned)
            .collect();
        // The physical directories walked so far below the root: (name, tree id).
        let mut dirs: Vec<(String, ObjectId)> = Vec::new();
        // The last link followed and its target, for errors about climbing out.
        let mut last_link: Option<(String, Arc<str>)> = None;
        let mut hops = 0;
        while let Some(name) = pending.pop() {
            match name.as_str() {
                "" | "." => continue,
                ".." => {
                    if dirs.pop().is_none() {
                        return Err(match &last_link {
                            Some((link, target)) => leaves(path, link, target),
                            None => error(path, "path leaves the repository"),
                        });
                    }
                    continue;
                }
                _ => {}
            }
            let current = dirs.last().map_or(self.root_tree, |d| d.1);
            let Some(entry) = self.tree(repo, current, path)?.get(name.as_str()).copied() else {
                return Ok(None);
            };
            match entry.node {
                Node::Tree => dirs.push((name, entry.id)),
                Node::Blob => {
                    // A file is only found at the end of the path.
                    let at_end = pending.iter().all(|p| p.is_empty() || p == ".");
                    return Ok(
                        at_end.then(|| (Target::File(entry.id), physical_path(&dirs, &name)))
                    );
                }
                Node::Submodule => {
                    let here = physical_path(&dirs, &name);
                    return Err(error(
                        path,
                        format!("{here:?} is a git submodule; submodules are not supported"),
                    ));
                }
                Node::Link => {
                    let here = physical_path(&dirs, &name);
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(error(
                            path,
                            format!("too many levels of symlinks at {here:?}"),
                        ));
                    }
                    let target = self.link_target(repo, entry.id, &here, path)?;
                    if is_absolute(&target) {
                        return Err(leaves(path, &here, &target));
                    }
                    if target.is_empty() {
                        return Ok(None);
                    }
                    // Walk the target from the link's directory, then the rest of the path.
                    pending.extend(target.split('/').rev().map(str::to_owned));
                    last_link = Some((here, target));
                }
            }
        }
        let physical = dirs
            .iter()
            .map(|(d, _)| d.as_str())
            .collect::<Vec<_>>()
            .join("/");
        Ok(Some((
            Target::Dir(dirs.last().map_or(self.root_tree, |d| d.1)),
            physical,
        )))
    }
}

impl SourceFs for GitSource {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, LoadError> {
        Ok(self
            .with_repo(|repo| self.resolve(repo, path))?
            .map(|target| match target {
                Target::Dir(_) => EntryKind::Dir,
                Target::File(_) => EntryKind::File,
            }))
    }

    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>, LoadError> {
        self.with_repo(|repo| {
            let tree_id = match self.resolve(repo, dir)? {
                Some(Target::Dir(id)) => id,
                Some(Target::File(_)) => return Err(error(dir, "not a directory")),
                None => return Err(error(dir, "no such directory")),
            };
            let tree = self.tree(repo, tree_id, dir)?;
            let base = normalize(dir)?.join("/");
            let mut out = Vec::with_capacity(tree.len());
            // BTreeMap order is byte order of the names: the contract's sort.
            for (name, entry) in tree.iter() {
                let kind = match entry.node {
                    Node::Tree => EntryKind::Dir,
                    Node::Blob => EntryKind::File,
                    Node::Submodule => continue,
                    Node::Link => match self.resolve(repo, &child_path(&base, name))? {
                        Some(Target::Dir(_)) => EntryKind::Dir,
                        Some(Target::File(_)) => EntryKind::File,
                        None => continue, // dangling
                    },
                };
                out.push((name.clone(), kind));
            }
            Ok(out)
        })
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, LoadError> {
        self.with_repo(|repo| match self.resolve(repo, path)? {
            Some(Target::File(id)) => self.blob(repo, id, self.max_file_bytes, path),
            Some(Target::Dir(_)) => Err(error(path, "is a directory")),
            None => Err(error(path, "no such file")),
        })
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, LoadError> {
        Ok(self
            .with_repo(|repo| self.resolve_physical(repo, path))?
            .map(|(_, p)| p))
    }

    fn revision_label(&self) -> String {
        self.label.clone()
    }

    fn executable(&self, path: &str) -> Result<bool, LoadError> {
        self.with_repo(|repo| {
            // The entry the path leads to, every symlink followed: its mode.
            let Some((Target::File(_), physical)) = self.resolve_physical(repo, path)? else {
                return Ok(false);
            };
            let (parent, name) = physical.rsplit_once('/').unwrap_or(("", &physical));
            let Some(Target::Dir(tree)) = self.resolve(repo, parent)? else {
                return Ok(false);
            };
            Ok(self
                .tree(repo, tree, path)?
                .get(name)
                .is_some_and(|e| e.exec))
        })
    }
}

/// Resolves `rev` to a commit and its root tree, peeling annotated tags by hand so that
/// corrupt objects are errors rather than panics.
fn resolve_commit(repo: &gix::Repository, rev: &str) -> Result<(ObjectId, ObjectId), String> {
    let unknown = || {
        if rev == "HEAD" && repo.head().is_ok_and(|head| head.is_unborn()) {
            "unknown revision \"HEAD\": the repository has no commits yet".to_owned()
        } else {
            format!("unknown revision {rev:?}")
        }
    };
    if rev.is_empty() || rev.contains(['\n', '\r']) {
        return Err(unknown());
    }
    let mut id = match repo.rev_parse_single(rev) {
        Ok(id) => id.detach(),
        Err(e) => {
            let detail = gix_message(&e);
            return Err(if detail.contains("ambiguous") {
                format!("ambiguous revision {rev:?}: use more characters of the id")
            } else {
                unknown()
            });
        }
    };
    let hash = repo.object_hash();
    for _ in 0..MAX_TAG_DEPTH {
        let object = repo
            .find_object(id)
            .map_err(|e| format!("cannot read git object {id}: {}", gix_message(&e)))?;
        match object.kind {
            gix::objs::Kind::Commit => {
                let tree = gix::objs::CommitRefIter::from_bytes(&object.data, hash)
                    .tree_id()
                    .map_err(|e| format!("corrupt git commit {id}: {}", gix_message(&e)))?;
                return Ok((id, tree));
            }
            gix::objs::Kind::Tag => {
                id = gix::objs::TagRefIter::from_bytes(&object.data, hash)
                    .target_id()
                    .map_err(|e| format!("corrupt git tag {id}: {}", gix_message(&e)))?;
            }
            other => return Err(format!("revision {rev:?} is a {other}, not a commit")),
        }
    }
    Err(format!("revision {rev:?}: too many nested tags"))
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn error(file: impl AsRef<Path>, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.as_ref().to_path_buf(),
        line: None,
        column: None,
        message: message.into(),
    }
}

/// The error for a symlink whose target is outside the repository.
fn leaves(file: &str, link: &str, target: &str) -> LoadError {
    error(
        file,
        format!("symlink {link:?} leaves the repository (target {target:?})"),
    )
}

pub(crate) fn too_big(file: &str, size: u64, limit: u64) -> LoadError {
    error(
        file,
        format!(
            "file is {}, over the {} limit",
            human_size(size),
            human_size(limit)
        ),
    )
}

/// `70 MiB`, `64.1 MiB`, `12 KiB`, `20 bytes`: sizes for messages, rounded up so that a
/// size just over a limit never prints as the limit itself.
fn human_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let scaled = |unit: u64, name: &str| {
        if bytes.is_multiple_of(unit) {
            format!("{} {name}", bytes / unit)
        } else {
            let tenths = (u128::from(bytes) * 10).div_ceil(u128::from(unit));
            format!("{}.{} {name}", tenths / 10, tenths % 10)
        }
    };
    if bytes >= MIB {
        scaled(MIB, "MiB")
    } else if bytes >= KIB {
        scaled(KIB, "KiB")
    } else if bytes == 1 {
        "1 byte".to_owned()
    } else {
        format!("{bytes} bytes")
    }
}

/// Appends `path`'s segments to `parts`, resolving "." and ".." lexically; false when a
/// ".." climbs above the start.
fn push_segments<'a>(parts: &mut Vec<&'a str>, path: &'a str) -> bool {
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return false;
                }
            }
            s => parts.push(s),
        }
    }
    true
}

/// The segments of a repository path, tolerating (lexically resolving) a path that is not
/// quite normalized.
fn normalize(path: &str) -> Result<Vec<&str>, LoadError> {
    if is_absolute(path) {
        return Err(error(path, "path is absolute, not repository-relative"));
    }
    let mut parts = Vec::new();
    if push_segments(&mut parts, path) {
        Ok(parts)
    } else {
        Err(error(path, "path leaves the repository"))
    }
}

/// Absolute on any platform: `/x`, `\x`, `C:/x`, `C:\x`.
fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with(['/', '\\'])
        || (bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && matches!(bytes[2], b'/' | b'\\'))
        || Path::new(path).is_absolute()
}

/// Whether an entry name is visible through a source.
fn visible_name(name: &str) -> bool {
    !matches!(name, "" | "." | ".." | ".git") && !name.contains(['/', '\0'])
}

fn child_path(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// The repository path of `name` inside the directories walked so far.
fn physical_path(dirs: &[(String, ObjectId)], name: &str) -> String {
    let mut path = String::new();
    for (dir, _) in dirs {
        path.push_str(dir);
        path.push('/');
    }
    path.push_str(name);
    path
}

/// Whether `dir` itself is a git repository: it holds `.git` (a directory, or a file
/// pointing to one), or it is a bare repository.
pub fn is_git_repository(dir: &Path) -> bool {
    dir.join(".git").exists()
        || (dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir())
}

fn is_not_found(e: &io::Error) -> bool {
    // ENOTDIR: a path component is a file, so nothing is there.
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// An I/O error as a one-line, lower-case message ("permission denied (os error 13)").
fn io_message(e: &io::Error) -> String {
    lower_first(&one_line(&e.to_string()))
}

/// A gix error as one line.
fn gix_message(e: &dyn std::error::Error) -> String {
    lower_first(&one_line(&e.to_string()))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Locks a mutex, ignoring poisoning: the guarded caches stay consistent even if a
/// holder panicked (every update is a single insert or push).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod join_tests {
    use super::*;

    #[test]
    fn join_resolves_relative_references() {
        assert_eq!(join("apps/web", "base", "k.yaml").unwrap(), "apps/web/base");
        assert_eq!(
            join("apps/web", "../common", "k.yaml").unwrap(),
            "apps/common"
        );
        assert_eq!(join("apps", "a/../b", "k.yaml").unwrap(), "apps/b");
        assert_eq!(join("", "./x/./y/", "k.yaml").unwrap(), "x/y");
        assert_eq!(join("apps", "..", "k.yaml").unwrap(), "");
        assert_eq!(join("apps", "", "k.yaml").unwrap(), "apps");
    }

    #[test]
    fn join_refuses_escapes_and_absolute_paths() {
        let e = join("apps/web", "../../../x", "apps/web/kustomization.yaml").unwrap_err();
        assert_eq!(e.file, PathBuf::from("apps/web/kustomization.yaml"));
        assert_eq!(e.message, r#"path "../../../x" leaves the repository"#);
        let e = join("", "a/../../b", "k.yaml").unwrap_err();
        assert!(e.message.contains("leaves the repository"), "{e}");
        for abs in ["/etc/passwd", "\\\\server\\share", "C:/x", "c:\\x"] {
            let e = join("apps", abs, "k.yaml").unwrap_err();
            assert!(e.message.contains("is absolute"), "{abs}: {e}");
            assert!(e.message.contains(&format!("{abs:?}")), "{abs}: {e}");
        }
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(70 * 1024 * 1024), "70 MiB");
        assert_eq!(human_size(64 * 1024 * 1024 + 1), "64.1 MiB");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(20), "20 bytes");
        assert_eq!(
            too_big("a.yaml", 70 * 1024 * 1024, MAX_FILE_BYTES).to_string(),
            "a.yaml: file is 70 MiB, over the 64 MiB limit"
        );
    }
}

#[cfg(all(test, unix))]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::process::Command;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    /// A directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path =
                std::env::temp_dir().join(format!("plumb-source-{}-{n}-{tag}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).unwrap();
            // Canonical, so paths compare equal to what sources report.
            Self(fs::canonicalize(&path).unwrap())
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Runs git in `dir` with no user or system configuration; returns trimmed stdout.
    pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"])
            .args(["-c", "init.defaultBranch=main", "-c", "core.symlinks=true"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    pub(crate) fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    pub(crate) fn link(root: &Path, rel: &str, target: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, path).unwrap();
    }

    pub(crate) fn commit_all(dir: &Path, message: &str) -> String {
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
        git(dir, &["rev-parse", "HEAD"])
    }

    fn read_str(src: &dyn SourceFs, path: &str) -> String {
        String::from_utf8(src.read(path).unwrap()).unwrap()
    }

    /// A repository with two commits, tags `v1` (lightweight, first commit) and `v2`
    /// (annotated, second commit), then an uncommitted change, a staged-only file and
    /// an untracked file. Returns (dir, first commit, second commit).
    fn fixture() -> (TempDir, String, String) {
        let tmp = TempDir::new("repo");
        let repo = tmp.path().join("repo");
        fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        write(&repo, "app/deploy.yaml", "v1");
        write(&repo, "README.md", "hello");
        let first = commit_all(&repo, "one");
        git(&repo, &["tag", "v1"]);

        write(&repo, "app/deploy.yaml", "v2");
        write(&repo, "base/a.yaml", "a");
        write(&repo, "base/z/b.yaml", "b");
        write(&repo, "base/m/c.yaml", "c");
        // git orders trees "foo-bar", "foo.yaml", "foo" (as "foo/"); names sort plainly.
        write(&repo, "order/foo/x.yaml", "x");
        write(&repo, "order/foo.yaml", "y");
        write(&repo, "order/foo-bar", "z");
        write(&repo, "order/Upper", "u");
        link(&repo, "linked.yaml", "app/deploy.yaml");
        link(&repo, "linkdir", "base");
        link(&repo, "base/up.yaml", "../app/deploy.yaml");
        link(&repo, "base/self", ".");
        link(&repo, "chain1", "chain2");
        link(&repo, "chain2", "./base/../linked.yaml");
        link(&repo, "dangling", "nowhere");
        link(&repo, "bad/out", "../../outside");
        link(&repo, "bad/abs", "/etc/passwd");
        link(&repo, "loop/a", "b");
        link(&repo, "loop/b", "a");
        let second = commit_all(&repo, "two");
        git(&repo, &["tag", "-a", "v2", "-m", "release two"]);

        write(&repo, "app/deploy.yaml", "dirty");
        write(&repo, "staged.yaml", "staged");
        git(&repo, &["add", "staged.yaml"]);
        write(&repo, "untracked.yaml", "untracked");
        write(tmp.path(), "outside", "secret");
        (tmp, first, second)
    }

    fn repo_of(tmp: &TempDir) -> PathBuf {
        tmp.path().join("repo")
    }

    #[test]
    fn sources_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<GitSource>();
        check::<DirSource>();
    }

    #[test]
    fn head_is_read_from_the_object_database() {
        let (tmp, _, second) = fixture();
        let src = GitSource::open(&repo_of(&tmp), None).unwrap();
        assert_eq!(src.commit_id(), second);
        assert_eq!(src.revision_label(), format!("HEAD ({})", &second[..7]));
        // The work tree says "dirty"; the commit says "v2".
        assert_eq!(read_str(&src, "app/deploy.yaml"), "v2");
        assert_eq!(read_str(&src, "README.md"), "hello");
        for hidden in ["untracked.yaml", "staged.yaml", ".git", ".git/config"] {
            assert_eq!(src.kind(hidden).unwrap(), None, "{hidden}");
            let e = src.read(hidden).unwrap_err();
            assert_eq!(e.message, "no such file");
            assert_eq!(e.file, PathBuf::from(hidden));
        }
        let names: Vec<String> = src.list("").unwrap().into_iter().map(|e| e.0).collect();
        assert!(
            !names
                .iter()
                .any(|n| n.contains("staged") || n.contains("untracked"))
        );
        assert!(!names.contains(&".git".to_owned()));
    }

    #[test]
    fn revisions_resolve_like_rev_parse() {
        let (tmp, first, second) = fixture();
        let repo = repo_of(&tmp);
        let cases: &[(&str, &str, &str)] = &[
            ("main", &second, "v2"),
            ("v2", &second, "v2"), // annotated tag, peeled to its commit
            ("v1", &first, "v1"),  // lightweight tag
            ("HEAD~1", &first, "v1"),
            ("main^", &first, "v1"),
            (&first[..7], &first, "v1"),
            (&first[..10], &first, "v1"),
            (&second, &second, "v2"),
        ];
        for &(rev, commit, content) in cases {
            let src = GitSource::open(&repo, Some(rev)).unwrap();
            assert_eq!(src.commit_id(), commit, "{rev}");
            assert_eq!(read_str(&src, "app/deploy.yaml"), content, "{rev}");
            assert_eq!(src.revision_label(), format!("{rev} ({})", &commit[..7]));
        }
        // The old commit does not have the new files.
        let old = GitSource::open(&repo, Some("v1")).unwrap();
        assert_eq!(old.kind("base").unwrap(), None);
        assert_eq!(
            old.list("").unwrap(),
            vec![
                ("README.md".to_owned(), EntryKind::File),
                ("app".to_owned(), EntryKind::Dir)
            ]
        );
    }

    #[test]
    fn unknown_revisions_and_non_repositories_are_errors() {
        let (tmp, _, _) = fixture();
        let repo = repo_of(&tmp);
        for rev in ["nope", "HEAD~10", "v9", ""] {
            let e = GitSource::open(&repo, Some(rev)).unwrap_err();
            assert_eq!(e.file, repo);
            assert_eq!(e.message, format!("unknown revision {rev:?}"));
            assert!(!e.to_string().contains('\n'));
        }
        // A tree is not a commit.
        let e = GitSource::open(&repo, Some("HEAD^{tree}")).unwrap_err();
        assert!(e.message.contains("not a commit"), "{e}");

        let plain = tmp.path().join("plain");
        write(&plain, "x.yaml", "x");
        let e = GitSource::open(&plain, None).unwrap_err();
        assert_eq!(
            (e.file.as_path(), e.message.as_str()),
            (plain.as_path(), "not a git repository")
        );
        // A subdirectory of a work tree is not a repository of its own.
        let e = GitSource::open(&repo.join("app"), None).unwrap_err();
        assert_eq!(e.message, "not a git repository");
        let e = GitSource::open(&tmp.path().join("missing"), None).unwrap_err();
        assert_eq!(e.message, "no such directory");

        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        git(&empty, &["init", "-q"]);
        let e = GitSource::open(&empty, None).unwrap_err();
        assert!(e.message.starts_with("unknown revision \"HEAD\""), "{e}");
    }

    #[test]
    fn ambiguous_short_ids_are_reported() {
        let tmp = TempDir::new("ambiguous");
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        // 1000 blobs with fixed contents: some two of them share a 4-hex-digit prefix
        // (the same pair every time, as blob ids depend only on content).
        for i in 0..1000 {
            write(repo, &format!("f{i}"), &i.to_string());
        }
        commit_all(repo, "many");
        let listing = git(repo, &["ls-tree", "HEAD"]);
        let mut prefixes: Vec<&str> = listing
            .lines()
            .filter_map(|line| line.split_whitespace().nth(2))
            .map(|id| &id[..4])
            .collect();
        prefixes.sort_unstable();
        let shared = prefixes
            .windows(2)
            .find(|w| w[0] == w[1])
            .map(|w| w[0])
            .expect("a shared prefix among 1000 blobs");
        let e = GitSource::open(repo, Some(shared)).unwrap_err();
        assert_eq!(
            e.message,
            format!("ambiguous revision {shared:?}: use more characters of the id")
        );
    }

    #[test]
    fn listings_are_sorted_and_typed() {
        let (tmp, _, _) = fixture();
        let src = GitSource::open(&repo_of(&tmp), None).unwrap();
        let entries = |dir: &str| src.list(dir).unwrap();
        let owned = |v: &[(&str, EntryKind)]| -> Vec<(String, EntryKind)> {
            v.iter().map(|(n, k)| ((*n).to_owned(), *k)).collect()
        };
        use EntryKind::{Dir, File};
        assert_eq!(
            entries("base"),
            owned(&[
                ("a.yaml", File),
                ("m", Dir),
                ("self", Dir),
                ("up.yaml", File),
                ("z", Dir)
            ])
        );
        assert_eq!(
            entries("order"),
            owned(&[
                ("Upper", File),
                ("foo", Dir),
                ("foo-bar", File),
                ("foo.yaml", File)
            ])
        );
        assert_eq!(entries("base/z"), owned(&[("b.yaml", File)]));
        // Root listing: dangling links are absent, escaping ones live in `bad/`.
        let root: Vec<String> = entries("").into_iter().map(|e| e.0).collect();
        assert_eq!(
            root,
            [
                "README.md",
                "app",
                "bad",
                "base",
                "chain1",
                "chain2",
                "linkdir",
                "linked.yaml",
                "loop",
                "order"
            ]
        );
        assert_eq!(src.kind("").unwrap(), Some(Dir));
        assert_eq!(src.kind("base/z").unwrap(), Some(Dir));
        assert_eq!(src.kind("base/z/b.yaml").unwrap(), Some(File));
        assert_eq!(src.kind("base/z/nope").unwrap(), None);
        assert_eq!(src.kind("README.md/x").unwrap(), None);
        assert_eq!(src.kind("dangling").unwrap(), None);

        let e = src.list("README.md").unwrap_err();
        assert_eq!(
            (e.file, e.message),
            ("README.md".into(), "not a directory".into())
        );
        let e = src.list("nope").unwrap_err();
        assert_eq!(e.message, "no such directory");
        let e = src.read("base").unwrap_err();
        assert_eq!(e.message, "is a directory");
        let e = src.read("base/z/missing.yaml").unwrap_err();
        assert_eq!(e.to_string(), "base/z/missing.yaml: no such file");
    }

    #[test]
    fn git_symlinks_inside_the_tree_are_followed() {
        let (tmp, _, _) = fixture();
        let src = GitSource::open(&repo_of(&tmp), None).unwrap();
        assert_eq!(read_str(&src, "linked.yaml"), "v2");
        assert_eq!(read_str(&src, "base/up.yaml"), "v2");
        assert_eq!(read_str(&src, "chain1"), "v2");
        assert_eq!(src.kind("linkdir").unwrap(), Some(EntryKind::Dir));
        assert_eq!(src.list("linkdir").unwrap(), src.list("base").unwrap());
        assert_eq!(read_str(&src, "linkdir/z/b.yaml"), "b");
        assert_eq!(read_str(&src, "linkdir/self/self/a.yaml"), "a");
        assert_eq!(read_str(&src, "linkdir/up.yaml"), "v2");
    }

    /// The fixtures' links out of the tree (`bad/out`, `bad/abs`) are refused by read and
    /// kind, and listing the directory holding them is refused too, each naming the link.
    fn assert_links_out_refused(src: &dyn SourceFs) {
        let e = src.read("bad/out").unwrap_err();
        assert_eq!(e.file, PathBuf::from("bad/out"));
        assert_eq!(
            e.message,
            r#"symlink "bad/out" leaves the repository (target "../../outside")"#
        );
        let e = src.kind("bad/abs").unwrap_err();
        assert_eq!(
            e.message,
            r#"symlink "bad/abs" leaves the repository (target "/etc/passwd")"#
        );
        let e = src.list("bad").unwrap_err();
        assert!(e.message.contains("leaves the repository"), "{e}");
    }

    #[test]
    fn git_symlinks_leaving_the_tree_are_refused() {
        let (tmp, _, _) = fixture();
        let src = GitSource::open(&repo_of(&tmp), None).unwrap();
        assert_links_out_refused(&src);
        let e = src.read("loop/a").unwrap_err();
        assert!(e.message.starts_with("too many levels of symlinks"), "{e}");
    }

    #[test]
    fn submodules_are_listed_as_nothing_and_refused_when_named() {
        let tmp = TempDir::new("submodule");
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        write(repo, "a.yaml", "a");
        let first = commit_all(repo, "one");
        let gitlink = format!("160000,{first},vendor/lib");
        git(repo, &["update-index", "--add", "--cacheinfo", &gitlink]);
        git(repo, &["commit", "-q", "-m", "submodule"]);
        let src = GitSource::open(repo, None).unwrap();
        assert_eq!(
            src.list("").unwrap(),
            vec![
                ("a.yaml".to_owned(), EntryKind::File),
                ("vendor".to_owned(), EntryKind::Dir)
            ]
        );
        assert_eq!(src.list("vendor").unwrap(), vec![]);
        let e = src.read("vendor/lib/x.yaml").unwrap_err();
        assert_eq!(
            e.message,
            r#""vendor/lib" is a git submodule; submodules are not supported"#
        );
        assert!(src.kind("vendor/lib").is_err());
    }

    #[test]
    fn git_blobs_over_the_limit_are_refused() {
        let tmp = TempDir::new("big");
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        write(repo, "big.yaml", &"x".repeat(2048));
        write(repo, "small.yaml", "small");
        link(repo, "big-link", "big.yaml");
        commit_all(repo, "big");
        let src = GitSource::open_with_limit(repo, None, 1024).unwrap();
        assert_eq!(read_str(&src, "small.yaml"), "small");
        let e = src.read("big.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "big.yaml: file is 2 KiB, over the 1 KiB limit"
        );
        assert!(src.read("big-link").is_err());
        // Still visible: only reading it is refused.
        assert_eq!(src.kind("big.yaml").unwrap(), Some(EntryKind::File));
        // Packed objects report their size from the pack header too.
        git(repo, &["gc", "-q"]);
        let src = GitSource::open_with_limit(repo, None, 1024).unwrap();
        assert!(
            src.read("big.yaml")
                .unwrap_err()
                .message
                .contains("over the 1 KiB limit")
        );
        assert_eq!(read_str(&src, "small.yaml"), "small");
    }

    #[test]
    fn open_source_picks_the_right_reader() {
        let (tmp, _, second) = fixture();
        let repo = repo_of(&tmp);
        let src = open_source(&repo, None).unwrap();
        assert_eq!(src.revision_label(), format!("HEAD ({})", &second[..7]));
        assert_eq!(read_str(src.as_ref(), "app/deploy.yaml"), "v2");
        let src = open_source(&repo, Some("v1")).unwrap();
        assert_eq!(read_str(src.as_ref(), "app/deploy.yaml"), "v1");

        // A bare clone is a repository too.
        let bare = tmp.path().join("bare.git");
        git(
            tmp.path(),
            &[
                "clone",
                "-q",
                "--bare",
                repo.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        let src = open_source(&bare, Some("v2")).unwrap();
        assert_eq!(src.revision_label(), format!("v2 ({})", &second[..7]));
        assert_eq!(read_str(src.as_ref(), "linked.yaml"), "v2");

        // So is a linked work tree, whose `.git` is a file.
        git(
            &repo,
            &["worktree", "add", "-q", "../wt", "-b", "other", "v1"],
        );
        let src = open_source(&tmp.path().join("wt"), None).unwrap();
        assert_eq!(read_str(src.as_ref(), "app/deploy.yaml"), "v1");

        // A plain directory (even one inside a work tree) is read from disk.
        let src = open_source(&repo.join("app"), None).unwrap();
        assert_eq!(src.revision_label(), "working tree");
        assert_eq!(read_str(src.as_ref(), "deploy.yaml"), "dirty");
        let e = open_source(&repo.join("app"), Some("main")).err().unwrap();
        assert_eq!(e.file, repo.join("app"));
        assert!(e.message.contains("not a git repository"), "{e}");
        let e = open_source(&tmp.path().join("missing"), None)
            .err()
            .unwrap();
        assert_eq!(e.message, "no such directory");
    }

    #[test]
    fn git_source_is_usable_from_many_threads() {
        let (tmp, _, _) = fixture();
        let src = GitSource::open(&repo_of(&tmp), None).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        assert_eq!(read_str(&src, "linkdir/up.yaml"), "v2");
                        assert_eq!(src.list("base/z").unwrap().len(), 1);
                    }
                });
            }
        });
    }

    #[test]
    fn reading_two_thousand_files_loose_and_packed() {
        let tmp = TempDir::new("perf");
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        for d in 0..20 {
            for f in 0..100 {
                let body =
                    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{d}-{f}\n");
                write(repo, &format!("apps/d{d:02}/f{f:03}.yaml"), &body);
            }
        }
        commit_all(repo, "many files");
        for packed in [false, true] {
            if packed {
                git(repo, &["gc", "-q"]);
            }
            let start = Instant::now();
            let src = GitSource::open(repo, None).unwrap();
            let mut files = 0;
            let mut bytes = 0;
            for (dir, _) in src.list("apps").unwrap() {
                let dir = format!("apps/{dir}");
                for (name, kind) in src.list(&dir).unwrap() {
                    assert_eq!(kind, EntryKind::File);
                    let path = format!("{dir}/{name}");
                    assert_eq!(src.kind(&path).unwrap(), Some(EntryKind::File));
                    bytes += src.read(&path).unwrap().len();
                    files += 1;
                }
            }
            let elapsed = start.elapsed();
            eprintln!("packed={packed}: {files} files, {bytes} bytes in {elapsed:?}");
            // Every file read, from loose objects and from a pack alike. How fast is a
            // benchmark's question, not a test's: a wall-clock bound fails on a busy machine.
            assert_eq!(files, 2000);
            let expected: usize = (0..20)
                .flat_map(|d| {
                    (0..100).map(move |f| {
                        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{d}-{f}\n")
                            .len()
                    })
                })
                .sum();
            assert_eq!(bytes, expected, "packed={packed}");
        }
    }

    #[test]
    fn names_that_are_not_utf8_are_invisible() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let tmp = TempDir::new("names");
        let repo = tmp.path();
        git(repo, &["init", "-q"]);
        write(repo, "ok.yaml", "ok");
        fs::write(repo.join(OsStr::from_bytes(b"bad-\xff.yaml")), "bad").unwrap();
        commit_all(repo, "names");
        let expected = vec![("ok.yaml".to_owned(), EntryKind::File)];
        let git_src = GitSource::open(repo, None).unwrap();
        assert_eq!(git_src.list("").unwrap(), expected);
        let dir_src = DirSource::open(repo).unwrap();
        assert_eq!(dir_src.list("").unwrap(), expected);
    }

    // --- plain directories ---------------------------------------------------------------

    /// A plain directory `tree/` with an `outside` file next to it.
    fn dir_fixture() -> (TempDir, PathBuf) {
        let tmp = TempDir::new("dir");
        let root = tmp.path().join("tree");
        write(&root, "app/deploy.yaml", "v1");
        write(&root, "base/z/b.yaml", "b");
        write(&root, "base/a.yaml", "a");
        write(&root, ".git/config", "not a repository, just a hidden dir");
        link(&root, "linked.yaml", "app/deploy.yaml");
        link(&root, "linkdir", "base");
        link(&root, "base/up.yaml", "../app/deploy.yaml");
        link(&root, "dangling", "nowhere");
        link(&root, "bad/out", "../../outside");
        link(&root, "bad/abs", "/etc/passwd");
        write(tmp.path(), "outside", "secret");
        (tmp, root)
    }

    #[test]
    fn dir_source_reads_lists_and_follows_inner_symlinks() {
        let (_tmp, root) = dir_fixture();
        let src = DirSource::open(&root).unwrap();
        assert_eq!(src.revision_label(), "working tree");
        assert_eq!(read_str(&src, "app/deploy.yaml"), "v1");
        assert_eq!(read_str(&src, "linked.yaml"), "v1");
        assert_eq!(read_str(&src, "linkdir/up.yaml"), "v1");
        assert_eq!(read_str(&src, "linkdir/z/b.yaml"), "b");
        assert_eq!(src.kind("linkdir").unwrap(), Some(EntryKind::Dir));
        assert_eq!(src.kind("dangling").unwrap(), None);
        assert_eq!(src.kind(".git/config").unwrap(), None);
        assert_eq!(src.kind("app/deploy.yaml/x").unwrap(), None);
        use EntryKind::{Dir, File};
        let names = |dir: &str| src.list(dir).unwrap();
        assert_eq!(
            names("base"),
            vec![
                ("a.yaml".to_owned(), File),
                ("up.yaml".to_owned(), File),
                ("z".to_owned(), Dir)
            ]
        );
        assert_eq!(names("linkdir"), names("base"));
        let root_names: Vec<String> = names("").into_iter().map(|e| e.0).collect();
        assert_eq!(root_names, ["app", "bad", "base", "linkdir", "linked.yaml"]);
        assert_eq!(src.read("base").unwrap_err().message, "is a directory");
        assert_eq!(
            src.read("nope.yaml").unwrap_err().to_string(),
            "nope.yaml: no such file"
        );
        assert_eq!(
            src.list("app/deploy.yaml").unwrap_err().message,
            "not a directory"
        );
    }

    #[test]
    fn dir_symlinks_leaving_the_root_are_refused() {
        let (_tmp, root) = dir_fixture();
        let src = DirSource::open(&root).unwrap();
        assert_links_out_refused(&src);
        // Lexical climbing is refused as well.
        let e = src.read("../outside").unwrap_err();
        assert!(e.message.contains("leaves the repository"), "{e}");
    }

    #[test]
    fn dir_files_over_the_limit_are_refused_before_reading() {
        let (_tmp, root) = dir_fixture();
        let big = fs::File::create(root.join("big.yaml")).unwrap();
        big.set_len(65 * 1024 * 1024).unwrap(); // sparse: no disk used
        drop(big);
        let src = DirSource::open(&root).unwrap();
        assert_eq!(src.kind("big.yaml").unwrap(), Some(EntryKind::File));
        let e = src.read("big.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "big.yaml: file is 65 MiB, over the 64 MiB limit"
        );
    }

    #[test]
    fn dir_source_open_errors() {
        let (tmp, root) = dir_fixture();
        let e = DirSource::open(&tmp.path().join("missing")).unwrap_err();
        assert_eq!(e.message, "no such directory");
        let e = DirSource::open(&root.join("app/deploy.yaml")).unwrap_err();
        assert_eq!(e.message, "not a directory");
    }
}
