//! Patch and replacement targets: kustomize's selector (anchored regular expressions on
//! group, version, kind, name and namespace; Kubernetes label-selector syntax on labels
//! and annotations).

use super::kustfile::known_fields;
use super::resource::Res;
use super::tree::{Map, Node};
use regex::Regex;

/// One anchored pattern: a plain string matches only itself, so it is compared as such
/// (no regular expression compiled per patch target).
enum Pat {
    Literal(String),
    Re(Regex),
}

impl Pat {
    fn is_match(&self, s: &str) -> bool {
        match self {
            Pat::Literal(l) => l == s,
            Pat::Re(re) => re.is_match(s),
        }
    }
}

/// A compiled selector.
#[derive(Default)]
pub struct Selector {
    group: Option<Pat>,
    version: Option<Pat>,
    kind: Option<Pat>,
    name: Option<Pat>,
    namespace: Option<Pat>,
    labels: Option<LabelSelector>,
    annotations: Option<LabelSelector>,
    /// The name pattern when it is a plain name (no regular-expression syntax): only
    /// resources that have or had that name can match.
    literal_name: Option<String>,
}

/// Whether a pattern matches exactly itself (no regular-expression syntax).
fn is_literal(p: &str) -> bool {
    !p.is_empty() && !p.chars().any(is_regex_meta)
}

/// A character with a meaning of its own in a regular expression (Go's and the regex
/// crate's syntax alike).
pub(super) fn is_regex_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$'
    )
}

fn anchored(field: &str, p: &str) -> Result<Option<Pat>, String> {
    if p.is_empty() {
        return Ok(None);
    }
    if is_literal(p) {
        return Ok(Some(Pat::Literal(p.to_string())));
    }
    Regex::new(&format!("^(?:{p})$"))
        .map(|re| Some(Pat::Re(re)))
        .map_err(|e| format!("invalid {field} regex: {e}"))
}

impl Selector {
    /// Reads a selector mapping (`group`, `version`, `kind`, `name`, `namespace`,
    /// `labelSelector`, `annotationSelector`); `text` reads scalars as strings.
    pub fn parse(m: &Map, text: &dyn Fn(&Node) -> Option<String>) -> Result<Selector, String> {
        let s = |f: &str| m.get(f).and_then(text).unwrap_or_default();
        known_fields(
            m,
            &[
                "group",
                "version",
                "kind",
                "name",
                "namespace",
                "labelSelector",
                "annotationSelector",
            ],
        )?;
        let ls = s("labelSelector");
        let asel = s("annotationSelector");
        let name = s("name");
        Ok(Selector {
            literal_name: is_literal(&name).then(|| name.clone()),
            group: anchored("group", &s("group"))?,
            version: anchored("version", &s("version"))?,
            kind: anchored("kind", &s("kind"))?,
            name: anchored("name", &name)?,
            namespace: anchored("namespace", &s("namespace"))?,
            labels: if ls.is_empty() {
                None
            } else {
                Some(
                    LabelSelector::parse(&ls)
                        .map_err(|e| format!("invalid label selector: {e}"))?,
                )
            },
            annotations: if asel.is_empty() {
                None
            } else {
                Some(
                    LabelSelector::parse(&asel)
                        .map_err(|e| format!("invalid annotation selector: {e}"))?,
                )
            },
        })
    }

    /// The name every resource this selector matches has (now or originally), when the
    /// selector names one exactly.
    pub fn literal_name(&self) -> Option<&str> {
        self.literal_name.as_deref()
    }

    pub fn matches(&self, r: &Res) -> bool {
        let cur = r.cur_id_ref();
        let org = r.org_id_ref();
        let m = |re: &Option<Pat>, a: &str, b: &str| {
            re.as_ref()
                .is_none_or(|re| re.is_match(a) || re.is_match(b))
        };
        // Most selective first: a name (the other tests only run for resources it keeps).
        if !m(&self.name, org.name, cur.name) {
            return false;
        }
        if let Some(ns) = &self.namespace
            && !ns.is_match(org.effective_namespace())
            && !ns.is_match(cur.effective_namespace())
        {
            return false;
        }
        let one = |re: &Option<Pat>, a: &str| re.as_ref().is_none_or(|re| re.is_match(a));
        if !one(&self.group, cur.group)
            || !one(&self.version, cur.version)
            || !one(&self.kind, cur.kind)
        {
            return false;
        }
        if let Some(ls) = &self.labels
            && !ls.matches(&r.string_map("labels"))
        {
            return false;
        }
        if let Some(asel) = &self.annotations
            && !asel.matches(&r.string_map("annotations"))
        {
            return false;
        }
        true
    }
}

