//! The `*.jsonnet` programs of a directory source, evaluated as Argo CD's repo server
//! evaluates them, with jrsonnet (a Rust implementation of the language and its standard
//! library) in place of go-jsonnet.
//!
//! - **Which files**: those the directory walk selects (`recurse`, `include`, `exclude`), in
//!   one sorted list with the YAML and JSON files; a `*.libsonnet` is only ever imported.
//! - **Settings** (`spec.source.directory.jsonnet`, [`JsonnetSource`]): `extVars` and `tlas`,
//!   each a string or, with `code: true`, Jsonnet code; `libs`, library search paths relative
//!   to the repository's root. A TLA the program's top-level function lacks is an error; TLAs
//!   given to a program that is not a function are ignored, as go-jsonnet ignores them.
//! - **Build environment** ([`substitute`]): as Argo CD, `$NAME` and `${NAME}` in a
//!   variable's or argument's value are replaced (Go's `os.Expand`: `$$` is `$`, an unknown
//!   name is empty) by `ARGOCD_APP_NAME`, `ARGOCD_APP_NAMESPACE`, `ARGOCD_APP_SOURCE_REPO_URL`,
//!   `ARGOCD_APP_SOURCE_PATH`, `ARGOCD_APP_SOURCE_TARGET_REVISION`, `KUBE_VERSION` and
//!   `KUBE_API_VERSIONS`. The ones plumb cannot know here (`ARGOCD_APP_PROJECT_NAME`, the
//!   resolved `ARGOCD_APP_REVISION*`) are an error naming the variable, never an empty string.
//! - **Imports** (`import`, `importstr`, `importbin`) are read through the source's
//!   [`SourceFs`] (a git revision from git's object database, never the work tree): first
//!   relative to the importing file, then in the library paths, the last one first, then in
//!   the source's own directory (Argo CD's search path is the source path followed by the
//!   libs, and go-jsonnet tries the rightmost first). An import that leaves the repository
//!   (`..` past the root, an absolute path, a symlink out) is an error naming the importing
//!   file and the path. `std.thisFile` is the repository-relative path (Argo CD's is the
//!   path in its checkout, which no two renders share).
//! - **Output**, as Argo CD reads the JSON (an array of objects, else one object): an
//!   object, or an array of objects whose `null` elements are skipped (Argo CD skips nil
//!   objects); `null` or `[]` is no object. A `kind: …List` object stands for its `items`
//!   (none when `items` is null). Anything else — a string, a number, an array holding an
//!   array or a scalar — is an error naming the file, as Argo CD fails to unmarshal it. Each
//!   object must have a `kind` and a `metadata.name` (a hook may have a `generateName`
//!   instead), as in a YAML file.
//! - **Limits**: a call stack of [`MAX_JSONNET_STACK`] frames, a deadline
//!   (`PLUMB_TOOL_TIMEOUT`, [`crate::render::DEFAULT_TOOL_TIMEOUT`]) and
//!   [`MAX_JSONNET_OUTPUT_BYTES`] of JSON. The program runs on a thread of its own, which
//!   asks the calling thread for every file it imports; past the deadline the render fails
//!   and the thread is abandoned (it cannot be stopped; it reads nothing more).
//! - **Errors** are one line: the `.jsonnet` file, the line and column when the evaluator
//!   gives one in that file (else the place in the imported file is quoted), and the reason.
//! - **Origins**: an object's `file` is its program and its line is unknown (0); no scalar
//!   has an origin, since a value may come from any expression of any imported file.
//!
//! Book: `docs/src/concepts/sources.md` ("Jsonnet").
//!
//! [`MAX_JSONNET_STACK`]: plumb_core::limits::MAX_JSONNET_STACK
//! [`MAX_JSONNET_OUTPUT_BYTES`]: plumb_core::limits::MAX_JSONNET_OUTPUT_BYTES

