//! Argo CD's globs, matched with `globset`. Two dialects, as Argo CD has them:
//!
//! - [`Wildcard`]: `*` (any run of characters, `/` included) and `?` (one byte); every other
//!   character is literal. Argo CD matches `ignoreDifferences` and `resource.customizations`
//!   group/kind patterns this way, and admission policies (Kyverno, Gatekeeper) match names,
//!   kinds and namespaces the same way. An empty pattern matches only the empty string.
//! - [`PathGlob`] / [`path_match`]: `spec.source.directory.include`/`exclude`: `*` and `?`
//!   as above (a `*` crosses `/`, as Argo CD compiles these globs without separators),
//!   `[abc]`, `[a-z]`, `[!x]`/`[^x]` classes and `{a,b}` alternatives (nested too). An
//!   unclosed `[` or `{` is literal.
//!
//! `?` matches one byte: Kubernetes names, kinds and groups are ASCII, and paths were
//! matched by bytes before.
//!
//! ```
//! use plumb_core::glob::{Wildcard, path_match};
//! assert!(Wildcard::new("*.k8s.io").is_match("admissionregistration.k8s.io"));
//! assert!(!Wildcard::new("[ab]").is_match("a"));
//! assert!(path_match("{base,overlays/*}/*.yaml", "overlays/prod/web.yaml"));
//! ```

use globset::{GlobBuilder, GlobMatcher};

/// A compiled `*`/`?` pattern (see the module docs).
#[derive(Debug, Clone)]
pub struct Wildcard {
    pattern: String,
    matcher: Option<GlobMatcher>,
}

/// `*`, `?` and literal characters only (runs of `*` are one `*`).
fn wildcard_to_glob(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        match c {
            '*' if out.ends_with('*') => {}
            '[' | ']' | '{' | '}' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

fn builder(glob: &str) -> GlobBuilder<'_> {
    let mut b = GlobBuilder::new(glob);
    b.literal_separator(false)
        .backslash_escape(false)
        .empty_alternates(true);
    b
}

impl Wildcard {
    /// Compiles `pattern` (a pattern `globset` refuses is compared as a plain string).
    pub fn new(pattern: &str) -> Wildcard {
        // Patterns without wildcards compare as strings (most group/kind patterns).
        let matcher = (pattern.contains(['*', '?']) && pattern != "*")
            .then(|| builder(&wildcard_to_glob(pattern)).build().ok())
            .flatten()
            .map(|g| g.compile_matcher());
        Wildcard {
            pattern: pattern.to_string(),
            matcher,
        }
    }

    /// Whether `text` matches the pattern.
    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(text),
            None if self.pattern == "*" => true,
            None => self.pattern == text,
        }
    }

    /// The pattern as given.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

/// Whether `text` matches the `*`/`?` pattern (compiles it; keep a [`Wildcard`] to match
/// one pattern many times).
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    Wildcard::new(pattern).is_match(text)
}

/// The most alternatives one `{a,b}` pattern may expand to. Argo CD's matcher never expands
/// braces; plumb does (globset has no nested alternatives), so `{a,b}{a,b}…` would otherwise
/// grow as 2ⁿ.
pub const MAX_BRACE_ALTERNATIVES: usize = 1024;

/// A pattern whose `{a,b}` groups expand to more than [`MAX_BRACE_ALTERNATIVES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "glob {pattern:?} expands to more than {MAX_BRACE_ALTERNATIVES} alternatives ({{a,b}} groups multiply); use fewer groups"
)]
pub struct GlobError {
    /// The pattern as given.
    pub pattern: String,
}

/// `{a,b}` alternatives expanded (innermost-first is not needed: the first top-level group is
/// expanded and the results expanded again). An unbalanced `{` is literal. Stops with an
/// error once more than [`MAX_BRACE_ALTERNATIVES`] results exist.
fn expand_braces(pattern: &str) -> Result<Vec<String>, GlobError> {
    let mut out = Vec::new();
    expand_into(pattern, &mut out).map_err(|()| GlobError {
        pattern: pattern.to_string(),
    })?;
    Ok(out)
}

