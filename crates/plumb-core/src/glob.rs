//! Argo CD's globs, matched with `globset`. Two dialects, as Argo CD has them:
//!
//! - [`Wildcard`]: `*` (any run of characters, `/` included) and `?` (one byte); every other
//!   character is literal. Argo CD matches `ignoreDifferences` and `resource.customizations`
//!   group/kind patterns this way, and admission policies (Kyverno, Gatekeeper) match names,
//!   kinds and namespaces the same way. An empty pattern matches only the empty string.
//! - [`path_match`]: `spec.source.directory.include`/`exclude`: `*` and `?` as above (a `*`
//!   crosses `/`, as Argo CD compiles these globs without separators), `[abc]`, `[a-z]`,
//!   `[!x]`/`[^x]` classes and `{a,b}` alternatives (nested too). An unclosed `[` or `{` is
//!   literal.
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

    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(text),
            None if self.pattern == "*" => true,
            None => self.pattern == text,
        }
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

/// Whether `text` matches the `*`/`?` pattern (compiles it; keep a [`Wildcard`] to match
/// one pattern many times).
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    Wildcard::new(pattern).is_match(text)
}

/// `{a,b}` alternatives expanded (innermost-first is not needed: the first top-level group is
/// expanded and the results expanded again). An unbalanced `{` is literal.
fn expand_braces(pattern: &str) -> Vec<String> {
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_string()];
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
                    return parts
                        .iter()
                        .flat_map(|alt| expand_braces(&format!("{head}{alt}{tail}")))
                        .collect();
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
    expand_braces(tail)
        .into_iter()
        .map(|t| format!("{head}{t}"))
        .collect()
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
    pub fn new(pattern: &str) -> PathGlob {
        PathGlob {
            alternatives: expand_braces(pattern)
                .iter()
                .filter_map(|alt| path_alternative_to_glob(alt))
                .filter_map(|glob| builder(&glob).build().ok())
                .map(|g| g.compile_matcher())
                .collect(),
        }
    }

    /// Whether a repository path (relative to the source path) matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.alternatives.iter().any(|m| m.is_match(path))
    }
}

/// Whether a repository path matches a `directory.include` / `exclude` glob (compiles it;
/// keep a [`PathGlob`] to match many paths).
pub fn path_match(pattern: &str, path: &str) -> bool {
    PathGlob::new(pattern).is_match(path)
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
}