use crate::LoadError;
use crate::render::RenderedObject;
use crate::source::{EntryKind, SourceFs, join};
use jrsonnet_evaluator::error::ErrorKind;
use jrsonnet_evaluator::manifest::JsonFormat;
use jrsonnet_evaluator::tla::TlaArg;
use jrsonnet_evaluator::{AsPathLike, IStr, ImportResolver, SourcePath, State, apply_tla};
use jrsonnet_gcmodule::Acyclic;
use jrsonnet_ir::SourcePathT;
use plumb_core::argo::JsonnetSource;
use plumb_core::limits::{MAX_JSONNET_OUTPUT_BYTES, MAX_JSONNET_STACK};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The build environment Argo CD substitutes into `extVars` and `tlas` values: each name
/// with its value, or `None` for a variable Argo CD sets and plumb cannot know here.
pub(crate) fn build_env(
    source: &plumb_core::argo::AppSource,
    opts: &crate::render::RenderOptions,
) -> BTreeMap<&'static str, Option<String>> {
    BTreeMap::from([
        (
            "ARGOCD_APP_NAME",
            Some(opts.app_name.clone().unwrap_or_default()),
        ),
        (
            "ARGOCD_APP_NAMESPACE",
            Some(opts.namespace.clone().unwrap_or_default()),
        ),
        ("ARGOCD_APP_PROJECT_NAME", None),
        ("ARGOCD_APP_REVISION", None),
        ("ARGOCD_APP_REVISION_SHORT", None),
        ("ARGOCD_APP_REVISION_SHORT_8", None),
        ("ARGOCD_APP_SOURCE_REPO_URL", Some(source.repo_url.clone())),
        ("ARGOCD_APP_SOURCE_PATH", Some(source.path.clone())),
        (
            "ARGOCD_APP_SOURCE_TARGET_REVISION",
            Some(source.target_revision.clone()),
        ),
        (
            "KUBE_VERSION",
            Some(opts.kube_version.clone().unwrap_or_default()),
        ),
        ("KUBE_API_VERSIONS", Some(opts.api_versions.join(","))),
    ])
}

/// `settings` with the build environment substituted into every variable's and argument's
/// value, as Argo CD does before evaluating; an error names a variable plumb cannot know.
pub fn substitute(
    settings: &JsonnetSource,
    env: &BTreeMap<&'static str, Option<String>>,
) -> Result<JsonnetSource, String> {
    let mut out = settings.clone();
    for (field, vars) in [("extVars", &mut out.ext_vars), ("tlas", &mut out.tlas)] {
        for v in vars.iter_mut() {
            v.value = expand(&v.value, |name| match env.get(name) {
                Some(Some(value)) => Ok(value.clone()),
                Some(None) => Err(format!(
                    "spec.source.directory.jsonnet.{field} {:?}: ${name} is not known to plumb \
                     here; refusing to render it otherwise than Argo CD",
                    v.name
                )),
                None => Ok(String::new()),
            })?;
        }
    }
    Ok(out)
}

/// Go's `os.Expand`: `${name}`, `$name` (letters, digits, `_`) and the one-character special
/// names (`$$`, `$1`, `$*`, …) are replaced by `lookup` (`$$` by `$`, as Argo CD's mapping
/// does); a `$` before anything else stays; a malformed `${` or `${}` is dropped.
fn expand(
    s: &str,
    mut lookup: impl FnMut(&str) -> Result<String, String>,
) -> Result<String, String> {
    let special = |c: u8| b"*#$@!?-".contains(&c) || c.is_ascii_digit();
    let name_char = |c: u8| c == b'_' || c.is_ascii_alphanumeric();
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut i, mut j) = (0, 0);
    while j < b.len() {
        if b[j] != b'$' || j + 1 >= b.len() {
            j += 1;
            continue;
        }
        out.push_str(&s[i..j]);
        let rest = &b[j + 1..];
        // The name, and how many bytes after the `$` it took.
        let (name, width): (&str, usize) = if rest[0] == b'{' {
            if rest.len() > 2 && special(rest[1]) && rest[2] == b'}' {
                (&s[j + 2..j + 3], 3)
            } else {
                match rest.iter().position(|&c| c == b'}') {
                    Some(1) => ("", 2),
                    Some(end) => (&s[j + 2..j + 1 + end], end + 1),
                    None => ("", 1),
                }
            }
        } else if special(rest[0]) {
            (&s[j + 1..j + 2], 1)
        } else {
            let n = rest.iter().take_while(|&&c| name_char(c)).count();
            (&s[j + 1..j + 1 + n], n)
        };
        // A `$` before no name stays; `$$` is a `$` (Argo CD's escape).
        if (name.is_empty() && width == 0) || name == "$" {
            out.push('$');
        } else if !name.is_empty() {
            out.push_str(&lookup(name)?);
        }
        j += width + 1;
        i = j;
    }
    out.push_str(&s[i..]);
    Ok(out)
}

/// Whether `name` is a Jsonnet program a directory source evaluates (`*.jsonnet`; a
/// `*.libsonnet` is only imported).
pub(crate) fn is_program(name: &str) -> bool {
    name.ends_with(".jsonnet")
}

/// Evaluates the program `file` (repository-relative) of the directory source at `source_dir`
/// and returns its objects.
pub(crate) fn render_file(
    fs: &dyn SourceFs,
    source_dir: &str,
    file: &str,
    settings: &JsonnetSource,
    timeout: Duration,
) -> Result<Vec<RenderedObject>, LoadError> {
    let json = evaluate(fs, source_dir, file, settings, timeout)?;
    let value: Value = serde_json::from_str(&json).map_err(|e| {
        fail(
            file,
            None,
            format!("the program's JSON does not parse: {e}"),
        )
    })?;
    let mut objects = Vec::new();
    collect(value, file, true, &mut objects)?;
    Ok(objects
        .into_iter()
        .map(|object| RenderedObject {
            object: object.into(),
            file: file.to_string(),
            line: 0,
        })
        .collect())
}