/// Every expansion produces at least one result, so the work done before the limit is hit
/// is bounded by the limit times the pattern's nesting.
fn expand_into(pattern: &str, out: &mut Vec<String>) -> Result<(), ()> {
    let Some(open) = pattern.find('{') else {
        if out.len() >= MAX_BRACE_ALTERNATIVES {
            return Err(());
        }
        out.push(pattern.to_string());
        return Ok(());
    };
    let bytes = pattern.as_bytes();
    let (mut depth, mut parts, mut start) = (0usize, Vec::new(), open + 1);
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    parts.push(&pattern[start..i]);
                    let (head, tail) = (&pattern[..open], &pattern[i + 1..]);
                    for alt in parts {
                        expand_into(&format!("{head}{alt}{tail}"), out)?;
                    }
                    return Ok(());
                }
            }
            b',' if depth == 1 => {
                parts.push(&pattern[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    // Unbalanced: the `{` is literal, later groups still expand.
    let (head, tail) = pattern.split_at(open + 1);
    let mut rest = Vec::new();
    expand_into(tail, &mut rest)?;
    for t in rest {
        if out.len() >= MAX_BRACE_ALTERNATIVES {
            return Err(());
        }
        out.push(format!("{head}{t}"));
    }
    Ok(())
}

/// One brace-free alternative as a globset glob: classes kept, runs of `*` one `*` (a `*`
/// crosses `/` anyway, and `**/` would otherwise also match no directory at all), an unclosed
/// `[` and every remaining `{`, `}`, `]` literal. `None` for an alternative that matches
/// nothing (an empty class `[]`).
fn path_alternative_to_glob(alt: &str) -> Option<String> {
    let mut out = String::with_capacity(alt.len());
    let mut rest = alt;
    while let Some(c) = rest.chars().next() {
        match c {
            '[' => match rest[1..].find(']') {
                Some(0) => return None,
                Some(end) => {
                    let body = &rest[1..=end];
                    if matches!(body, "!" | "^") {
                        // `[!]`: not nothing, i.e. any one byte.
                        out.push('?');
                    } else {
                        out.push('[');
                        out.push_str(body);
                        out.push(']');
                    }
                    rest = &rest[end + 2..];
                    continue;
                }
                None => out.push_str("[[]"),
            },
            '*' if out.ends_with('*') => {}
            '{' | '}' | ']' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// A compiled `directory.include` / `exclude` glob (see the module docs).
#[derive(Debug, Clone)]
pub struct PathGlob {
    alternatives: Vec<GlobMatcher>,
}

impl PathGlob {
    /// Compiles `pattern`; an error only when its braces expand to too many alternatives.
    pub fn new(pattern: &str) -> Result<PathGlob, GlobError> {
        Ok(PathGlob {
            alternatives: expand_braces(pattern)?
                .iter()
                .filter_map(|alt| path_alternative_to_glob(alt))
                .filter_map(|glob| builder(&glob).build().ok())
                .map(|g| g.compile_matcher())
                .collect(),
        })
    }

    /// Whether a repository path (relative to the source path) matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.alternatives.iter().any(|m| m.is_match(path))
    }
}

/// Whether a repository path matches a `directory.include` / `exclude` glob (compiles it;
/// keep a [`PathGlob`] to match many paths). A pattern that expands too far matches nothing.
pub fn path_match(pattern: &str, path: &str) -> bool {
    PathGlob::new(pattern).is_ok_and(|g| g.is_match(path))
}

/// One entry of an Argo CD namespace list (`--application-namespaces`, an AppProject's
/// `sourceNamespaces`): `/regex/` (unanchored, as Go's `regexp.MatchString`), else a glob
/// (`*`, `?`, classes, `{a,b}`; `*` matches any run of characters; `\` escapes).
#[derive(Debug, Clone)]
pub enum NamespacePattern {
    /// A glob entry.
    Glob(GlobMatcher),
    /// A `/regex/` entry (unanchored).
    Regex(regex::Regex),
}

impl NamespacePattern {
    /// Compiles one entry; the error says why (an invalid glob or regular expression).
    pub fn new(pattern: &str) -> Result<NamespacePattern, String> {
        if pattern.len() > 2 && pattern.starts_with('/') && pattern.ends_with('/') {
            let re = &pattern[1..pattern.len() - 1];
            return regex::Regex::new(re)
                .map(NamespacePattern::Regex)
                .map_err(|e| {
                    // regex's syntax errors span lines (the pattern, a caret, the error):
                    // one line, the error itself.
                    let text = e.to_string();
                    let why = text.lines().last().unwrap_or_default().trim();
                    let why = why.strip_prefix("error: ").unwrap_or(why);
                    format!("invalid regular expression {re:?}: {why}")
                });
        }
        GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map(|g| NamespacePattern::Glob(g.compile_matcher()))
            .map_err(|e| format!("invalid glob {pattern:?}: {}", e.kind()))
    }

    /// Whether `namespace` matches this entry.
    pub fn is_match(&self, namespace: &str) -> bool {
        match self {
            NamespacePattern::Glob(g) => g.is_match(namespace),
            NamespacePattern::Regex(r) => r.is_match(namespace),
        }
    }
}

/// A list of [`NamespacePattern`]s: a namespace is in it when any entry matches.
#[derive(Debug, Clone, Default)]
pub struct NamespaceList {
    patterns: Vec<NamespacePattern>,
}

impl NamespaceList {
    /// Compiles every entry (empty entries skipped); the error names the entry.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<NamespaceList, String> {
        let mut out = Vec::new();
        for p in patterns
            .iter()
            .map(AsRef::as_ref)
            .filter(|p| !p.trim().is_empty())
        {
            out.push(NamespacePattern::new(p.trim())?);
        }
        Ok(NamespaceList { patterns: out })
    }

    /// A comma-separated list, as Argo CD's `--application-namespaces` takes it.
    pub fn parse(list: &str) -> Result<NamespaceList, String> {
        NamespaceList::new(&list.split(',').collect::<Vec<_>>())
    }

    /// Whether the list has no entries (blank entries do not count).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether any entry matches `namespace`.
    pub fn is_match(&self, namespace: &str) -> bool {
        self.patterns.iter().any(|p| p.is_match(namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The semantics of plumb-diff's and plumb-doctor's matchers before they used this
    /// module (both: `*`, `?`, everything else literal).
    #[test]
    fn wildcard_table() {
        let table: &[(&str, &str, bool)] = &[
            ("*", "apps", true),
            ("*", "", true),
            ("", "", true),
            ("", "apps", false),
            ("*.k8s.io", "admissionregistration.k8s.io", true),
            ("*.k8s.io", "k8s.io", false),
            ("Deploy?ent", "Deployment", true),
            ("Deploy?ent", "Deploment", false),
            ("apps", "apps2", false),
            ("apps", "apps", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("a**", "a", true),
            ("**/x", "/x", true),
            ("**/x", "x", false),
            ("*x", "a/b/x", true),
            ("a?c", "a/c", true),
            ("web-*", "web-1", true),
            ("web-*", "api-1", false),
            ("[ab]", "a", false),
            ("[ab]", "[ab]", true),
            ("{a,b}", "a", false),
            ("{a,b}", "{a,b}", true),
            ("a\\*", "a\\bc", true),
            ("kube-*", "kube-system", true),
            ("*-system", "kube-system", true),
            ("?", "", false),
            ("??", "ab", true),
        ];
        for (p, t, want) in table {
            assert_eq!(Wildcard::new(p).is_match(t), *want, "{p:?} ~ {t:?}");
            assert_eq!(wildcard_match(p, t), *want, "{p:?} ~ {t:?}");
        }
    }

    /// The semantics of plumb-render's include/exclude matcher before it used this module.
    #[test]
    fn path_table() {
        let table: &[(&str, &str, bool)] = &[
            ("*.yaml", "a.yaml", true),
            ("*.yaml", "sub/a.yaml", true),
            ("*.yaml", "a.yml", false),
            ("{*.yaml,*.yml}", "a.yml", true),
            ("{*.yaml,*.yml}", "a.json", false),
            (
                "{base,overlays/{prod,dev}}/*.yaml",
                "overlays/dev/x.yaml",
                true,
            ),
            (
                "{base,overlays/{prod,dev}}/*.yaml",
                "overlays/qa/x.yaml",
                false,
            ),
            ("{a,}b", "b", true),
            ("{a,}b", "ab", true),
            ("{a", "{a", true),
            ("a}", "a}", true),
            ("a,b", "a,b", true),
            ("[ab].yaml", "a.yaml", true),
            ("[ab].yaml", "c.yaml", false),
            ("[!ab].yaml", "c.yaml", true),
            ("[^ab].yaml", "a.yaml", false),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("[ab", "[ab", true),
            ("a]", "a]", true),
            ("[]x", "x", false),
            ("?.yaml", "a.yaml", true),
            ("?.yaml", "ab.yaml", false),
            ("*", "", true),
            ("", "", true),
            ("", "a", false),
            ("dir/*", "dir/sub/a.yaml", true),
            ("**/*.yaml", "a/b/c.yaml", true),
            ("**/*.yaml", "c.yaml", false),
            ("{config.yaml,env-use2/*}", "env-use2/x.yml", true),
            ("{config.yaml,env-use2/*}", "config.yaml", true),
            ("{config.yaml,env-use2/*}", "other.yaml", false),
            ("app-?.json", "app-1.json", true),
            ("[ab]*.yaml", "b1.yaml", true),
            ("[!ab]*.yaml", "b1.yaml", false),
            ("{a,{b,c}}.yaml", "c.yaml", true),
            ("[!]x", "ax", true),
            ("a[*]", "a*", true),
            ("a[*]", "ab", false),
        ];
        for (p, t, want) in table {
            assert_eq!(path_match(p, t), *want, "{p:?} ~ {t:?}");
        }
    }

    #[test]
    fn brace_expansion_is_bounded_and_names_the_pattern() {
        // 2^10 = 1024 alternatives: the limit itself is fine.
        let ten = "{a,b}".repeat(10);
        assert!(PathGlob::new(&ten).is_ok_and(|g| g.is_match(&"ab".repeat(5))));
        let eleven = "{a,b}".repeat(11);
        let e = PathGlob::new(&eleven).unwrap_err();
        assert_eq!(e.pattern, eleven);
        assert!(
            e.to_string()
                .starts_with(&format!("glob {eleven:?} expands to more than 1024"))
        );
        // 2^40 alternatives fail fast instead of exhausting memory.
        let start = std::time::Instant::now();
        assert!(PathGlob::new(&"{a,b}".repeat(40)).is_err());
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        // Nested groups count their leaves; an unbalanced brace stays literal.
        assert!(PathGlob::new(&format!("{{{}}}", ["x"; 1025].join(","))).is_err());
        assert!(PathGlob::new(&format!("{{{}}}", ["x"; 1024].join(","))).is_ok());
        assert!(path_match("{a", "{a"));
        assert!(!path_match(&eleven, "a"));
    }

    #[test]
    fn namespace_lists_as_argo_cd_matches_them() {
        let l = NamespaceList::parse("team-*, /^ops-[0-9]+$/,,prod").unwrap();
        for (ns, want) in [
            ("team-a", true),
            ("team-", true),
            ("ops-12", true),
            ("ops-x", false),
            ("prod", true),
            ("production", false),
            ("other", false),
        ] {
            assert_eq!(l.is_match(ns), want, "{ns}");
        }
        // Regular expressions are not anchored (Go's regexp.MatchString).
        assert!(NamespaceList::parse("/dev/").unwrap().is_match("my-dev-1"));
        // A comma always separates entries (a flag's list); braces work in a list given whole.
        assert!(NamespaceList::new(&["{a,b}-*"]).unwrap().is_match("b-1"));
        assert!(NamespaceList::parse("").unwrap().is_empty());
        assert!(
            NamespaceList::parse("/(/")
                .unwrap_err()
                .starts_with("invalid regular expression")
        );
        assert!(
            NamespaceList::parse("[a-")
                .unwrap_err()
                .starts_with("invalid glob \"[a-\"")
        );
    }
}
