//! The catalogue of bad input (`tests/bad-input/` at the repository root), run through the
//! real `plumb` binary: every case must exit 2 with exactly one line on stderr that names
//! the file (and line:column where it applies) or the object and field, never panic, and
//! stay within [`MAX_CPU`] of CPU time and [`MAX_RSS_BYTES`] of memory.
//!
//! Each case is a directory holding its input files and a `case` file of lines:
//!
//! ```text
//! # what the case is about
//! run: diff --desired in.yaml --live {common}/live.yaml   (the arguments, split on spaces)
//! expect: in.yaml:3:7                                     (each must appear in the line)
//! setup: symlink zero.yaml /dev/zero                      (made at run time, see `setup`)
//! needs: helm                                             (skipped without helm, unless REQUIRE_HELM)
//! ```
//!
//! The case directory is copied to a temporary directory, which is the working directory of
//! the run; `{common}` is `tests/bad-input/_common`. Big, deep or special files (100 MB, 10,000
//! levels, symlinks, FIFOs) are made by `setup` lines at run time and never committed.
//!
//! Time and memory are measured with `getrusage(RUSAGE_CHILDREN)`: CPU time as the
//! difference across each run (the cases run one at a time), memory as the children's peak
//! resident set, which only grows: it is checked after every case, so the first case to
//! pass the bound is the one named. CPU time rather than wall time is bounded, so that a busy
//! machine does not fail the test; a run is killed after [`WALL_DEADLINE`].

mod common;
use nix::sys::resource::{UsageWho, getrusage};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// CPU time (user + system) one case may take.
const MAX_CPU: Duration = Duration::from_secs(2);
/// Peak resident memory of any case.
const MAX_RSS_BYTES: u64 = 500 * 1024 * 1024;
/// A run still going after this is killed and fails (a loop that never ends).
const WALL_DEADLINE: Duration = Duration::from_secs(30);
/// The catalogue must not shrink below this.
const MIN_CASES: usize = 60;

fn catalogue() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad-input")
}

struct Case {
    name: String,
    dir: PathBuf,
    args: Vec<String>,
    expect: Vec<String>,
    setup: Vec<Vec<String>>,
    needs_helm: bool,
}

fn read_case(dir: &Path) -> Case {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(dir.join("case"))
        .unwrap_or_else(|e| panic!("{name}: cannot read its `case` file: {e}"));
    let mut case = Case {
        name: name.clone(),
        dir: dir.to_path_buf(),
        args: Vec::new(),
        expect: Vec::new(),
        setup: Vec::new(),
        needs_helm: false,
    };
    let common = catalogue().join("_common").display().to_string();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("{name}: line without `key:`: {line}"));
        let value = value.trim().replace("{common}", &common);
        match key.trim() {
            "run" => case.args = value.split_whitespace().map(String::from).collect(),
            "expect" => case.expect.push(value),
            "setup" => case
                .setup
                .push(value.split_whitespace().map(String::from).collect()),
            "needs" if value == "helm" => case.needs_helm = true,
            other => panic!("{name}: unknown key {other}"),
        }
    }
    assert!(!case.args.is_empty(), "{name}: no `run:` line");
    assert!(!case.expect.is_empty(), "{name}: no `expect:` line");
    case
}

fn write_file(path: &Path, parts: &[&[u8]], repeat: Option<(&[u8], usize)>, tail: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    for p in parts {
        f.write_all(p).expect("write");
    }
    if let Some((chunk, n)) = repeat {
        for _ in 0..n {
            f.write_all(chunk).expect("write");
        }
    }
    f.write_all(tail).expect("write");
    f.flush().expect("flush");
}