/// The value of the program `file` (repository-relative) of the directory source at
/// `source_dir`, as JSON text: evaluated on a thread of its own against `timeout`, reading
/// its imports from `fs` through the calling thread. `render_file` makes objects of it;
/// the oracle test compares it with go-jsonnet's.
pub fn evaluate(
    fs: &dyn SourceFs,
    source_dir: &str,
    file: &str,
    settings: &JsonnetSource,
    timeout: Duration,
) -> Result<String, LoadError> {
    let mut search = Vec::new();
    for lib in settings.libs.iter().rev() {
        search.push(join("", lib, file).map_err(|e| {
            fail(
                file,
                None,
                format!("spec.source.directory.jsonnet.libs: {}", e.message),
            )
        })?);
    }
    search.push(source_dir.to_string());
    let job = Job {
        file: file.to_string(),
        search,
        ext_vars: settings
            .ext_vars
            .iter()
            .map(|v| (v.name.clone(), v.value.clone(), v.code))
            .collect(),
        tlas: settings
            .tlas
            .iter()
            .map(|v| (v.name.clone(), v.value.clone(), v.code))
            .collect(),
    };
    let (tx, rx) = mpsc::channel::<Msg>();
    let done = tx.clone();
    let spawned = std::thread::Builder::new()
        .name("jsonnet".into())
        .stack_size(64 << 20)
        .spawn(move || {
            let result = job.run(tx);
            let _ = done.send(Msg::Done(result));
        });
    if let Err(e) = spawned {
        return Err(fail(
            file,
            None,
            format!("cannot start the Jsonnet evaluation: {e}"),
        ));
    }
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Msg::Kind(path, reply)) => {
                let _ = reply.send(fs.kind(&path).map_err(|e| e.to_string()));
            }
            Ok(Msg::Read(path, reply)) => {
                let _ = reply.send(fs.read(&path).map_err(|e| e.to_string()));
            }
            Ok(Msg::Done(Ok(json))) => return Ok(json),
            Ok(Msg::Done(Err(f))) => return Err(f.into_error(file)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(fail(
                    file,
                    None,
                    format!(
                        "the Jsonnet evaluation did not finish within {} s (PLUMB_TOOL_TIMEOUT)",
                        timeout.as_secs_f64()
                    ),
                ));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(fail(
                    file,
                    None,
                    "the Jsonnet evaluation stopped unexpectedly",
                ));
            }
        }
    }
}

/// A message from the evaluation thread.
enum Msg {
    /// What is at a repository-relative path.
    Kind(String, Reply<Option<EntryKind>>),
    /// A file's bytes.
    Read(String, Reply<Vec<u8>>),
    /// The program's JSON, or why there is none.
    Done(Result<String, Failure>),
}

type Reply<T> = mpsc::Sender<Result<T, String>>;

/// An evaluation error: the message and, when known, where (a repository-relative file).
struct Failure {
    message: String,
    at: Option<(String, usize, usize)>,
}

impl Failure {
    fn into_error(self, file: &str) -> LoadError {
        match self.at {
            Some((at, line, column)) if at == file => LoadError {
                file: PathBuf::from(file),
                line: Some(line),
                column: Some(column),
                message: self.message,
            },
            Some((at, line, column)) => fail(
                file,
                None,
                format!("{} (at {at}:{line}:{column})", self.message),
            ),
            None => fail(file, None, self.message),
        }
    }
}

/// Everything the evaluation thread needs, owned.
struct Job {
    file: String,
    /// Library search directories, in the order they are tried.
    search: Vec<String>,
    ext_vars: Vec<(String, String, bool)>,
    tlas: Vec<(String, String, bool)>,
}

