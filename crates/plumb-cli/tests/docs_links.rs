//! The book's links hold: every relative Markdown link of `docs/src/**/*.md`, `README.md` and
//! `ARCHITECTURE.md` names a file that exists, an anchor into a `.md` file names one of its
//! headings (mdBook's slug: lowercase, alphanumerics, `-` and `_` kept, whitespace `-`, the
//! rest dropped; a repeated heading gets `-1`, `-2`, …), every page `docs/src/SUMMARY.md`
//! lists exists, and every page under `docs/src` is listed there. Links inside fenced code
//! blocks and inline code are not links; `http(s):`, `mailto:` and other schemes are not
//! checked. One failure lists every problem as `file:line: target`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where a line stands against fenced code blocks.
#[derive(Debug, PartialEq, Eq)]
enum Fenced {
    /// Prose.
    Outside,
    /// A fence that opens or closes a block.
    Fence,
    /// Code inside a block.
    Inside,
}

/// The fenced code block (``` or ~~~, three or more, closed by as many or more of the same)
/// a walk over a page's lines is in.
#[derive(Default)]
struct Fences(Option<(char, usize)>);

impl Fences {
    fn step(&mut self, line: &str) -> Fenced {
        let t = line.trim_start();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        let opening = ['`', '~']
            .into_iter()
            .map(|c| (c, run(c)))
            .find(|&(_, n)| n >= 3);
        match (self.0, opening) {
            (None, Some(f)) => {
                self.0 = Some(f);
                Fenced::Fence
            }
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n && t[n2..].trim().is_empty() => {
                self.0 = None;
                Fenced::Fence
            }
            (Some(_), _) => Fenced::Inside,
            (None, None) => Fenced::Outside,
        }
    }
}

/// The text with fenced code blocks and inline code blanked out (newlines kept, so byte
/// offsets still give line numbers).
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fences = Fences::default();
    for line in text.split_inclusive('\n') {
        if fences.step(line) == Fenced::Outside {
            out.push_str(line);
        } else {
            out.push_str(if line.ends_with('\n') { "\n" } else { "" });
        }
    }
    strip_code_spans(&out)
}

/// Code spans (a run of n backticks to the next run of exactly n, within a paragraph)
/// replaced by spaces.
fn strip_code_spans(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut end = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    end = Some(j + m);
                    break;
                }
                j += m;
            } else if b[j] == b'\n'
                && text[j + 1..]
                    .trim_start_matches([' ', '\t'])
                    .starts_with('\n')
            {
                break; // a blank line ends the paragraph
            } else {
                j += 1;
            }
        }
        match end {
            Some(e) => {
                for c in &mut out[i..e] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = e;
            }
            None => i += n,
        }
    }
    // Only ASCII bytes were replaced, by ASCII: still UTF-8.
    String::from_utf8(out).expect("utf-8")
}

/// mdBook's id for a heading's text (mdbook-html's `id_from_content`).
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The text a heading shows: links reduced to their text, code and emphasis marks dropped.
fn heading_text(raw: &str) -> String {
    let mut s = String::new();
    let mut rest = raw;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        s.push_str(&rest[..open]);
        s.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    s.push_str(rest);
    s.replace(['`', '*'], "")
}

/// The ids of a Markdown file's headings (ATX and setext), as mdBook gives them.
fn anchors(text: &str) -> BTreeSet<String> {
    // `ids` is also mdBook's set of ids in use: a taken id gets the first free `-1`, `-2`, ….
    let mut ids = BTreeSet::new();
    let mut add = |raw: &str| {
        let raw = raw.trim();
        let id = match raw.rfind("{#") {
            Some(i) if raw.ends_with('}') => raw[i + 2..raw.len() - 1]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string(),
            _ => {
                let base = slug(&heading_text(raw));
                (0..)
                    .map(|n| {
                        if n == 0 {
                            base.clone()
                        } else {
                            format!("{base}-{n}")
                        }
                    })
                    .find(|id| !ids.contains(id))
                    .expect("a free id")
            }
        };
        ids.insert(id);
    };
    let mut fences = Fences::default();
    let mut previous = "";
    for line in text.lines() {
        if fences.step(line) != Fenced::Outside {
            // No heading inside a block, nor a setext underline right after one.
            previous = "";
            continue;
        }
        let t = line.trim_start();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line.len() - t.len() < 4 {
            let rest = &t[hashes..];
            if rest.is_empty() || rest.starts_with([' ', '\t']) {
                add(rest.trim().trim_end_matches('#'));
                previous = "";
                continue;
            }
        }
        let underline = !t.is_empty()
            && (t.trim_end().chars().all(|c| c == '=') || t.trim_end().chars().all(|c| c == '-'));
        let paragraph = !previous.trim().is_empty()
            && !previous
                .trim_start()
                .starts_with(['-', '*', '+', '|', '>', '#'])
            && !previous
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit());
        if underline && paragraph && line.len() - t.len() < 4 {
            add(previous);
            previous = "";
            continue;
        }
        previous = line;
    }
    ids
}