/// Makes what a case cannot commit: big, deep and special files.
fn setup(dir: &Path, action: &[String], case: &str) {
    let arg = |i: usize| -> &str {
        action
            .get(i)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{case}: setup {action:?} lacks argument {i}"))
    };
    let num = |i: usize| -> usize { arg(i).parse().expect("a number") };
    let path = |i: usize| dir.join(arg(i));
    match arg(0) {
        // symlink LINK TARGET (TARGET as written: /dev/zero, ../outside, /etc/passwd)
        "symlink" => {
            if let Some(parent) = path(1).parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::os::unix::fs::symlink(arg(2), path(1)).expect("symlink");
        }
        // fifo PATH: a named pipe nobody writes to (reading it would block forever)
        "fifo" => {
            if let Some(parent) = path(1).parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            let ok = Command::new("mkfifo")
                .arg(path(1))
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "{case}: mkfifo failed");
        }
        // big-configmap PATH MB: a ConfigMap whose one value is MB mebibytes
        "big-configmap" => write_file(
            &path(1),
            &[b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  v: "],
            Some((&[b'a'; 1024 * 1024], num(2))),
            b"\n",
        ),
        // deep-flow PATH N: a ConfigMap-shaped object with N nested flow sequences
        "deep-flow" => write_file(
            &path(1),
            &[b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata: "],
            Some((b"[", num(2))),
            &b"]".repeat(num(2)),
        ),
        // deep-block PATH N: N nested block sequences on one line (`- - - … a`)
        "deep-block" => write_file(
            &path(1),
            &[b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nx:\n  "],
            Some((b"- ", num(2))),
            b"a\n",
        ),
        // deep-json PATH N: N nested JSON objects under a field
        "deep-json" => write_file(
            &path(1),
            &[br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":"#],
            Some((br#"{"a":"#, num(2))),
            &[b"1".as_slice(), &b"}".repeat(num(2)), b"}"].concat(),
        ),
        // many-ignore PATH N: an Application with N ignoreDifferences entries
        "many-ignore" => write_file(
            &path(1),
            &[b"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: many\nspec:\n  destination:\n    namespace: default\n  ignoreDifferences:\n"],
            Some((b"  - kind: ConfigMap\n    jsonPointers: [/data/x]\n", num(2))),
            b"",
        ),
        // long-name PATH N: a ConfigMap whose name is N characters
        "long-name" => write_file(
            &path(1),
            &[b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "],
            Some((b"a", num(2))),
            b"\ndata:\n  k: v\n",
        ),
        // many-docs PATH N: N small documents
        "many-docs" => write_file(
            &path(1),
            &[],
            Some((
                b"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n",
                num(2),
            )),
            b"",
        ),
        other => panic!("{case}: unknown setup action {other}"),
    }
}

fn helm_dir() -> Option<PathBuf> {
    let helm = std::env::var_os("PLUMB_HELM").map(PathBuf::from)?;
    helm.is_file()
        .then(|| helm.parent().map(Path::to_path_buf))?
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    cpu: Duration,
    wall: Duration,
    peak_rss: u64,
}

fn children_cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let t = |tv: nix::sys::time::TimeVal| {
        Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
    };
    t(u.user_time()) + t(u.system_time())
}

fn children_peak_rss() -> u64 {
    // Linux reports ru_maxrss in kibibytes.
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage")
        .max_rss() as u64
        * 1024
}

fn run(case: &Case, work: &Path) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
    cmd.args(&case.args)
        .current_dir(work)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .env("HOME", work)
        .env("PLUMB_REPO_CACHE", work.join(".cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = helm_dir() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    }
    let cpu_before = children_cpu();
    let started = Instant::now();
    let mut child = cmd.spawn().expect("plumb starts");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if started.elapsed() > WALL_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let wall = started.elapsed();
    let stdout = out_reader.join().expect("stdout reader");
    let stderr = err_reader.join().expect("stderr reader");
    Run {
        code: status.and_then(|s| s.code()),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        cpu: children_cpu().saturating_sub(cpu_before),
        wall,
        peak_rss: children_peak_rss(),
    }
}

/// What is wrong with a run, if anything.
fn judge(case: &Case, r: &Run) -> Vec<String> {
    let mut problems = Vec::new();
    if r.code != Some(2) {
        problems.push(format!("exit {:?}, wanted 2", r.code));
    }
    let lines: Vec<&str> = r.stderr.lines().collect();
    if lines.len() != 1 {
        problems.push(format!("{} lines on stderr, wanted 1", lines.len()));
    }
    let first = lines.first().copied().unwrap_or("");
    if !first.starts_with("error: ") {
        problems.push("stderr does not start with `error: `".into());
    }
    for e in &case.expect {
        if !first.contains(e.as_str()) {
            problems.push(format!("stderr lacks {e:?}"));
        }
    }
    if r.stderr.contains("panicked") || r.stderr.contains("overflowed its stack") {
        problems.push("panic".into());
    }
    if r.cpu > MAX_CPU {
        problems.push(format!("CPU time {:?} over {MAX_CPU:?}", r.cpu));
    }
    if r.peak_rss > MAX_RSS_BYTES {
        problems.push(format!("peak memory {} MiB over 500 MiB", r.peak_rss >> 20));
    }
    if r.code.is_none() && r.wall >= WALL_DEADLINE {
        problems.push(format!("still running after {WALL_DEADLINE:?}"));
    }
    problems
}

#[test]
fn every_bad_input_is_one_error_line_in_bounded_time_and_memory() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(catalogue())
        .expect("tests/bad-input exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('_'))
        })
        .collect();
    dirs.sort();
    let only = std::env::var("BAD_INPUT_ONLY").ok();
    let require_helm = std::env::var_os("REQUIRE_HELM").is_some();
    let scratch = std::env::temp_dir().join(format!("plumb-bad-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut failures = Vec::new();
    let (mut ran, mut skipped) = (0, 0);
    let (mut max_cpu, mut max_wall) = (Duration::ZERO, Duration::ZERO);
    let mut max_cpu_case = String::new();
    for dir in &dirs {
        let case = read_case(dir);
        if only.as_deref().is_some_and(|o| !case.name.contains(o)) {
            continue;
        }
        if case.needs_helm && helm_dir().is_none() {
            assert!(
                !require_helm,
                "{}: REQUIRE_HELM set but PLUMB_HELM is not a file",
                case.name
            );
            eprintln!("{:<44} skipped: no PLUMB_HELM", case.name);
            skipped += 1;
            continue;
        }
        // Each case's files under one more level, so that `..` from the case stays in
        // the scratch directory and a symlink "out of the repository" has a target.
        let work = scratch.join(&case.name).join("repo");
        common::copy_tree(&case.dir, &work);
        std::fs::write(
            scratch.join(&case.name).join("outside.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n",
        )
        .expect("outside file");
        for action in &case.setup {
            setup(&work, action, &case.name);
        }
        let r = run(&case, &work);
        ran += 1;
        let problems = judge(&case, &r);
        let line = r.stderr.lines().next().unwrap_or("").to_string();
        eprintln!(
            "{:<44} exit {:?} cpu {:>5} ms wall {:>5} ms peak {:>4} MiB  {}",
            case.name,
            r.code,
            r.cpu.as_millis(),
            r.wall.as_millis(),
            r.peak_rss >> 20,
            line
        );
        if r.cpu > max_cpu {
            max_cpu = r.cpu;
            max_cpu_case = case.name.clone();
        }
        max_wall = max_wall.max(r.wall);
        if !problems.is_empty() {
            let stdout_head: String = r.stdout.chars().take(300).collect();
            let stderr_head: String = r.stderr.chars().take(600).collect();
            failures.push(format!(
                "{}: {}\n  stderr: {stderr_head}\n  stdout: {stdout_head}",
                case.name,
                problems.join("; ")
            ));
        }
        let _ = std::fs::remove_dir_all(scratch.join(&case.name));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!(
        "bad input: {ran} cases run, {skipped} skipped; max CPU {} ms ({max_cpu_case}), max wall {} ms, peak memory of any case {} MiB",
        max_cpu.as_millis(),
        max_wall.as_millis(),
        children_peak_rss() >> 20
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} bad-input cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if only.is_none() {
        assert!(
            dirs.len() >= MIN_CASES,
            "the catalogue has {} cases, fewer than {MIN_CASES}",
            dirs.len()
        );
    }
}