impl Job {
    fn run(self, tx: mpsc::Sender<Msg>) -> Result<String, Failure> {
        jrsonnet_evaluator::stack::set_stack_depth_limit(MAX_JSONNET_STACK);
        let context = jrsonnet_stdlib::ContextInitializer::new(
            jrsonnet_evaluator::trace::PathResolver::FileName,
        );
        for (name, value, code) in &self.ext_vars {
            if *code {
                context.add_ext_code(name, value).map_err(|e| failure(&e))?;
            } else {
                context.add_ext_str(name.as_str().into(), value.as_str().into());
            }
        }
        let mut builder = State::builder();
        builder
            .import_resolver(RepoImporter {
                tx,
                search: self.search,
            })
            .context_initializer(context);
        let state = builder.build();
        let _entered = state.enter();
        let value = state
            .import_resolved(repo_path(&self.file))
            .map_err(|e| failure(&e))?;
        // `apply_tla` takes its arguments keyed by the evaluator's interned strings (whose
        // hash never changes: the interior mutability is a reference count).
        #[allow(clippy::mutable_key_type)]
        let mut tlas: HashMap<IStr, TlaArg> = HashMap::new();
        for (name, value, code) in self.tlas {
            let arg = if code {
                TlaArg::InlineCode(value)
            } else {
                TlaArg::String(value.into())
            };
            tlas.insert(name.into(), arg);
        }
        let value = apply_tla(&tlas, value).map_err(|e| failure(&e))?;
        let json = value
            .manifest(JsonFormat::minify())
            .map_err(|e| failure(&e))?;
        if json.len() > MAX_JSONNET_OUTPUT_BYTES {
            return Err(Failure {
                message: format!(
                    "the program's output is {} bytes, over plumb's limit of {MAX_JSONNET_OUTPUT_BYTES}",
                    json.len()
                ),
                at: None,
            });
        }
        Ok(json)
    }
}

/// A repository file as the evaluator names it: its repository-relative path (also
/// `std.thisFile`, where Argo CD gives the path in its checkout).
#[derive(Acyclic, Hash, PartialEq, Eq, Debug)]
struct RepoFile(String);

