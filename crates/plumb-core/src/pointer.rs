//! RFC 6901 JSON pointers, as Argo CD's `ignoreDifferences.jsonPointers` use them
//! (through an RFC 6902 `remove` operation, where a missing path is not an error).
//!
//! [`escape_token`] / [`unescape_token`] are the one place pointer tokens (`~0`, `~1`) are
//! spelled; every crate builds and splits pointers through them.

use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A parsed JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPointer {
    raw: String,
    tokens: Vec<String>,
}

/// Why a string is not a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON pointer '{pointer}': {reason}")]
pub struct PointerError {
    /// The text given.
    pub pointer: String,
    /// Why it is not a pointer.
    pub reason: &'static str,
}

impl JsonPointer {
    /// Parses `/a/b~1c/0`; the empty string is the whole document.
    pub fn parse(raw: &str) -> Result<Self, PointerError> {
        let err = |reason| PointerError {
            pointer: raw.to_string(),
            reason,
        };
        if raw.is_empty() {
            return Ok(JsonPointer {
                raw: String::new(),
                tokens: Vec::new(),
            });
        }
        let Some(rest) = raw.strip_prefix('/') else {
            return Err(err("must start with '/'"));
        };
        let mut tokens = Vec::new();
        for part in rest.split('/') {
            let mut token = String::with_capacity(part.len());
            let mut chars = part.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => token.push('~'),
                        Some('1') => token.push('/'),
                        _ => return Err(err("'~' must be followed by '0' or '1'")),
                    }
                } else {
                    token.push(c);
                }
            }
            tokens.push(token);
        }
        Ok(JsonPointer {
            raw: raw.to_string(),
            tokens,
        })
    }

    /// Builds a pointer from unescaped tokens.
    pub fn from_tokens<I: IntoIterator<Item = S>, S: Into<String>>(tokens: I) -> Self {
        let tokens: Vec<String> = tokens.into_iter().map(Into::into).collect();
        let mut raw = String::new();
        for t in &tokens {
            raw.push('/');
            raw.push_str(&escape_token(t));
        }
        JsonPointer { raw, tokens }
    }

    /// The reference tokens, unescaped (`a`, `b/c`, `0` for `/a/b~1c/0`).
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// The pointer as written (escaped).
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The value the pointer addresses, if any.
    pub fn get<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        let mut cur = doc;
        for t in &self.tokens {
            cur = step(cur, t)?;
        }
        Some(cur)
    }

    /// Removes the addressed value; `false` (not an error) when the path does not exist.
    /// The whole document (the empty pointer) is never removed.
    pub fn remove(&self, doc: &mut Value) -> bool {
        let Some((last, parents)) = self.tokens.split_last() else {
            return false;
        };
        let mut cur = doc;
        for t in parents {
            cur = match cur {
                Value::Object(m) => match m.get_mut(t.as_str()) {
                    Some(v) => v,
                    None => return false,
                },
                Value::Array(a) => match index(t).and_then(|i| a.get_mut(i)) {
                    Some(v) => v,
                    None => return false,
                },
                _ => return false,
            };
        }
        match cur {
            Value::Object(m) => m.remove(last.as_str()).is_some(),
            Value::Array(a) => match index(last) {
                Some(i) if i < a.len() => {
                    a.remove(i);
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

fn index(token: &str) -> Option<usize> {
    if token.len() > 1 && token.starts_with('0') {
        return None;
    }
    token.parse().ok()
}

fn step<'a>(v: &'a Value, token: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(token),
        Value::Array(a) => a.get(index(token)?),
        _ => None,
    }
}

/// One reference token as a pointer spells it: `~` → `~0`, `/` → `~1` (RFC 6901).
pub fn escape_token(token: &str) -> Cow<'_, str> {
    // Bytes, not chars: once per key of every rendered object.
    if token.bytes().any(|b| b == b'~' || b == b'/') {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// The token a pointer segment spells (`~1` → `/`, then `~0` → `~`); lenient: an invalid
/// escape stays as written (use [`JsonPointer::parse`] to validate).
pub fn unescape_token(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn tokens_escape_and_unescape() {
        assert_eq!(super::escape_token("a/b~c"), "a~1b~0c");
        assert_eq!(super::unescape_token("a~1b~0c"), "a/b~c");
        assert_eq!(
            super::unescape_token("~01"),
            "~1",
            "~1 is replaced before ~0"
        );
        assert!(matches!(
            super::escape_token("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn parses_escapes_and_round_trips() {
        let p = JsonPointer::parse("/metadata/annotations/a~1b~0c").unwrap();
        assert_eq!(p.tokens(), ["metadata", "annotations", "a/b~c"]);
        assert_eq!(
            JsonPointer::from_tokens(p.tokens().to_vec()).as_str(),
            p.as_str()
        );
    }

    #[test]
    fn rejects_malformed_pointers() {
        assert!(JsonPointer::parse("spec/replicas").is_err());
        assert!(JsonPointer::parse("/a~2").is_err());
        assert!(JsonPointer::parse("/a~").is_err());
    }

    #[test]
    fn remove_is_silent_on_missing_paths() {
        let mut doc = json!({"webhooks": [{"caBundle": "x", "name": "a"}, {"caBundle": "y"}]});
        assert!(
            JsonPointer::parse("/webhooks/0/caBundle")
                .unwrap()
                .remove(&mut doc)
        );
        assert_eq!(doc, json!({"webhooks": [{"name": "a"}, {"caBundle": "y"}]}));
        assert!(
            !JsonPointer::parse("/webhooks/5/caBundle")
                .unwrap()
                .remove(&mut doc)
        );
        assert!(!JsonPointer::parse("/garbage").unwrap().remove(&mut doc));
        assert!(!JsonPointer::parse("/webhooks/01").unwrap().remove(&mut doc));
    }
}