/// Every link target with its line: inline links and reference definitions.
fn links(text: &str) -> Vec<(usize, String)> {
    let prose = prose(text);
    let line_of = |offset: usize| prose[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = prose[from..].find("](").map(|i| from + i) {
        let start = i + 2;
        let rest = &prose[start..];
        let target = if let Some(r) = rest.strip_prefix('<') {
            r.split('>').next().unwrap_or("").to_string()
        } else {
            let mut depth = 0usize;
            let end = rest
                .char_indices()
                .find(|&(_, c)| match c {
                    '(' => {
                        depth += 1;
                        false
                    }
                    ')' if depth == 0 => true,
                    ')' => {
                        depth -= 1;
                        false
                    }
                    c => c.is_whitespace(),
                })
                .map_or(rest.len(), |(e, _)| e);
            rest[..end].to_string()
        };
        out.push((line_of(start), target));
        from = start;
    }
    for (n, line) in prose.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[')
            && let Some(close) = rest.find("]:")
            && !rest[..close].contains('[')
            && !rest.starts_with('^')
        {
            let target = rest[close + 2..].split_whitespace().next().unwrap_or("");
            out.push((n + 1, target.trim_matches(['<', '>']).to_string()));
        }
    }
    out
}

/// Whether a target is outside the repository's files (a URL, a mail address).
fn external(target: &str) -> bool {
    let scheme = target
        .split_once(':')
        .map(|(s, _)| {
            !s.is_empty()
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        })
        .unwrap_or(false);
    scheme || target.starts_with("//")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(hex) = std::str::from_utf8(&b[i + 1..i + 3])
            && let Ok(v) = u8::from_str_radix(hex, 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// `a/b/../c` → `a/c` (without touching the file system).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn docs_links_resolve() {
    let root = normalize(&root());
    let src = root.join("docs/src");
    let mut files = Vec::new();
    markdown_files(&src, &mut files);
    let pages: BTreeSet<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&src).expect("under docs/src").to_path_buf())
        .collect();
    files.push(root.join("README.md"));
    files.push(root.join("ARCHITECTURE.md"));

    let mut cache: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let mut broken = Vec::new();
    let shown = |p: &Path| p.strip_prefix(&root).unwrap_or(p).display().to_string();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", shown(file)));
        for (line, target) in links(&text) {
            if target.is_empty() || external(&target) {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                normalize(&file.parent().expect("parent").join(percent_decode(path)))
            };
            let problem = if !dest.exists() {
                Some("no such file")
            } else if let Some(anchor) = anchor
                && dest.extension().is_some_and(|x| x == "md")
            {
                let ids = cache.entry(dest.clone()).or_insert_with(|| {
                    anchors(&std::fs::read_to_string(&dest).unwrap_or_default())
                });
                (!ids.contains(&percent_decode(anchor))).then_some("no such heading")
            } else {
                None
            };
            if let Some(why) = problem {
                broken.push(format!("{}:{line}: {target} ({why})", shown(file)));
            }
        }
    }

    // SUMMARY.md lists every page, and only pages that exist (those links are checked above).
    let summary_path = src.join("SUMMARY.md");
    let summary = std::fs::read_to_string(&summary_path).expect("docs/src/SUMMARY.md");
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .filter(|(_, t)| !t.is_empty() && !external(t))
        .map(|(_, t)| normalize(Path::new(t.split('#').next().unwrap_or(""))))
        .collect();
    for page in &pages {
        if page != Path::new("SUMMARY.md") && !listed.contains(page) {
            broken.push(format!(
                "docs/src/SUMMARY.md: docs/src/{} (a page not listed in SUMMARY.md)",
                page.display()
            ));
        }
    }

    assert!(
        broken.is_empty(),
        "{} broken link(s) in the book, README.md or ARCHITECTURE.md:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn slugs_and_code_are_read_as_mdbook_reads_them() {
    assert_eq!(
        slug(&heading_text("`plumb app` and `plumb controller`")),
        "plumb-app-and-plumb-controller"
    );
    assert_eq!(
        slug("Refresh on push (git webhooks)"),
        "refresh-on-push-git-webhooks"
    );
    let ids = anchors(
        "# A\n\n## A\n\n```\n# not a heading\n```\n\nSetext\n------\n\n## [Linked](x.md) `code`\n",
    );
    let want: BTreeSet<String> = ["a", "a-1", "setext", "linked-code"]
        .map(String::from)
        .into();
    assert_eq!(ids, want);
    let found = links(
        "[a](x.md) `[b](y.md)` and\n```\n[c](z.md)\n```\n[d\ntext](w.md#h) [e](https://e.example)\n[ref]: r.md\n",
    );
    let want: Vec<(usize, String)> = vec![
        (1, "x.md".into()),
        (6, "w.md#h".into()),
        (6, "https://e.example".into()),
        (7, "r.md".into()),
    ];
    assert_eq!(found, want);
    assert!(external("https://e.example") && external("mailto:a@b.example"));
    assert!(!external("../concepts/sync.md#sync-loops"));
}