impl std::fmt::Display for RepoFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl SourcePathT for RepoFile {
    fn is_default(&self) -> bool {
        false
    }
    fn path(&self) -> Option<&std::path::Path> {
        None
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn dyn_hash(&self, mut hasher: &mut dyn std::hash::Hasher) {
        std::hash::Hash::hash(self, &mut hasher);
    }
    fn dyn_eq(&self, other: &dyn SourcePathT) -> bool {
        other.as_any().downcast_ref::<Self>() == Some(self)
    }
    fn dyn_debug(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

fn repo_path(path: &str) -> SourcePath {
    SourcePath::new(RepoFile(path.to_string()))
}

fn repo_file(path: &SourcePath) -> Option<String> {
    path.downcast_ref::<RepoFile>().map(|f| f.0.clone())
}

/// One line: the evaluator's message (its lines joined) and the innermost place it names.
fn failure(e: &jrsonnet_evaluator::Error) -> Failure {
    let message = match e.error() {
        // The evaluator's own words name a flag of its command line.
        ErrorKind::StackOverflow => format!(
            "stack overflow: more than {MAX_JSONNET_STACK} nested calls (plumb's limit, as \
             go-jsonnet's default)"
        ),
        other => other.to_string(),
    };
    let message = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let span = match e.error() {
        ErrorKind::ImportSyntaxError { error, .. } => Some(error.location.clone()),
        _ => None,
    }
    .or_else(|| e.trace().0.iter().find_map(|el| el.location.clone()));
    let at = span.and_then(|span| {
        let file = repo_file(span.0.source_path())?;
        let [loc] = span.0.map_source_locations(&[span.1]);
        Some((file, loc.line, loc.column))
    });
    Failure { message, at }
}

/// Resolves and reads imports through the calling thread's [`SourceFs`].
#[derive(Acyclic)]
struct RepoImporter {
    tx: mpsc::Sender<Msg>,
    search: Vec<String>,
}

impl RepoImporter {
    fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Msg) -> Result<T, String> {
        let (reply, answer) = mpsc::channel();
        self.tx
            .send(make(reply))
            .map_err(|_| "the render was abandoned".to_string())?;
        answer
            .recv()
            .map_err(|_| "the render was abandoned".to_string())?
    }
}

fn import_error(message: String) -> jrsonnet_evaluator::Error {
    ErrorKind::ImportCallbackError(message).into()
}

impl ImportResolver for RepoImporter {
    fn resolve_from(
        &self,
        from: &SourcePath,
        path: &dyn AsPathLike,
    ) -> jrsonnet_evaluator::Result<SourcePath> {
        let rel = path.as_path();
        let rel: &std::path::Path = rel.as_ref();
        let rel = rel.to_string_lossy().into_owned();
        let importer = repo_file(from);
        let named = importer.as_deref().unwrap_or("<inline code>");
        let mut dirs = Vec::new();
        if let Some(importer) = &importer {
            dirs.push(importer.rsplit_once('/').map_or("", |(d, _)| d).to_string());
        }
        dirs.extend(self.search.iter().cloned());
        for dir in dirs {
            let candidate = join(&dir, &rel, named)
                .map_err(|e| import_error(format!("import {rel:?} in {named}: {}", e.message)))?;
            match self.ask(|r| Msg::Kind(candidate.clone(), r)) {
                Ok(Some(EntryKind::File)) => return Ok(repo_path(&candidate)),
                Ok(Some(EntryKind::Dir)) => {
                    return Err(import_error(format!(
                        "import {rel:?} in {named}: {candidate} is a directory"
                    )));
                }
                Ok(None) => {}
                Err(e) => return Err(import_error(format!("import {rel:?} in {named}: {e}"))),
            }
        }
        Err(import_error(format!(
            "import {rel:?} in {named}: not found beside the file nor in the library paths"
        )))
    }

    fn load_file_contents(&self, resolved: &SourcePath) -> jrsonnet_evaluator::Result<Vec<u8>> {
        if let Some(file) = repo_file(resolved) {
            return self
                .ask(|r| Msg::Read(file.clone(), r))
                .map_err(import_error);
        }
        if let Some(fifo) = resolved.downcast_ref::<jrsonnet_ir::SourceFifo>() {
            return Ok(fifo.1.to_vec());
        }
        Err(import_error(format!("cannot read {resolved}")))
    }
}

/// The objects of a program's value, appended to `out`: `top` is the value itself, else an
/// element of the top-level array or of a List's `items`.
fn collect(value: Value, file: &str, top: bool, out: &mut Vec<Value>) -> Result<(), LoadError> {
    match value {
        Value::Array(items) if top => {
            for item in items {
                collect(item, file, false, out)?;
            }
            Ok(())
        }
        Value::Null => Ok(()),
        Value::Object(mut map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind.ends_with("List") {
                match map.get("items") {
                    Some(Value::Array(_)) => {
                        let Some(Value::Array(items)) = map.remove("items") else {
                            unreachable!("checked above")
                        };
                        for item in items {
                            collect(item, file, false, out)?;
                        }
                        return Ok(());
                    }
                    Some(Value::Null) => return Ok(()),
                    _ => {}
                }
            }
            let object = Value::Object(map);
            check_object(&object, file)?;
            out.push(object);
            Ok(())
        }
        other => Err(fail(
            file,
            None,
            format!(
                "the program's value {}is {}, not an object or an array of objects",
                if top { "" } else { "holds an element that " },
                type_name(&other)
            ),
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// As for a YAML document: a `kind`, and a `metadata.name` unless the object is a hook named
/// by `generateName`.
fn check_object(object: &Value, file: &str) -> Result<(), LoadError> {
    let str_at = |ptr: &str| object.pointer(ptr).and_then(Value::as_str).unwrap_or("");
    if str_at("/kind").is_empty() {
        return Err(fail(
            file,
            None,
            "an object of the program's value has no kind",
        ));
    }
    let hook = !str_at("/metadata/generateName").is_empty()
        && [
            plumb_core::HOOK_ANNOTATION,
            plumb_core::HELM_HOOK_ANNOTATION,
        ]
        .iter()
        .any(|k| {
            object
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(*k))
                .is_some()
        });
    if !hook && str_at("/metadata/name").is_empty() {
        return Err(fail(
            file,
            None,
            format!(
                "a {} of the program's value has no metadata.name",
                str_at("/kind")
            ),
        ));
    }
    Ok(())
}

fn fail(file: &str, line: Option<usize>, message: impl Into<String>) -> LoadError {
    LoadError {
        file: PathBuf::from(file),
        line,
        column: None,
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use crate::render::{RenderOptions, render};
    use crate::source::tests::{TempDir, commit_all, git, link, write};
    use crate::source::{SourceFs, open_source};
    use plumb_core::argo::AppSource;
    use serde_json::{Value, json};

    fn source(directory: Value) -> AppSource {
        serde_json::from_value(json!({"repoURL": "file:///repo", "directory": directory}))
            .expect("a source")
    }

    fn cm(name: &str) -> String {
        format!("{{ apiVersion: 'v1', kind: 'ConfigMap', metadata: {{ name: '{name}' }} }}")
    }

    /// `(file, name)` of each rendered object, in order.
    fn rendered(fs: &dyn SourceFs, path: &str, directory: Value) -> Vec<(String, String)> {
        let r = render(fs, path, &source(directory), &RenderOptions::default())
            .unwrap_or_else(|e| panic!("renders: {e}"));
        r.objects
            .iter()
            .map(|o| {
                let name = o.object["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                (o.file.clone(), name)
            })
            .collect()
    }

    fn error(fs: &dyn SourceFs, path: &str, directory: Value) -> String {
        let e = render(fs, path, &source(directory), &RenderOptions::default())
            .expect_err("an error")
            .to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    fn names(objects: &[(String, String)]) -> Vec<&str> {
        objects.iter().map(|(_, n)| n.as_str()).collect()
    }

    #[test]
    fn objects_arrays_and_lists_as_argo_cd_reads_them() {
        let dir = TempDir::new("jsonnet-shapes");
        let root = dir.path();
        write(root, "a/object.jsonnet", &cm("one"));
        write(
            root,
            "a/shapes.jsonnet",
            &format!(
                "[{}, null, {}, {{ kind: 'List', apiVersion: 'v1', items: [{}, {}] }}]",
                cm("two"),
                cm("three"),
                cm("four"),
                cm("five")
            ),
        );
        let fs = open_source(root, None).expect("open");
        let got = rendered(fs.as_ref(), "a", json!({}));
        assert_eq!(names(&got), ["one", "two", "three", "four", "five"]);
        // No object at all: null, [], a List whose items are null (as Argo CD reads them).
        for program in [
            "null",
            "[]",
            "[null]",
            "{ kind: 'ConfigMapList', items: null }",
        ] {
            write(root, "none/p.jsonnet", program);
            assert_eq!(rendered(fs.as_ref(), "none", json!({})), [], "{program}");
        }
        assert_eq!(got[0].0, "a/object.jsonnet");
        assert_eq!(got[1].0, "a/shapes.jsonnet");
        let r = render(
            fs.as_ref(),
            "a",
            &source(json!({})),
            &RenderOptions::default(),
        )
        .unwrap();
        // The program is the origin: no line, no scalar origins.
        assert_eq!(r.objects[0].location(), "a/object.jsonnet");
        assert!(r.objects[0].object.origins().is_empty());
        // Numbers come out as JSON numbers, integers as integers.
        write(
            root,
            "n/n.jsonnet",
            "{ apiVersion: 'v1', kind: 'X', metadata: { name: 'n' }, i: 3, f: 1.5 }",
        );
        let r = render(
            fs.as_ref(),
            "n",
            &source(json!({})),
            &RenderOptions::default(),
        )
        .unwrap();
        assert_eq!(r.objects[0].object["i"], json!(3));
        assert_eq!(r.objects[0].object["f"], json!(1.5));

        for (program, what) in [
            ("'a string'", "is a string"),
            ("42", "is a number"),
            ("[1]", "holds an element that is a number"),
            ("[[{ kind: 'X' }]]", "holds an element that is an array"),
        ] {
            write(root, "bad/p.jsonnet", program);
            let e = error(fs.as_ref(), "bad", json!({}));
            assert!(e.starts_with("bad/p.jsonnet: the program's value"), "{e}");
            assert!(e.contains(what), "{e}");
        }
        write(root, "bad/p.jsonnet", "{ kind: 'ConfigMap' }");
        let e = error(fs.as_ref(), "bad", json!({}));
        assert!(e.contains("has no metadata.name"), "{e}");
    }

    #[test]
    fn the_walk_selects_programs_with_recurse_include_and_exclude() {
        let dir = TempDir::new("jsonnet-walk");
        let root = dir.path();
        write(
            root,
            "w/b.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-b\n",
        );
        write(root, "w/a.jsonnet", &cm("jsonnet-a"));
        write(root, "w/c.jsonnet", &cm("jsonnet-c"));
        write(root, "w/sub/d.jsonnet", &cm("jsonnet-d"));
        write(root, "w/sub/lib.libsonnet", "error 'never evaluated'");
        let fs = open_source(root, None).expect("open");
        let fs = fs.as_ref();
        assert_eq!(
            names(&rendered(fs, "w", json!({}))),
            ["jsonnet-a", "yaml-b", "jsonnet-c"]
        );
        assert_eq!(
            names(&rendered(fs, "w", json!({"recurse": true}))),
            ["jsonnet-a", "yaml-b", "jsonnet-c", "jsonnet-d"]
        );
        assert_eq!(
            names(&rendered(
                fs,
                "w",
                json!({"recurse": true, "include": "*.jsonnet"})
            )),
            ["jsonnet-a", "jsonnet-c", "jsonnet-d"]
        );
        assert_eq!(
            names(&rendered(
                fs,
                "w",
                json!({"recurse": true, "exclude": "{sub/*,a.jsonnet}"})
            )),
            ["yaml-b", "jsonnet-c"]
        );
    }

    #[test]
    fn imports_libs_ext_vars_and_tlas() {
        let dir = TempDir::new("jsonnet-imports");
        let root = dir.path();
        write(
            root,
            "vendor/k.libsonnet",
            "{ cm(name):: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name } } }",
        );
        write(root, "other/k.libsonnet", "error 'the later library wins'");
        write(root, "apps/x/helper.libsonnet", "{ suffix: '-h' }");
        write(root, "apps/x/data.txt", "hello\n");
        write(
            root,
            "apps/x/shared.libsonnet",
            "{ shared: 'from-the-source-dir' }",
        );
        write(
            root,
            "apps/x/sub/inner.libsonnet",
            "(import '../helper.libsonnet') + { inner: true }",
        );
        write(
            root,
            "apps/x/main.jsonnet",
            "local k = import 'k.libsonnet';\n\
             local h = import 'sub/inner.libsonnet';\n\
             function(prefix, count=1, flag=false)\n\
             [k.cm(prefix + h.suffix) + { data: {\n\
               text: importstr 'data.txt',\n\
               bytes: std.toString(std.length(importbin 'data.txt')),\n\
               env: std.extVar('env'),\n\
               code: std.toString(std.extVar('code')),\n\
               count: std.toString(count), flag: std.toString(flag),\n\
               shared: (import 'shared.libsonnet').shared, this: std.thisFile,\n\
             } }]",
        );
        let fs = open_source(root, None).expect("open");
        let directory = json!({"jsonnet": {
            "libs": ["other", "vendor"],
            "extVars": [{"name": "env", "value": "prod"}, {"name": "code", "value": "{a: 1 + 1}", "code": true}],
            "tlas": [{"name": "prefix", "value": "web"}, {"name": "count", "value": "2 * 3", "code": true}],
        }});
        let r = render(
            fs.as_ref(),
            "apps/x",
            &source(directory),
            &RenderOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let o = &r.objects[0].object;
        assert_eq!(o["metadata"]["name"], "web-h");
        assert_eq!(
            o["data"],
            json!({"text": "hello\n", "bytes": "6", "env": "prod", "code": "{\"a\": 2}",
                   "count": "6", "flag": "false", "shared": "from-the-source-dir", "this": "apps/x/main.jsonnet"})
        );

        // A TLA the function lacks, an undefined external variable: errors naming the file.
        let e = error(
            fs.as_ref(),
            "apps/x",
            json!({"jsonnet": {
            "libs": ["vendor"], "extVars": [{"name": "env", "value": "p"}, {"name": "code", "value": "1", "code": true}],
            "tlas": [{"name": "prefix", "value": "w"}, {"name": "nope", "value": "1"}]}}),
        );
        assert!(e.starts_with("apps/x/main.jsonnet"), "{e}");
        assert!(e.contains("nope"), "{e}");
        let e = error(
            fs.as_ref(),
            "apps/x",
            json!({"jsonnet": {"libs": ["vendor"],
            "tlas": [{"name": "prefix", "value": "w"}]}}),
        );
        assert!(e.starts_with("apps/x/main.jsonnet:8:"), "{e}");
        assert!(e.contains("external variable is not defined: code"), "{e}");
        // A library path must stay inside the repository.
        let e = error(
            fs.as_ref(),
            "apps/x",
            json!({"jsonnet": {"libs": ["../up"]}}),
        );
        assert!(
            e.contains("spec.source.directory.jsonnet.libs") && e.contains("leaves the repository"),
            "{e}"
        );
    }

    #[test]
    fn imports_out_of_the_repository_are_refused() {
        let outside = TempDir::new("jsonnet-outside");
        write(outside.path(), "secret.libsonnet", "{ secret: 'leaked' }");
        let dir = TempDir::new("jsonnet-escape");
        let root = dir.path();
        let abs = outside.path().join("secret.libsonnet");
        link(root, "lib/link.libsonnet", abs.to_str().unwrap());
        let fs = open_source(root, None).expect("open");
        for (import, quoted) in [
            ("../../secret.libsonnet", "../../secret.libsonnet"),
            (abs.to_str().unwrap(), abs.to_str().unwrap()),
            ("../lib/link.libsonnet", "../lib/link.libsonnet"),
        ] {
            write(
                root,
                "app/main.jsonnet",
                &format!("(import '{import}') + {{ kind: 'X', metadata: {{ name: 'x' }} }}"),
            );
            let e = error(fs.as_ref(), "app", json!({}));
            assert!(e.starts_with("app/main.jsonnet"), "{e}");
            assert!(
                e.contains(&format!("import {quoted:?} in app/main.jsonnet")),
                "{e}"
            );
            assert!(!e.contains("leaked"), "{e}");
        }
        write(root, "app/main.jsonnet", "importstr 'missing.txt'");
        let e = error(fs.as_ref(), "app", json!({}));
        assert!(
            e.contains("\"missing.txt\"") && e.contains("not found"),
            "{e}"
        );
    }

    #[test]
    fn a_git_revision_is_read_from_the_object_database() {
        let dir = TempDir::new("jsonnet-git");
        let root = dir.path();
        git(root, &["init", "-q"]);
        write(root, "app/lib.libsonnet", "{ name: 'committed' }");
        write(
            root,
            "app/main.jsonnet",
            "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: (import 'lib.libsonnet').name } }",
        );
        commit_all(root, "one");
        // The work tree changes; the revision does not.
        write(root, "app/lib.libsonnet", "{ name: 'work-tree' }");
        write(root, "app/new.jsonnet", &cm("untracked"));
        let fs = open_source(root, Some("HEAD")).expect("open");
        assert_eq!(
            names(&rendered(fs.as_ref(), "app", json!({}))),
            ["committed"]
        );
        let wt = crate::source::DirSource::open(root).expect("open");
        assert_eq!(
            names(&rendered(&wt, "app", json!({}))),
            ["work-tree", "untracked"]
        );
    }

    #[test]
    fn errors_are_one_line_naming_the_program() {
        let dir = TempDir::new("jsonnet-errors");
        let root = dir.path();
        let fs = open_source(root, None).expect("open");
        let cases = [
            ("{\n  a: ,\n}", "e/p.jsonnet:2:"),
            ("local x = 1;\n\nerror 'boom ' + x", "e/p.jsonnet:3:"),
            ("local f(n) = f(n + 1);\nf(0)", "e/p.jsonnet:"),
            ("(import 'lib.libsonnet').x", "e/p.jsonnet: "),
            ("{ a: std.extVar('missing') }", "e/p.jsonnet:"),
        ];
        write(root, "e/lib.libsonnet", "{\n  x: error 'deep',\n}");
        for (program, prefix) in cases {
            write(root, "e/p.jsonnet", program);
            let e = error(fs.as_ref(), "e", json!({}));
            assert!(e.starts_with(prefix), "{program:?}: {e}");
        }
        write(root, "e/p.jsonnet", "local x = 1;\n\nerror 'boom ' + x");
        let e = error(fs.as_ref(), "e", json!({}));
        assert!(e.contains("boom 1"), "{e}");
        write(root, "e/p.jsonnet", "(import 'lib.libsonnet').x");
        let e = error(fs.as_ref(), "e", json!({}));
        assert!(
            e.contains("deep") && e.contains("(at e/lib.libsonnet:2:"),
            "{e}"
        );
        write(root, "e/p.jsonnet", "local f(n) = f(n + 1);\nf(0)");
        let e = error(fs.as_ref(), "e", json!({}));
        assert!(e.contains("stack overflow"), "{e}");
    }

    #[test]
    fn the_build_environment_is_substituted_as_argo_cd_does() {
        use super::expand;
        let env = |name: &str| -> Result<String, String> {
            match name {
                "A" => Ok("app".into()),
                "EMPTY" => Ok(String::new()),
                "1" => Ok("one".into()),
                _ => Ok(String::new()),
            }
        };
        for (given, want) in [
            ("plain", "plain"),
            ("$A-${A}", "app-app"),
            ("$$A costs $$5", "$A costs $5"),
            ("$UNKNOWN|${UNKNOWN}|", "||"),
            ("trailing $", "trailing $"),
            ("$ space", "$ space"),
            ("$-x $1", "x one"),
            ("${} ${A", " A"),
            ("a${A}b$Ac", "aappb"),
            ("é$A✓", "éapp✓"),
        ] {
            assert_eq!(expand(given, env).as_deref(), Ok(want), "{given:?}");
        }

        let dir = TempDir::new("jsonnet-env");
        let root = dir.path();
        write(
            root,
            "app/p.jsonnet",
            "function(ns) { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: std.extVar('name'), namespace: ns } }",
        );
        let fs = open_source(root, None).expect("open");
        let mut source = source(json!({"jsonnet": {
            "extVars": [{"name": "name", "value": "${ARGOCD_APP_NAME}-$ARGOCD_APP_SOURCE_PATH"}],
            "tlas": [{"name": "ns", "value": "$ARGOCD_APP_NAMESPACE"}],
        }}));
        source.path = "app".into();
        let opts = RenderOptions {
            app_name: Some("guestbook".into()),
            namespace: Some("web".into()),
            ..RenderOptions::default()
        };
        let r = render(fs.as_ref(), "app", &source, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.objects[0].object["metadata"],
            json!({"name": "guestbook-app", "namespace": "web"})
        );
        // What plumb cannot know is refused by name, never substituted as empty.
        let mut source = source.clone();
        source.directory.as_mut().unwrap().jsonnet.tlas[0].value = "$ARGOCD_APP_REVISION".into();
        let e = render(fs.as_ref(), "app", &source, &opts)
            .expect_err("refused")
            .to_string();
        assert!(
            e.starts_with("app: spec.source.directory.jsonnet.tlas \"ns\": $ARGOCD_APP_REVISION"),
            "{e}"
        );
    }

    #[test]
    fn a_program_past_the_deadline_fails_naming_it() {
        let dir = TempDir::new("jsonnet-deadline");
        write(
            dir.path(),
            "slow.jsonnet",
            "std.foldl(function(a, x) a + x, std.range(1, 2000000), 0)",
        );
        let fs = open_source(dir.path(), None).expect("open");
        let e = super::evaluate(
            fs.as_ref(),
            "",
            "slow.jsonnet",
            &Default::default(),
            std::time::Duration::from_millis(50),
        )
        .expect_err("past the deadline")
        .to_string();
        assert!(
            e.starts_with("slow.jsonnet: the Jsonnet evaluation did not finish within 0.05 s"),
            "{e}"
        );
    }
}