/// A Kubernetes label selector (`a=b,c!=d,e in (f,g),!h`).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    reqs: Vec<Req>,
}

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        // Split at commas outside parentheses.
        let mut parts = Vec::new();
        let mut depth = 0;
        let mut cur = String::new();
        for c in s.chars() {
            match c {
                '(' => {
                    depth += 1;
                    cur.push(c);
                }
                ')' => {
                    depth -= 1;
                    cur.push(c);
                }
                ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        parts.push(cur);
        for p in parts {
            let p = p.trim();
            if p.is_empty() {
                return Err(format!("found '', expected: identifier in {s:?}"));
            }
            reqs.push(parse_req(p)?);
        }
        Ok(LabelSelector { reqs })
    }

    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        let get = |k: &str| labels.iter().find(|(l, _)| l == k).map(|(_, v)| v.as_str());
        self.reqs.iter().all(|r| match r {
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
            Req::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            Req::NotIn(k, vs) => get(k).is_none_or(|v| !vs.iter().any(|x| x == v)),
            Req::Gt(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Req::Lt(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }
}

fn parse_req(p: &str) -> Result<Req, String> {
    if let Some(k) = p.strip_prefix('!') {
        return Ok(Req::NotExists(k.trim().to_string()));
    }
    for (op, neg) in [(" notin ", true), (" in ", false)] {
        if let Some(i) = p.find(op) {
            let key = p[..i].trim().to_string();
            let set = p[i + op.len()..].trim();
            let inner = set
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .ok_or_else(|| format!("expected a parenthesised set in {p:?}"))?;
            let vals = inner.split(',').map(|v| v.trim().to_string()).collect();
            return Ok(if neg {
                Req::NotIn(key, vals)
            } else {
                Req::In(key, vals)
            });
        }
    }
    for (op, kind) in [("!=", 0), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
        if let Some(i) = p.find(op) {
            let key = p[..i].trim().to_string();
            let val = p[i + op.len()..].trim().to_string();
            return Ok(match kind {
                0 => Req::NotIn(key, vec![val]),
                1 => Req::In(key, vec![val]),
                2 => Req::Gt(
                    key,
                    val.parse()
                        .map_err(|_| format!("invalid number in {p:?}"))?,
                ),
                _ => Req::Lt(
                    key,
                    val.parse()
                        .map_err(|_| format!("invalid number in {p:?}"))?,
                ),
            });
        }
    }
    Ok(Req::Exists(p.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors() {
        let s = LabelSelector::parse("app=web, tier in (a,b),!legacy,env!=prod").unwrap();
        assert!(s.matches(&l(&[("app", "web"), ("tier", "b")])));
        assert!(!s.matches(&l(&[("app", "web"), ("tier", "c")])));
        assert!(!s.matches(&l(&[("app", "web"), ("tier", "a"), ("legacy", "")])));
        assert!(!s.matches(&l(&[("app", "web"), ("tier", "a"), ("env", "prod")])));
        assert!(LabelSelector::parse("a,,b").is_err());
        let e = LabelSelector::parse("canary").unwrap();
        assert!(e.matches(&l(&[("canary", "x")])) && !e.matches(&l(&[])));
    }

    #[test]
    fn literal_names() {
        assert!(is_literal("app-1") && is_literal("my_app"));
        for p in [
            "", "app.1", "app-.*", "a|b", "(a)", "a+", "[ab]", "^a$", "a{2}", "a\\d",
        ] {
            assert!(!is_literal(p), "{p}");
        }
    }

    #[test]
    fn regexes_are_anchored() {
        let re = anchored("name", "web|api").unwrap().unwrap();
        assert!(re.is_match("web") && re.is_match("api") && !re.is_match("webx"));
    }
}
