//! Text output of `argocd app diff`: YAML rendering and line diffs.
//!
//! Argo CD prints each differing resource by marshalling both sides with
//! `sigs.k8s.io/yaml` (JSON-marshal, then go-yaml v2 re-marshals it) into two
//! temporary files and running `diff LIVE TARGET` on them. This module
//! reproduces both steps byte for byte:
//!
//! * [`to_yaml`] renders a JSON value the way `sigs.k8s.io/yaml.Marshal` does
//!   (go-yaml v2 emitter: key order, scalar styles, quoting, 80-column folding).
//! * [`normal_diff`] and [`unified_diff`] print GNU diffutils' default
//!   ("normal") and `-u` formats. They reimplement GNU diff's own line
//!   matching (identical prefix/suffix trimming, discarding of unmatchable
//!   lines, Myers' middle-snake search, boundary shifting), so that hunks land
//!   where GNU diff puts them, not just somewhere valid.
//!
//! Known differences from the Go and C originals, all outside what real
//! Kubernetes objects contain:
//!
//! * Strings that make Go's `JSONToYAML` fail (raw U+007F or C1 control
//!   characters other than U+0085, keys containing U+0085) are rendered
//!   escaped instead of failing.
//! * When go-yaml's key order is cyclic for a map (e.g. keys `a1`, `a01`,
//!   `a0b`), Go's output depends on map iteration order and varies between
//!   runs; this module picks one fixed order.
//! * Non-ASCII keys are ordered with `char::is_alphabetic`/`is_numeric`
//!   standing in for Go's `unicode.IsLetter`/`IsDigit`.
//! * GNU diff's binary-file detection (NUL bytes) is not reproduced.

use serde_json::Value;
use std::collections::HashMap;

// ---------------------------------------------------------------------------
// YAML
// ---------------------------------------------------------------------------

/// Renders `v` as `sigs.k8s.io/yaml.Marshal` does for the unstructured object
/// Argo CD prints in `argocd app diff`.
///
/// The value goes through the same steps as in Go: numbers are typed as the
/// Kubernetes unstructured decoder types them (`int64`, else `float64`),
/// JSON-encoded, re-read by go-yaml v2 (so `2.0` becomes the integer `2`),
/// then emitted by go-yaml v2 with its key order, scalar styles and line
/// folding. The result always ends with a newline. (For a side that does not
/// exist, Argo CD writes an empty file rather than `null`.)
#[must_use]
pub fn to_yaml(v: &Value) -> String {
    let node = build_node(v);
    let mut e = Emitter::new();
    e.emit_node(&node, Ctx::ROOT);
    // Document end: go-yaml writes an indent (i.e. ends the last line).
    e.indent = -1;
    e.write_indent();
    e.out
}

/// [`to_yaml`] with a comment after each scalar value: `comment` gets the scalar's JSON
/// pointer and returns the text to write after `# ` (e.g. its source location). A block
/// scalar's comment goes on its header line. Used by `plumb render --show-origins`.
#[must_use]
pub fn to_yaml_with_comments(v: &Value, comment: &dyn Fn(&str) -> Option<String>) -> String {
    let mut pointer = String::new();
    let node = build_commented(v, &mut pointer, comment);
    let mut e = Emitter::new();
    e.emit_node(&node, Ctx::ROOT);
    e.indent = -1;
    e.write_indent();
    e.out
}

fn build_commented(
    v: &Value,
    pointer: &mut String,
    comment: &dyn Fn(&str) -> Option<String>,
) -> Node {
    let at = |seg: &str, v: &Value, pointer: &mut String| {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&plumb_core::pointer::escape_token(seg));
        let n = build_commented(v, pointer, comment);
        pointer.truncate(len);
        n
    };
    match v {
        Value::Array(items) => Node::Seq(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| at(&i.to_string(), item, pointer))
                .collect(),
        ),
        Value::Object(map) => {
            // Same keys and order as `build_node`; values built with their pointers.
            let Node::Map(entries) = build_node(&Value::Object(
                map.keys().map(|k| (k.clone(), Value::Null)).collect(),
            )) else {
                unreachable!("an object builds a map")
            };
            let originals: std::collections::HashMap<String, &String> = map
                .keys()
                .map(|k| (reread_json_string(k).into_owned(), k))
                .collect();
            Node::Map(
                entries
                    .into_iter()
                    .map(|(k, _)| {
                        let Node::Scalar(ref text, _) = k else {
                            unreachable!("keys are scalars")
                        };
                        let orig = originals.get(text).copied().unwrap_or(text);
                        let val = at(orig, &map[orig.as_str()], pointer);
                        (k, val)
                    })
                    .collect(),
            )
        }
        scalar => match (build_node(scalar), comment(pointer)) {
            (Node::Scalar(text, style), Some(c)) => Node::Commented(text, style, c),
            (n, _) => n,
        },
    }
}

/// A YAML node ready for emission: scalars carry the style go-yaml's encoder
/// asks for (the emitter may still override it).
enum Node {
    Scalar(String, Style),
    /// A scalar followed by a `# comment`.
    Commented(String, Style, String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

fn build_node(v: &Value) -> Node {
    match v {
        Value::Null => Node::Scalar("null".to_owned(), Style::Plain),
        Value::Bool(b) => Node::Scalar(b.to_string(), Style::Plain),
        Value::Number(n) => Node::Scalar(format_number(n), Style::Plain),
        Value::String(s) => string_node(&reread_json_string(s)),
        Value::Array(items) => Node::Seq(items.iter().map(build_node).collect()),
        Value::Object(map) => {
            // encoding/json writes keys in byte order; go-yaml keeps the last
            // of two keys that its re-read makes equal.
            let mut entries: Vec<(&String, String, &Value)> = map
                .iter()
                .map(|(k, v)| (k, reread_json_string(k).into_owned(), v))
                .collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let mut kept: Vec<(String, &Value)> = Vec::with_capacity(entries.len());
            for (_, key, v) in entries {
                if let Some(slot) = kept.iter_mut().find(|(k, _)| *k == key) {
                    slot.1 = v;
                } else {
                    kept.push((key, v));
                }
            }
            let kept = merge_sort_by(kept, &|a: &(String, &Value), b: &(String, &Value)| {
                go_yaml_key_less(&a.0, &b.0)
            });
            Node::Map(
                kept.into_iter()
                    .map(|(k, v)| (string_node(&k), build_node(v)))
                    .collect(),
            )
        }
    }
}

/// A JSON string as go-yaml v2 reads it back from `encoding/json` output.
///
/// `json.Marshal` escapes every line break except U+0085 (NEL), which the
/// YAML scanner then treats as a line break inside the double-quoted scalar
/// and folds (`yaml_parser_scan_flow_scalar`): a run of spaces and NELs
/// becomes one space for a single NEL, or `n - 1` newlines for `n` NELs;
/// spaces around the breaks are dropped.
fn reread_json_string(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{85}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ' ' && c != '\u{85}' {
            out.push(c);
            continue;
        }
        let mut spaces = 0usize;
        let mut breaks = 0usize;
        let mut next = Some(c);
        while let Some(b) = next {
            if b == ' ' {
                if breaks == 0 {
                    spaces += 1;
                }
            } else {
                breaks += 1;
            }
            next = chars.next_if(|&n| n == ' ' || n == '\u{85}');
        }
        match breaks {
            0 => out.extend(std::iter::repeat_n(' ', spaces)),
            1 => out.push(' '),
            n => out.extend(std::iter::repeat_n('\n', n - 1)),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// go-yaml v2 `encode.go` `stringv`: literal block for strings containing a
/// newline, plain when the text would read back as a string, else double
/// quotes.
fn string_node(s: &str) -> Node {
    let style = if s.contains('\n') {
        Style::Literal
    } else if resolves_to_str(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    };
    Node::Scalar(s.to_owned(), style)
}

// --- numbers ---------------------------------------------------------------

fn format_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    // A u64 beyond i64 is a float64 in a Kubernetes unstructured object.
    n.as_f64().map_or_else(|| n.to_string(), format_float)
}

/// Shortest round-trip decimal digits of `|x|` and the decimal point position:
/// `|x| = 0.d1d2... * 10^dp`.
fn shortest_digits(x: f64) -> (String, i32) {
    let e = format!("{:e}", x.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

/// A float64 as it comes out of `json.Marshal` + go-yaml v2 decode + encode.
fn format_float(x: f64) -> String {
    if !x.is_finite() {
        // Not representable in JSON; go-yaml's spelling.
        return if x.is_nan() {
            ".nan".to_owned()
        } else if x > 0.0 {
            ".inf".to_owned()
        } else {
            "-.inf".to_owned()
        };
    }
    let (digits, dp) = shortest_digits(x);
    let nd = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    // encoding/json uses %f below 1e21, and then go-yaml reads an integral
    // literal back as an int (or uint) when it fits.
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.abs() < 1e21 && nd <= dp {
        let mut lit = String::new();
        if x < 0.0 {
            lit.push('-');
        }
        lit.push_str(&digits);
        for _ in nd..dp {
            lit.push('0');
        }
        if let Ok(i) = lit.parse::<i64>() {
            return i.to_string();
        }
        if let Ok(u) = lit.parse::<u64>() {
            return u.to_string();
        }
    }
    format_g(x < 0.0, &digits, dp)
}

/// Go's `strconv.FormatFloat(x, 'g', -1, 64)` from shortest digits.
fn format_g(neg: bool, digits: &str, dp: i32) -> String {
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let nd = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        let mut chars = digits.chars();
        if let Some(first) = chars.next() {
            s.push(first);
        }
        let rest: String = chars.collect();
        if !rest.is_empty() {
            s.push('.');
            s.push_str(&rest);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            s.push('0');
        }
        s.push_str(&a.to_string());
    } else if dp <= 0 {
        s.push_str("0.");
        for _ in dp..0 {
            s.push('0');
        }
        s.push_str(digits);
    } else if dp >= nd {
        s.push_str(digits);
        for _ in nd..dp {
            s.push('0');
        }
    } else {
        let (int, frac) = digits.split_at(usize::try_from(dp).unwrap_or(0));
        s.push_str(int);
        s.push('.');
        s.push_str(frac);
    }
    s
}

// --- resolve (go-yaml v2 resolve.go) ---------------------------------------

/// Whether a plain scalar `s` would be read back by go-yaml v2 as a string
/// (`resolve.go` `resolve("", s)` yielding `!!str`).
fn resolves_to_str(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&first) = b.first() else {
        return false; // "" is null
    };
    let hint = match first {
        b'+' | b'-' => b'S',
        b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        _ => return true,
    };
    if is_resolve_map_word(s) {
        return false;
    }
    match hint {
        b'.' => !go_parse_float_ok(s),
        b'D' | b'S' => {
            if is_go_yaml_timestamp(s) {
                return false;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            if go_parse_int_base0(&plain) || go_parse_uint_base0(&plain).is_some() {
                return false;
            }
            !(matches_yaml_style_float(&plain) && go_parse_float_ok(&plain))
        }
        _ => true,
    }
}

/// The fixed words of go-yaml v2's resolve table (bools, nulls, specials).
fn is_resolve_map_word(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "true"
            | "True"
            | "TRUE"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "false"
            | "False"
            | "FALSE"
            | "off"
            | "Off"
            | "OFF"
            | "~"
            | "null"
            | "Null"
            | "NULL"
            | ".nan"
            | ".NaN"
            | ".NAN"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
            | "<<"
    )
}

/// `strconv.ParseUint(s, 0, 64)` for a string without underscores.
fn go_parse_uint_base0(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (base, digits): (u64, &[u8]) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &b[2..]),
            Some(b'o') if b.len() >= 3 => (8, &b[2..]),
            Some(b'x') if b.len() >= 3 => (16, &b[2..]),
            _ => (8, &b[1..]),
        }
    } else {
        (10, b)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            b'a'..=b'z' => u64::from(c - b'a') + 10,
            b'A'..=b'Z' => u64::from(c - b'A') + 10,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(base)?.checked_add(d)?;
    }
    Some(n)
}

/// Whether `strconv.ParseInt(s, 0, 64)` succeeds (no underscores in `s`).
fn go_parse_int_base0(s: &str) -> bool {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    match go_parse_uint_base0(rest) {
        Some(u) if neg => u <= 1u64 << 63,
        Some(u) => i64::try_from(u).is_ok(),
        None => false,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` from resolve.go.
fn matches_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Whether Go's `strconv.ParseFloat(s, 64)` accepts a decimal `s` (digits,
/// one dot, underscores between digits, exponent) without overflowing.
fn go_parse_float_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let mut saw_dot = false;
    let mut saw_digits = false;
    let mut underscores = false;
    while i < b.len() {
        match b[i] {
            b'_' => underscores = true,
            b'.' if !saw_dot => saw_dot = true,
            b'0'..=b'9' => saw_digits = true,
            _ => break,
        }
        i += 1;
    }
    if !saw_digits {
        return false;
    }
    if i < b.len() && b[i].eq_ignore_ascii_case(&b'e') {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return false;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            underscores |= b[i] == b'_';
            i += 1;
        }
    }
    if i != b.len() || (underscores && !go_underscore_ok(s)) {
        return false;
    }
    let cleaned: String = s.chars().filter(|&c| c != '_').collect();
    cleaned.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Go's `underscoreOK` for a decimal literal: each `_` sits between digits.
fn go_underscore_ok(s: &str) -> bool {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    let mut saw = b'^';
    for &c in b {
        if c.is_ascii_digit() {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// `isBase60Float` in go-yaml v2 encode.go: such strings are quoted.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&c) = b.first() else {
        return false;
    };
    if !(c == b'+' || c == b'-' || c.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let mut i = usize::from(c == b'+' || c == b'-');
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        // [0-5]?[0-9]
        let d1 = b.get(i).copied();
        let d2 = b.get(i + 1).copied();
        match (d1, d2) {
            (Some(x @ b'0'..=b'5'), Some(b'0'..=b'9')) if x <= b'5' => i += 2,
            (Some(b'0'..=b'9'), _) => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml v2 `parseTimestamp`: the value starts with `YYYY-` and Go's
/// `time.Parse` accepts it with one of go-yaml's four layouts.
fn is_go_yaml_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let lead = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if lead != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    [
        TsLayout::UpperT,
        TsLayout::LowerT,
        TsLayout::Space,
        TsLayout::DateOnly,
    ]
    .into_iter()
    .any(|layout| parse_go_time(b, layout))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TsLayout {
    /// `2006-1-2T15:4:5.999999999Z07:00`
    UpperT,
    /// `2006-1-2t15:4:5.999999999Z07:00`
    LowerT,
    /// `2006-1-2 15:4:5.999999999`
    Space,
    /// `2006-1-2`
    DateOnly,
}

/// Go `time` `getnum`: one or two digits (exactly two when `fixed`).
fn go_getnum(b: &[u8], pos: &mut usize, fixed: bool) -> Option<u32> {
    let d0 = b.get(*pos).filter(|c| c.is_ascii_digit())?;
    match b.get(*pos + 1).filter(|c| c.is_ascii_digit()) {
        Some(d1) => {
            *pos += 2;
            Some(u32::from(d0 - b'0') * 10 + u32::from(d1 - b'0'))
        }
        None if fixed => None,
        None => {
            *pos += 1;
            Some(u32::from(d0 - b'0'))
        }
    }
}

fn parse_go_time(b: &[u8], layout: TsLayout) -> bool {
    let lit = |pos: &mut usize, c: u8| -> bool {
        if b.get(*pos) == Some(&c) {
            *pos += 1;
            true
        } else {
            false
        }
    };
    let year: u32 = b[..4]
        .iter()
        .fold(0, |acc, d| acc * 10 + u32::from(d - b'0'));
    let mut pos = 4;
    if !lit(&mut pos, b'-') {
        return false;
    }
    let Some(month) = go_getnum(b, &mut pos, false) else {
        return false;
    };
    if !(1..=12).contains(&month) || !lit(&mut pos, b'-') {
        return false;
    }
    let Some(day) = go_getnum(b, &mut pos, false) else {
        return false;
    };
    if layout != TsLayout::DateOnly {
        let sep_ok = match layout {
            TsLayout::UpperT => lit(&mut pos, b'T'),
            TsLayout::LowerT => lit(&mut pos, b't'),
            _ => {
                // A layout space matches any run of spaces.
                if b.get(pos).is_some_and(|&c| c != b' ') {
                    false
                } else {
                    while b.get(pos) == Some(&b' ') {
                        pos += 1;
                    }
                    true
                }
            }
        };
        if !sep_ok {
            return false;
        }
        let hour = go_getnum(b, &mut pos, false);
        if hour.is_none_or(|h| h >= 24) || !lit(&mut pos, b':') {
            return false;
        }
        let min = go_getnum(b, &mut pos, false);
        if min.is_none_or(|m| m >= 60) || !lit(&mut pos, b':') {
            return false;
        }
        let sec = go_getnum(b, &mut pos, false);
        if sec.is_none_or(|s| s >= 60) {
            return false;
        }
        // Optional fraction: ',' or '.' then digits.
        if matches!(b.get(pos), Some(b'.' | b',')) && b.get(pos + 1).is_some_and(u8::is_ascii_digit)
        {
            pos += 1;
            while b.get(pos).is_some_and(u8::is_ascii_digit) {
                pos += 1;
            }
        }
        if matches!(layout, TsLayout::UpperT | TsLayout::LowerT) {
            if b.get(pos) == Some(&b'Z') {
                pos += 1;
            } else {
                if b.len() < pos + 6 || b[pos + 3] != b':' {
                    return false;
                }
                let sign = b[pos];
                let mut hp = pos + 1;
                let mut mp = pos + 4;
                let hh = go_getnum(b, &mut hp, true);
                let mm = go_getnum(b, &mut mp, true);
                match (hh, mm) {
                    (Some(h), Some(m)) if h <= 24 && m <= 60 && (sign == b'+' || sign == b'-') => {
                        pos += 6
                    }
                    _ => return false,
                }
            }
        }
    }
    if pos != b.len() {
        return false;
    }
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (1..=days).contains(&day)
}

// --- key order (go-yaml v2 sorter.go) --------------------------------------

fn go_is_letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        c.is_alphabetic()
    }
}

fn go_is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        c.is_numeric()
    }
}

/// go-yaml v2 `keyList.Less` for two string keys: a "natural" order in which
/// letters sort after other characters and digit runs compare numerically.
fn go_yaml_key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let digit_val = |c: char| i64::from(u32::from(c)).wrapping_sub(i64::from(u32::from('0')));
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = go_is_letter(ar[i]);
        let bl = go_is_letter(br[i]);
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && go_is_digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && go_is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit_val(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && go_is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_val(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// A stable merge sort driven by a "less" predicate; unlike `slice::sort_by`
/// it tolerates a predicate that is not a perfect total order.
fn merge_sort_by<T>(v: Vec<T>, less: &impl Fn(&T, &T) -> bool) -> Vec<T> {
    if v.len() <= 1 {
        return v;
    }
    let mut left = v;
    let right = left.split_off(left.len() / 2);
    let mut l = merge_sort_by(left, less).into_iter().peekable();
    let mut r = merge_sort_by(right, less).into_iter().peekable();
    let mut out = Vec::with_capacity(l.len() + r.len());
    while let (Some(a), Some(b)) = (l.peek(), r.peek()) {
        let next = if less(b, a) { r.next() } else { l.next() };
        out.extend(next);
    }
    out.extend(l);
    out.extend(r);
    out
}

// --- emitter (go-yaml v2 emitterc.go) --------------------------------------

/// Longest simple (implicit) key, in bytes (`yaml_emitter_check_simple_key`).
const MAX_SIMPLE_KEY_LEN: usize = 128;
/// `best_width`: go-yaml v2 folds long scalars past this column.
const BEST_WIDTH: usize = 80;
/// `best_indent`.
const BEST_INDENT: isize = 2;

/// The emitter's per-node context flags. (libyaml's root context only
/// matters for `...` document-end markers, which go-yaml never prints.)
#[derive(Clone, Copy)]
struct Ctx {
    mapping: bool,
    simple_key: bool,
}

impl Ctx {
    const ROOT: Self = Self {
        mapping: false,
        simple_key: false,
    };
    const SEQ_ITEM: Self = Self::ROOT;
    const MAP_VALUE: Self = Self {
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Self = Self {
        mapping: true,
        simple_key: true,
    };
}

/// What `yaml_emitter_analyze_scalar` learns about a scalar.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blankz(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\0') || is_break(c)
}

/// libyaml's "printable": #xA, #x20-#x7E, #xA0-#xD7FF, #xE000-#xFFFD but not
/// the BOM. Everything outside the BMP counts as non-printable.
fn is_printable(c: char) -> bool {
    let u = u32::from(c);
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

fn analyze_scalar(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let mut line_breaks = false;
    let mut special = false;
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let chars: Vec<char> = value.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let first = i == 0;
        let last = i + 1 == chars.len();
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        if first {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    block_indicators = true;
                }
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= first;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= first;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// A port of the parts of libyaml's emitter state that go-yaml v2 exercises
/// for block collections of scalars (flow style only for `[]` and `{}`).
struct Emitter {
    /// A comment to write after the scalar being emitted (block scalars: on the header).
    comment: Option<String>,
    out: String,
    column: usize,
    indent: isize,
    indents: Vec<isize>,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn new() -> Self {
        Self {
            comment: None,
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn emit_node(&mut self, node: &Node, ctx: Ctx) {
        match node {
            Node::Scalar(value, style) => self.emit_scalar(value, *style, ctx),
            Node::Commented(value, style, comment) => {
                self.comment = Some(comment.clone());
                self.emit_scalar(value, *style, ctx);
                if let Some(c) = self.comment.take() {
                    self.write_comment(&c);
                }
            }
            Node::Seq(items) if items.is_empty() => self.emit_empty_flow("[", "]"),
            Node::Map(entries) if entries.is_empty() => self.emit_empty_flow("{", "}"),
            Node::Seq(items) => {
                let indentless = ctx.mapping && !self.indention;
                self.increase_indent(false, indentless);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.emit_node(item, Ctx::SEQ_ITEM);
                }
                self.pop_indent();
            }
            Node::Map(entries) => {
                self.increase_indent(false, false);
                for (key, value) in entries {
                    self.write_indent();
                    if is_simple_key(key) {
                        self.emit_node(key, Ctx::SIMPLE_KEY);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.emit_node(key, Ctx::MAP_VALUE);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                    }
                    self.emit_node(value, Ctx::MAP_VALUE);
                }
                self.pop_indent();
            }
        }
    }

    fn write_comment(&mut self, comment: &str) {
        self.put(' ');
        self.put('#');
        self.put(' ');
        for c in comment.chars().filter(|c| !is_break(*c)) {
            self.put(c);
        }
        self.whitespace = false;
    }

    fn emit_empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn emit_scalar(&mut self, value: &str, requested: Style, ctx: Ctx) {
        let a = analyze_scalar(value);
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key))
        {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        // libyaml tests for a BOM at the start of the value, not at each
        // character: a leading BOM escapes every character.
        let bom = value.starts_with('\u{FEFF}');
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let code = u32::from(c);
                let short = match code {
                    0x00 => Some('0'),
                    0x07 => Some('a'),
                    0x08 => Some('b'),
                    0x09 => Some('t'),
                    0x0A => Some('n'),
                    0x0B => Some('v'),
                    0x0C => Some('f'),
                    0x0D => Some('r'),
                    0x1B => Some('e'),
                    0x22 => Some('"'),
                    0x5C => Some('\\'),
                    0x85 => Some('N'),
                    0xA0 => Some('_'),
                    0x2028 => Some('L'),
                    0x2029 => Some('P'),
                    _ => None,
                };
                if let Some(s) = short {
                    self.put(s);
                } else {
                    let (letter, width) = if code <= 0xFF {
                        ('x', 2)
                    } else if code <= 0xFFFF {
                        ('u', 4)
                    } else {
                        ('U', 8)
                    };
                    self.put(letter);
                    for k in (0..width).rev() {
                        let digit = (code >> (k * 4)) & 0xF;
                        self.put(
                            char::from_digit(digit, 16).map_or('0', |d| d.to_ascii_uppercase()),
                        );
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // Block scalar hints: explicit indentation when the text starts with
        // a space or a break; chomping from the trailing breaks.
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let n = chars.len();
        let chomp = match chars.last() {
            None => Some("-"),
            Some(&c) if !is_break(c) => Some("-"),
            Some(_) if n == 1 => Some("+"),
            Some(_) if is_break(chars[n - 2]) => Some("+"),
            Some(_) => None,
        };
        if let Some(ch) = chomp {
            self.write_indicator(ch, false, false, false);
        }
        if let Some(c) = self.comment.take() {
            self.write_comment(&c);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// `yaml_emitter_check_simple_key` for a mapping key.
fn is_simple_key(node: &Node) -> bool {
    match node {
        Node::Scalar(value, _) => {
            !analyze_scalar(value).multiline && value.len() <= MAX_SIMPLE_KEY_LEN
        }
        Node::Commented(..) => false,
        Node::Seq(items) => items.is_empty(),
        Node::Map(entries) => entries.is_empty(),
    }
}

// ---------------------------------------------------------------------------
// GNU diff
// ---------------------------------------------------------------------------

/// GNU diffutils' default output for `diff OLD NEW`: change commands
/// (`3c3`, `5a6,7`, `8,9d7`), `< `/`> ` lines, `---` between the two sides of
/// a change, and `\ No newline at end of file` after a last line that lacks
/// one. Empty when the texts are equal.
#[must_use]
pub fn normal_diff(old: &str, new: &str) -> String {
    let a = TextFile::new(old);
    let b = TextFile::new(new);
    let changes = gnu_changes(&a, &b, 0);
    let mut out = String::new();
    for ch in &changes {
        let letter = match (ch.deleted > 0, ch.inserted > 0) {
            (true, true) => 'c',
            (true, false) => 'd',
            _ => 'a',
        };
        push_normal_range(&mut out, ch.line0, ch.deleted);
        out.push(letter);
        push_normal_range(&mut out, ch.line1, ch.inserted);
        out.push('\n');
        for i in ch.line0..ch.line0 + ch.deleted {
            out.push_str("< ");
            a.push_line(&mut out, i);
        }
        if ch.deleted > 0 && ch.inserted > 0 {
            out.push_str("---\n");
        }
        for i in ch.line1..ch.line1 + ch.inserted {
            out.push_str("> ");
            b.push_line(&mut out, i);
        }
    }
    out
}

/// GNU `diff -u --label OLD_LABEL --label NEW_LABEL`: `---`/`+++` headers
/// without timestamps, hunks with three lines of context. Empty when the
/// texts are equal.
#[must_use]
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    const CONTEXT: usize = 3;
    let a = TextFile::new(old);
    let b = TextFile::new(new);
    let changes = gnu_changes(&a, &b, CONTEXT);
    if changes.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    let mut start = 0;
    while start < changes.len() {
        // A hunk runs on while fewer than 2*CONTEXT+1 unchanged lines
        // separate one change from the next.
        let mut end = start;
        while end + 1 < changes.len()
            && changes[end + 1].line0 - (changes[end].line0 + changes[end].deleted) <= 2 * CONTEXT
        {
            end += 1;
        }
        let hunk = &changes[start..=end];
        let (first, last) = (&hunk[0], &hunk[hunk.len() - 1]);
        // Half-open line ranges shown for each file.
        let lo0 = first.line0.saturating_sub(CONTEXT);
        let lo1 = first.line1.saturating_sub(CONTEXT);
        let hi0 = (last.line0 + last.deleted + CONTEXT).min(a.lines.len());
        let hi1 = (last.line1 + last.inserted + CONTEXT).min(b.lines.len());
        out.push_str("@@ -");
        push_unified_range(&mut out, lo0, hi0);
        out.push_str(" +");
        push_unified_range(&mut out, lo1, hi1);
        out.push_str(" @@\n");
        let (mut i, mut j) = (lo0, lo1);
        let mut next = hunk.iter().peekable();
        while i < hi0 || j < hi1 {
            match next.peek() {
                Some(ch) if i >= ch.line0 => {
                    for k in ch.line0..ch.line0 + ch.deleted {
                        out.push('-');
                        a.push_line(&mut out, k);
                    }
                    for k in ch.line1..ch.line1 + ch.inserted {
                        out.push('+');
                        b.push_line(&mut out, k);
                    }
                    i = ch.line0 + ch.deleted;
                    j = ch.line1 + ch.inserted;
                    next.next();
                }
                _ => {
                    out.push(' ');
                    a.push_line(&mut out, i);
                    i += 1;
                    j += 1;
                }
            }
        }
        start = end + 1;
    }
    out
}

/// `print_number_range` for normal output: `a,b`, or one number; an empty
/// range prints the number of the line before it.
fn push_normal_range(out: &mut String, start: usize, len: usize) {
    if len > 1 {
        out.push_str(&format!("{},{}", start + 1, start + len));
    } else if len == 1 {
        out.push_str(&(start + 1).to_string());
    } else {
        out.push_str(&start.to_string());
    }
}

/// `print_unidiff_number_range` for the half-open range `[lo, hi)`.
fn push_unified_range(out: &mut String, lo: usize, hi: usize) {
    match hi - lo {
        0 => out.push_str(&format!("{lo},0")),
        1 => out.push_str(&hi.to_string()),
        n => out.push_str(&format!("{},{n}", lo + 1)),
    }
}

/// One input file as GNU diff buffers it: the bytes with a newline appended
/// when the last line lacks one.
struct TextFile<'a> {
    /// Buffer: the text, plus `\n` when `missing_newline`.
    buf: Vec<u8>,
    /// The original text.
    text: &'a str,
    missing_newline: bool,
    /// Byte range of each line in `buf`, newline included.
    lines: Vec<(usize, usize)>,
}

impl<'a> TextFile<'a> {
    fn new(text: &'a str) -> Self {
        let mut buf = text.as_bytes().to_vec();
        let missing_newline = !buf.is_empty() && !text.ends_with('\n');
        if missing_newline {
            buf.push(b'\n');
        }
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, &c) in buf.iter().enumerate() {
            if c == b'\n' {
                lines.push((start, i + 1));
                start = i + 1;
            }
        }
        Self {
            buf,
            text,
            missing_newline,
            lines,
        }
    }

    /// Appends line `i` with its newline, or GNU's marker when it has none.
    fn push_line(&self, out: &mut String, i: usize) {
        let (s, e) = self.lines[i];
        let content_end = (e - 1).min(self.text.len());
        out.push_str(self.text.get(s..content_end).unwrap_or(""));
        out.push('\n');
        if self.missing_newline && i + 1 == self.lines.len() {
            out.push_str("\\ No newline at end of file\n");
        }
    }

    /// Index of the line that starts at byte `pos` (a line boundary).
    fn line_at(&self, pos: usize) -> usize {
        self.lines.partition_point(|&(s, _)| s < pos)
    }
}

/// One change: `deleted` lines of the old file from `line0` are replaced by
/// `inserted` lines of the new file from `line1` (0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    line0: usize,
    line1: usize,
    deleted: usize,
    inserted: usize,
}

/// The edit script GNU diff computes, in order. `horizon` is the number of
/// identical lines kept around the differing middle (GNU uses the context
/// size: 0 for normal output, 3 for `-u`), which bounds boundary shifting.
fn gnu_changes(a: &TextFile, b: &TextFile, horizon: usize) -> Vec<Change> {
    let (prefix_end, suffix0, suffix1) = identical_ends(a, b, horizon);
    let first_line = a.line_at(prefix_end);
    let mid0 = first_line..a.line_at(suffix0);
    let mid1 = b.line_at(prefix_end)..b.line_at(suffix1);

    let mut classes: HashMap<(&[u8], bool), usize> = HashMap::new();
    let eq0 = line_classes(a, mid0.clone(), &mut classes);
    let eq1 = line_classes(b, mid1.clone(), &mut classes);
    let nclasses = classes.len();

    let mut changed = [vec![false; eq0.len() + 2], vec![false; eq1.len() + 2]];
    let undiscarded = discard_confusing_lines(&eq0, &eq1, nclasses, &mut changed);
    compare_seq(&undiscarded, &mut changed);
    shift_boundaries(&eq0, &eq1, &mut changed);

    // Build the script from the change flags (index k is at k + 1).
    let (n0, n1) = (eq0.len(), eq1.len());
    let mut script = Vec::new();
    let (mut i0, mut i1) = (0, 0);
    let flag = |f: usize, k: usize| changed[f].get(k + 1).copied().unwrap_or(false);
    while i0 < n0 || i1 < n1 {
        if flag(0, i0) || flag(1, i1) {
            let (s0, s1) = (i0, i1);
            while flag(0, i0) {
                i0 += 1;
            }
            while flag(1, i1) {
                i1 += 1;
            }
            script.push(Change {
                line0: mid0.start + s0,
                line1: mid1.start + s1,
                deleted: i0 - s0,
                inserted: i1 - s1,
            });
        }
        i0 += 1;
        i1 += 1;
    }
    script
}

/// Equivalence class of each line in `range`. The incomplete last line of a
/// file only matches the other file's incomplete last line.
fn line_classes<'t>(
    f: &'t TextFile<'_>,
    range: std::ops::Range<usize>,
    classes: &mut HashMap<(&'t [u8], bool), usize>,
) -> Vec<usize> {
    range
        .map(|i| {
            let (s, e) = f.lines[i];
            let incomplete = f.missing_newline && e == f.buf.len();
            let next = classes.len();
            *classes.entry((&f.buf[s..e], incomplete)).or_insert(next)
        })
        .collect()
}

/// GNU `find_identical_ends`: the common byte prefix (backed up to a line
/// start, then `horizon` more lines) and the common suffix (moved forward to
/// a line start, then `horizon` more lines). Returns the prefix end (same in
/// both buffers) and where the suffix starts in each buffer.
fn identical_ends(a: &TextFile, b: &TextFile, horizon: usize) -> (usize, usize, usize) {
    let (b0, b1) = (&a.buf, &b.buf);
    let (n0, n1) = (b0.len(), b1.len());
    let mut p = b0.iter().zip(b1.iter()).take_while(|(x, y)| x == y).count();
    // Do not count an appended newline as part of the prefix.
    if p > 0
        && (n0 - usize::from(a.missing_newline) < p) != (n1 - usize::from(b.missing_newline) < p)
    {
        p -= 1;
    }
    let mut hor = horizon;
    while p != 0 {
        if b0[p - 1] == b'\n' {
            if hor == 0 {
                break;
            }
            hor -= 1;
        }
        p -= 1;
    }
    let prefix_end = p;

    if a.missing_newline != b.missing_newline {
        return (prefix_end, n0, n1);
    }
    let (mut p0, mut p1) = (n0, n1);
    let beg0 = prefix_end + n0.saturating_sub(n1);
    while p0 != beg0 {
        if b0[p0 - 1] != b1[p1 - 1] {
            break;
        }
        p0 -= 1;
        p1 -= 1;
    }
    let start0 = p0;
    let at_line_beginning = (p0 == 0 || b0[p0 - 1] == b'\n') && (p1 == 0 || b1[p1 - 1] == b'\n');
    let mut skip = horizon + usize::from(!at_line_beginning);
    while skip > 0 && p0 != n0 {
        skip -= 1;
        while p0 < n0 {
            p0 += 1;
            if b0[p0 - 1] == b'\n' {
                break;
            }
        }
    }
    (prefix_end, p0, p1 + (p0 - start0))
}

fn floor_log2(n: usize) -> u32 {
    usize::BITS - 1 - n.max(1).leading_zeros()
}

/// The lines left for the Myers search (class ids plus original indexes).
struct Undiscarded {
    x: Vec<usize>,
    y: Vec<usize>,
    xreal: Vec<usize>,
    yreal: Vec<usize>,
}

/// GNU `discard_confusing_lines`: lines with no match in the other file, and
/// runs of lines with very many matches, are marked changed up front and
/// left out of the search.
fn discard_confusing_lines(
    eq0: &[usize],
    eq1: &[usize],
    nclasses: usize,
    changed: &mut [Vec<bool>; 2],
) -> Undiscarded {
    let files = [eq0, eq1];
    let mut counts = [vec![0usize; nclasses], vec![0usize; nclasses]];
    for f in 0..2 {
        for &e in files[f] {
            counts[f][e] += 1;
        }
    }
    // 0: keep, 1: discard, 2: provisionally discard.
    let mut discards: [Vec<u8>; 2] = [vec![0; eq0.len()], vec![0; eq1.len()]];
    for f in 0..2 {
        let end = files[f].len();
        let many: usize = if end < 64 {
            5
        } else {
            5 << ((floor_log2(end) >> 1) - 3)
        };
        for (i, &e) in files[f].iter().enumerate() {
            let nmatch = counts[1 - f][e];
            if nmatch == 0 {
                discards[f][i] = 1;
            } else if nmatch > many {
                discards[f][i] = 2;
            }
        }
    }
    for d in &mut discards {
        refine_discards(d);
    }
    let mut out = Undiscarded {
        x: Vec::new(),
        y: Vec::new(),
        xreal: Vec::new(),
        yreal: Vec::new(),
    };
    for f in 0..2 {
        for (i, &e) in files[f].iter().enumerate() {
            if discards[f][i] == 0 {
                if f == 0 {
                    out.x.push(e);
                    out.xreal.push(i);
                } else {
                    out.y.push(e);
                    out.yreal.push(i);
                }
            } else {
                changed[f][i + 1] = true;
            }
        }
    }
    out
}

/// Keeps provisional discards only inside runs of real discards, following
/// GNU's run-length rules.
fn refine_discards(d: &mut [u8]) {
    let end = d.len();
    let mut i = 0;
    while i < end {
        if d[i] == 2 {
            d[i] = 0;
        } else if d[i] != 0 {
            let mut provisional = 0usize;
            let mut j = i;
            while j < end && d[j] != 0 {
                if d[j] == 2 {
                    provisional += 1;
                }
                j += 1;
            }
            while j > i && d[j - 1] == 2 {
                j -= 1;
                d[j] = 0;
                provisional -= 1;
            }
            let length = j - i;
            if (length >> 2) < provisional {
                for x in &mut d[i..j] {
                    if *x == 2 {
                        *x = 0;
                    }
                }
            } else {
                let minimum: usize = if length < 4 {
                    2
                } else {
                    (1 << ((floor_log2(length) >> 1) - 1)) + 1
                };
                // Cancel subruns of `minimum` or more provisionals.
                let mut consec = 0usize;
                let mut k = 0usize;
                while k < length {
                    if d[i + k] != 2 {
                        consec = 0;
                    } else {
                        consec += 1;
                        if consec == minimum {
                            // Back up to the start of the subrun; the loop's
                            // step lands on it again.
                            k = k + 1 - consec;
                            continue;
                        } else if consec > minimum {
                            d[i + k] = 0;
                        }
                    }
                    k += 1;
                }
                // From each end, cancel provisionals until three real
                // discards in a row, or a real one at least 8 lines in.
                let mut consec = 0;
                for k in 0..length {
                    let x = &mut d[i + k];
                    if k >= 8 && *x == 1 {
                        break;
                    }
                    match *x {
                        2 => {
                            consec = 0;
                            *x = 0;
                        }
                        0 => consec = 0,
                        _ => consec += 1,
                    }
                    if consec == 3 {
                        break;
                    }
                }
                i += length - 1;
                let mut consec = 0;
                for k in 0..length {
                    let x = &mut d[i - k];
                    if k >= 8 && *x == 1 {
                        break;
                    }
                    match *x {
                        2 => {
                            consec = 0;
                            *x = 0;
                        }
                        0 => consec = 0,
                        _ => consec += 1,
                    }
                    if consec == 3 {
                        break;
                    }
                }
            }
        }
        i += 1;
    }
}

/// Myers' linear-space search as GNU diff runs it (`compareseq`/`diag`
/// without `--minimal` or `-H`), marking unmatched lines as changed.
fn compare_seq(u: &Undiscarded, changed: &mut [Vec<bool>; 2]) {
    let (nx, ny) = (u.x.len(), u.y.len());
    let diags = nx + ny + 3;
    let too_expensive = (1usize << ((floor_log2(diags) >> 1) + 1)).max(4096);
    let mut search = Search {
        xv: &u.x,
        yv: &u.y,
        fd: vec![0; diags],
        bd: vec![0; diags],
        off: to_isize(ny) + 1,
        too_expensive,
    };
    let mut stack = vec![(0usize, nx, 0usize, ny, false)];
    while let Some((mut xoff, mut xlim, mut yoff, mut ylim, minimal)) = stack.pop() {
        while xoff < xlim && yoff < ylim && u.x[xoff] == u.y[yoff] {
            xoff += 1;
            yoff += 1;
        }
        while xoff < xlim && yoff < ylim && u.x[xlim - 1] == u.y[ylim - 1] {
            xlim -= 1;
            ylim -= 1;
        }
        if xoff == xlim {
            for y in yoff..ylim {
                changed[1][u.yreal[y] + 1] = true;
            }
        } else if yoff == ylim {
            for x in xoff..xlim {
                changed[0][u.xreal[x] + 1] = true;
            }
        } else {
            let part = search.diag(xoff, xlim, yoff, ylim, minimal);
            stack.push((part.xmid, xlim, part.ymid, ylim, part.hi_minimal));
            stack.push((xoff, part.xmid, yoff, part.ymid, part.lo_minimal));
        }
    }
}

fn to_isize(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

fn to_usize(n: isize) -> usize {
    usize::try_from(n).unwrap_or(0)
}

struct Partition {
    xmid: usize,
    ymid: usize,
    lo_minimal: bool,
    hi_minimal: bool,
}

struct Search<'a> {
    xv: &'a [usize],
    yv: &'a [usize],
    /// Forward and backward furthest-x per diagonal, indexed `d + off`.
    fd: Vec<isize>,
    bd: Vec<isize>,
    off: isize,
    too_expensive: usize,
}

impl Search<'_> {
    // Indexes stay in range by construction (diagonals span
    // `-ny-1..=nx+1`); the accessors still avoid panicking.
    fn fd(&self, d: isize) -> isize {
        self.fd.get(to_usize(d + self.off)).copied().unwrap_or(-1)
    }
    fn bd(&self, d: isize) -> isize {
        self.bd
            .get(to_usize(d + self.off))
            .copied()
            .unwrap_or(isize::MAX)
    }
    fn set_fd(&mut self, d: isize, v: isize) {
        if let Some(slot) = self.fd.get_mut(to_usize(d + self.off)) {
            *slot = v;
        }
    }
    fn set_bd(&mut self, d: isize, v: isize) {
        if let Some(slot) = self.bd.get_mut(to_usize(d + self.off)) {
            *slot = v;
        }
    }
    fn eq(&self, x: isize, y: isize) -> bool {
        match (self.xv.get(to_usize(x)), self.yv.get(to_usize(y))) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// GNU `diag`: the midpoint of a shortest edit script, found by
    /// simultaneous forward and backward searches.
    fn diag(
        &mut self,
        xoff: usize,
        xlim: usize,
        yoff: usize,
        ylim: usize,
        find_minimal: bool,
    ) -> Partition {
        let (xoff, xlim, yoff, ylim) = (
            to_isize(xoff),
            to_isize(xlim),
            to_isize(yoff),
            to_isize(ylim),
        );
        let dmin = xoff - ylim;
        let dmax = xlim - yoff;
        let fmid = xoff - yoff;
        let bmid = xlim - ylim;
        let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
        let odd = (fmid - bmid) & 1 != 0;
        self.set_fd(fmid, xoff);
        self.set_bd(bmid, xlim);
        let mut c: usize = 1;
        loop {
            if fmin > dmin {
                fmin -= 1;
                self.set_fd(fmin - 1, -1);
            } else {
                fmin += 1;
            }
            if fmax < dmax {
                fmax += 1;
                self.set_fd(fmax + 1, -1);
            } else {
                fmax -= 1;
            }
            let mut d = fmax;
            while d >= fmin {
                let (tlo, thi) = (self.fd(d - 1), self.fd(d + 1));
                let x0 = if tlo < thi { thi } else { tlo + 1 };
                let (mut x, mut y) = (x0, x0 - d);
                while x < xlim && y < ylim && self.eq(x, y) {
                    x += 1;
                    y += 1;
                }
                self.set_fd(d, x);
                if odd && bmin <= d && d <= bmax && self.bd(d) <= x {
                    return Partition {
                        xmid: to_usize(x),
                        ymid: to_usize(y),
                        lo_minimal: true,
                        hi_minimal: true,
                    };
                }
                d -= 2;
            }
            if bmin > dmin {
                bmin -= 1;
                self.set_bd(bmin - 1, isize::MAX);
            } else {
                bmin += 1;
            }
            if bmax < dmax {
                bmax += 1;
                self.set_bd(bmax + 1, isize::MAX);
            } else {
                bmax -= 1;
            }
            let mut d = bmax;
            while d >= bmin {
                let (tlo, thi) = (self.bd(d - 1), self.bd(d + 1));
                let x0 = if tlo < thi { tlo } else { thi - 1 };
                let (mut x, mut y) = (x0, x0 - d);
                while xoff < x && yoff < y && self.eq(x - 1, y - 1) {
                    x -= 1;
                    y -= 1;
                }
                self.set_bd(d, x);
                if !odd && fmin <= d && d <= fmax && x <= self.fd(d) {
                    return Partition {
                        xmid: to_usize(x),
                        ymid: to_usize(y),
                        lo_minimal: true,
                        hi_minimal: true,
                    };
                }
                d -= 2;
            }
            if !find_minimal && c >= self.too_expensive {
                return self.give_up(xoff, xlim, yoff, ylim, (fmin, fmax, bmin, bmax));
            }
            c += 1;
        }
    }

    /// GNU's TOO_EXPENSIVE cut-off: take the furthest-reaching diagonal.
    fn give_up(
        &self,
        xoff: isize,
        xlim: isize,
        yoff: isize,
        ylim: isize,
        bounds: (isize, isize, isize, isize),
    ) -> Partition {
        let (fmin, fmax, bmin, bmax) = bounds;
        let (mut fxybest, mut fxbest) = (-1, 0);
        let mut d = fmax;
        while d >= fmin {
            let mut x = self.fd(d).min(xlim);
            let mut y = x - d;
            if ylim < y {
                x = ylim + d;
                y = ylim;
            }
            if fxybest < x + y {
                fxybest = x + y;
                fxbest = x;
            }
            d -= 2;
        }
        let (mut bxybest, mut bxbest) = (isize::MAX, 0);
        let mut d = bmax;
        while d >= bmin {
            let mut x = self.bd(d).max(xoff);
            let mut y = x - d;
            if y < yoff {
                x = yoff + d;
                y = yoff;
            }
            if x + y < bxybest {
                bxybest = x + y;
                bxbest = x;
            }
            d -= 2;
        }
        if (xlim + ylim) - bxybest < fxybest - (xoff + yoff) {
            Partition {
                xmid: to_usize(fxbest),
                ymid: to_usize(fxybest - fxbest),
                lo_minimal: true,
                hi_minimal: false,
            }
        } else {
            Partition {
                xmid: to_usize(bxbest),
                ymid: to_usize(bxybest - bxbest),
                lo_minimal: false,
                hi_minimal: true,
            }
        }
    }
}

/// GNU `shift_boundaries`: slide each run of changed lines over identical
/// neighbours so that it merges with other runs, ends as late as possible,
/// or lines up with a change in the other file.
fn shift_boundaries(eq0: &[usize], eq1: &[usize], changed: &mut [Vec<bool>; 2]) {
    for (f, eq) in [eq0, eq1].into_iter().enumerate() {
        let (first, second) = changed.split_at_mut(1);
        let (ch, other) = if f == 0 {
            (&mut first[0], &second[0])
        } else {
            (&mut second[0], &first[0])
        };
        let i_end = to_isize(eq.len());
        // Flags are stored at index + 1, with a false sentinel at each end.
        let c = |v: &[bool], k: isize| v.get(to_usize(k + 1)).copied().unwrap_or(false);
        let set = |v: &mut [bool], k: isize, value: bool| {
            if let Some(slot) = v.get_mut(to_usize(k + 1)) {
                *slot = value;
            }
        };
        let e = |k: isize| eq[to_usize(k)];
        let (mut i, mut j): (isize, isize) = (0, 0);
        loop {
            while i < i_end && !c(ch, i) {
                while c(other, j) {
                    j += 1;
                }
                j += 1;
                i += 1;
            }
            if i == i_end {
                break;
            }
            let mut start = i;
            i += 1;
            while c(ch, i) {
                i += 1;
            }
            while c(other, j) {
                j += 1;
            }
            let mut corresponding;
            loop {
                let runlength = i - start;
                while start != 0 && e(start - 1) == e(i - 1) {
                    start -= 1;
                    set(ch, start, true);
                    i -= 1;
                    set(ch, i, false);
                    while c(ch, start - 1) {
                        start -= 1;
                    }
                    j -= 1;
                    while c(other, j) {
                        j -= 1;
                    }
                }
                corresponding = if c(other, j - 1) { i } else { i_end };
                while i != i_end && e(start) == e(i) {
                    set(ch, start, false);
                    start += 1;
                    set(ch, i, true);
                    i += 1;
                    while c(ch, i) {
                        i += 1;
                    }
                    j += 1;
                    while c(other, j) {
                        j += 1;
                        corresponding = i;
                    }
                }
                if runlength == i - start {
                    break;
                }
            }
            while corresponding < i {
                start -= 1;
                set(ch, start, true);
                i -= 1;
                set(ch, i, false);
                j -= 1;
                while c(other, j) {
                    j -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn comments_follow_scalars_and_keep_the_yaml() {
        let v = serde_json::json!({"metadata": {"name": "web", "labels": {"a/b": "x"}},
            "spec": {"containers": [{"name": "app", "args": ["--x"]}], "script": "line1\nline2\n"}});
        let out = super::to_yaml_with_comments(&v, &|p: &str| Some(format!("at {p}")));
        assert_eq!(
            out,
            "metadata:\n  labels:\n    a/b: x # at /metadata/labels/a~1b\n  name: web # at /metadata/name\nspec:\n  containers:\n  - args:\n    - --x # at /spec/containers/0/args/0\n    name: app # at /spec/containers/0/name\n  script: | # at /spec/script\n    line1\n    line2\n"
        );
        let plain = super::to_yaml_with_comments(&v, &|_: &str| None);
        assert_eq!(plain, super::to_yaml(&v));
    }

    use super::*;
    use serde_json::json;

    /// Strips the newline that follows the opening quote of an expectation.
    fn doc(s: &str) -> &str {
        s.strip_prefix('\n').unwrap_or(s)
    }

    fn yaml_of(json_text: &str) -> String {
        let v: Value = serde_json::from_str(json_text).expect("test input is JSON");
        to_yaml(&v)
    }

    // --- YAML: expectations produced by sigs.k8s.io/yaml v1.6.0 (go.yaml.in/yaml/v2 v2.4.2)

    #[test]
    fn yaml_deployment_nested_object() {
        let got = yaml_of(
            r##"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"deployment.kubernetes.io/revision":"3"},"labels":{"app":"guestbook","app.kubernetes.io/instance":"guestbook"},"name":"guestbook-ui","namespace":"default"},"spec":{"replicas":1,"revisionHistoryLimit":3,"selector":{"matchLabels":{"app":"guestbook-ui"}},"template":{"metadata":{"labels":{"app":"guestbook-ui"}},"spec":{"containers":[{"image":"gcr.io/heptio-images/ks-guestbook-demo:0.2","imagePullPolicy":"IfNotPresent","name":"guestbook-ui","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"}}}],"dnsPolicy":"ClusterFirst","securityContext":{}}}}}"##,
        );
        let want = r##"
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: "3"
  labels:
    app: guestbook
    app.kubernetes.io/instance: guestbook
  name: guestbook-ui
  namespace: default
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
      - image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        imagePullPolicy: IfNotPresent
        name: guestbook-ui
        ports:
        - containerPort: 80
          protocol: TCP
        resources:
          limits:
            cpu: 500m
            memory: 128Mi
      dnsPolicy: ClusterFirst
      securityContext: {}
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_lists_of_maps_lists_of_lists_and_empty_containers() {
        let got = yaml_of(
            r##"{"matrix":[[1,2],[],[["a"],{}]],"empty":{"list":[],"map":{}},"items":[{"name":"a","value":"1"},{"name":"b"},{}],"nulls":[null,{"k":null}]}"##,
        );
        let want = r##"
empty:
  list: []
  map: {}
items:
- name: a
  value: "1"
- name: b
- {}
matrix:
- - 1
  - 2
- []
- - - a
  - {}
nulls:
- null
- k: null
"##;
        assert_eq!(got, doc(want));
        assert_eq!(
            yaml_of(r##"[[["deep"]],[{"a":[1,[2]]}]]"##),
            "- - - deep\n- - a:\n    - 1\n    - - 2\n"
        );
    }

    #[test]
    fn yaml_top_level_values() {
        assert_eq!(to_yaml(&Value::Null), "null\n");
        assert_eq!(to_yaml(&json!("just a string")), "just a string\n");
        assert_eq!(to_yaml(&json!([])), "[]\n");
        assert_eq!(to_yaml(&json!({})), "{}\n");
        assert_eq!(to_yaml(&json!(true)), "true\n");
        assert_eq!(to_yaml(&json!("a\nb\n")), "|\n  a\n  b\n");
    }

    #[test]
    fn yaml_quotes_strings_that_would_not_read_back_as_strings() {
        let got = yaml_of(
            r##"{"s":["true","yes","on","no","off","y","n","~","null","NULL","","1","0.5","1e3","0x1F","012","08","0o17","1_000","+1","-1",".inf","-.inf",".nan",".5","2001-12-14","2001-02-30","2001-12-14T21:59:43Z","2001-12-14 21:59:43.10","1:20","a: b","a:b","#x","x #y","x#y"," lead","trail ","-","- x","-x","---","...","?","? x",":",":x","[x]","{x}","*a","&a","!t","|","\u003e","'q'","\"dq\"","%p","@at","`bt","a,b","\u003c\u003c","=","tab\there","back\\slash","plain text"]}"##,
        );
        let want = r##"
s:
- "true"
- "yes"
- "on"
- "no"
- "off"
- "y"
- "n"
- "~"
- "null"
- "NULL"
- ""
- "1"
- "0.5"
- "1e3"
- "0x1F"
- "012"
- "08"
- "0o17"
- "1_000"
- "+1"
- "-1"
- ".inf"
- "-.inf"
- ".nan"
- ".5"
- "2001-12-14"
- 2001-02-30
- "2001-12-14T21:59:43Z"
- "2001-12-14 21:59:43.10"
- "1:20"
- 'a: b'
- a:b
- '#x'
- 'x #y'
- x#y
- ' lead'
- 'trail '
- '-'
- '- x'
- -x
- '---'
- '...'
- '?'
- '? x'
- ':'
- :x
- '[x]'
- '{x}'
- '*a'
- '&a'
- '!t'
- '|'
- '>'
- '''q'''
- '"dq"'
- '%p'
- '@at'
- '`bt'
- a,b
- <<
- =
- "tab\there"
- back\slash
- plain text
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_multiline_configmap_data() {
        let got = yaml_of(
            r##"{"data":{"trailing.conf":"line one\nline two\n","no-trailing.conf":"line one\nline two","keep.conf":"a\n\n","lead.txt":" indented\nnext\n","spaces.txt":"trailing space \nnext\n","only-newline":"\n","crlf":"a\r\nb\n","tabbed":"key:\tvalue\n"}}"##,
        );
        let want = r##"
data:
  crlf: "a\r\nb\n"
  keep.conf: |+
    a

  lead.txt: |2
     indented
    next
  no-trailing.conf: |-
    line one
    line two
  only-newline: |2+

  spaces.txt: "trailing space \nnext\n"
  tabbed: "key:\tvalue\n"
  trailing.conf: |
    line one
    line two
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_unicode() {
        let got = yaml_of(
            r##"{"unicode":{"accent":"café","cjk":"日本語","emoji":"deploy 🚀","nbsp":"a\u00a0b","bom":"\ufeffx","ls":"a\u2028b","nel":"a\u0085b"},"日本":"key","é":1,"z":2,"E":3}"##,
        );
        let want = concat!(
            "E: 3\n",
            "unicode:\n",
            "  accent: café\n",
            "  bom: \"\\uFEFF\\x78\"\n",
            "  cjk: 日本語\n",
            "  emoji: \"deploy \\U0001F680\"\n",
            "  ls: 'a\u{2028}    b'\n",
            "  nbsp: a\u{a0}b\n",
            "  nel: a b\n",
            "z: 2\n",
            "é: 1\n",
            "日本: key\n",
        );
        assert_eq!(got, want);
    }

    #[test]
    fn yaml_long_strings_fold_at_80_columns() {
        let got = yaml_of(
            r##"{"short":"The quick brown fox jumps over the lazy dog and keeps running until the end of the line","annotation":"kubectl.kubernetes.io/last-applied-configuration-like value: {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}} trailing words here","quoted":"true but this is a very long string that starts with a word that is not special, no it does not, yes 1","dq":"tab\tseparated\tvalues that go on and on and on for quite a long while past the eighty column limit ok","nospace":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","nested":{"deeper":{"value":"word word word word word word word word word word word word word word word word word word"}}}"##,
        );
        let want = r##"
annotation: 'kubectl.kubernetes.io/last-applied-configuration-like value: {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}
  trailing words here'
dq: "tab\tseparated\tvalues that go on and on and on for quite a long while past the
  eighty column limit ok"
nested:
  deeper:
    value: word word word word word word word word word word word word word word word
      word word word
nospace: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
quoted: true but this is a very long string that starts with a word that is not special,
  no it does not, yes 1
short: The quick brown fox jumps over the lazy dog and keeps running until the end
  of the line
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_folds_only_past_column_80() {
        let x78 = "x".repeat(78);
        let x77 = "x".repeat(77);
        let input = json!({"k": format!("{x78} tail end"), "q": format!("#{x77} tail end"), "r": format!("{x77} tail end")});
        let want = format!("k: {x78}\n  tail end\nq: '#{x77}\n  tail end'\nr: {x77} tail\n  end\n");
        assert_eq!(to_yaml(&input), want);
    }

    #[test]
    fn yaml_numbers_follow_the_json_then_yaml_round_trip() {
        let got = yaml_of(
            r##"{"n":[0,-7,9223372036854775807,-9223372036854775808,18446744073709551615,0.5,2.0,-0.0,1e21,1e20,1e19,1e-7,0.000001,0.0001,1234567.5,100000.5,3.14159,1.5e300,1152921504606846976.0],"b":[true,false]}"##,
        );
        let want = r##"
b:
- true
- false
"n":
- 0
- -7
- 9223372036854775807
- -9223372036854775808
- 1.8446744073709552e+19
- 0.5
- 2
- 0
- 1e+21
- 1e+20
- 10000000000000000000
- 1e-07
- 1e-06
- 0.0001
- 1.2345675e+06
- 100000.5
- 3.14159
- 1.5e+300
- 1152921504606847000
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_keys_use_go_yaml_natural_order() {
        let got = yaml_of(
            r##"{"port10":1,"port9":2,"port1":3,"FOO_BAR":4,"FOOBAR":5,"a-b":6,"a_b":7,"aB":8,"a.b":9,"a:":10,"a1":11,"a01":12,"x":13}"##,
        );
        let want = r##"
FOO_BAR: 4
FOOBAR: 5
a-b: 6
a.b: 9
'a:': 10
a_b: 7
a1: 11
a01: 12
aB: 8
port1: 3
port9: 2
port10: 1
x: 13
"##;
        assert_eq!(got, doc(want));
    }

    #[test]
    fn yaml_long_and_multiline_keys_become_complex_keys() {
        let long = "a".repeat(130);
        let input = json!({ long.clone(): "long key", "multi\nline": "key with newline", "": "empty key", "true": "bool-like key" });
        let want = format!(
            "\"\": empty key\n? {long}\n: long key\n? |-\n  multi\n  line\n: key with newline\n\"true\": bool-like key\n"
        );
        assert_eq!(to_yaml(&input), want);
        // 128 bytes is still a simple key.
        let k128 = "k".repeat(128);
        assert_eq!(to_yaml(&json!({ k128.clone(): 1 })), format!("{k128}: 1\n"));
    }

    #[test]
    fn yaml_nel_is_folded_like_go_yaml_reads_json() {
        assert_eq!(reread_json_string("a\u{85}b"), "a b");
        assert_eq!(reread_json_string("a \u{85}  b"), "a b");
        assert_eq!(reread_json_string("a\u{85}\u{85}b"), "a\nb");
        assert_eq!(reread_json_string("a\u{85} \u{85}\u{85}b"), "a\n\nb");
        assert_eq!(reread_json_string("no  breaks "), "no  breaks ");
        assert_eq!(to_yaml(&json!("N\u{85}")), "'N '\n");
    }

    #[test]
    fn resolve_table_matches_go_yaml() {
        let non_strings = [
            "",
            "~",
            "null",
            "Yes",
            "OFF",
            "y",
            "N",
            ".NaN",
            "-.Inf",
            "0",
            "-0",
            "+12",
            "0x1f",
            "0X1F",
            "0o17",
            "017",
            "0b101",
            "-0b11",
            "1_000",
            "1_",
            "08",
            "1.5",
            "1.",
            "-.5",
            ".5",
            ".5_5",
            "1e5",
            "1E-5",
            "+1.5e+3",
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "2001-12-14",
            "2001-1-2",
            "2000-02-29",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14T21:59:43Z",
            "2001-12-14 21:59:43.10",
            "2001-12-14    1:2:3",
            "2001-12-14T21:59:43,5+24:00",
        ];
        for s in non_strings {
            assert!(!resolves_to_str(s), "{s:?} should not resolve to a string");
        }
        let strings = [
            "a",
            "yess",
            "Nope",
            "o",
            "<<",
            "._5",
            ".5_",
            ".",
            "..",
            "-",
            "+",
            "0x",
            "0b2",
            "1e400",
            "1e",
            "e5",
            "2001-02-30",
            "2001-02-29",
            "2001-12-14T21:59:43",
            "2001-12-14 21:59",
            "2001-13-01",
            "2001-12-14T25:00:00Z",
            "2001-12-14T21:59:43+25:00",
            "12001-12-14",
            "2001-12-14x",
            "1.2.3",
            "v1",
            "true1",
        ];
        for s in strings {
            assert!(resolves_to_str(s), "{s:?} should resolve to a string");
        }
        assert!(is_base60_float("1:20"));
        assert!(is_base60_float("-1_0:59:30.5"));
        assert!(!is_base60_float("1:60"));
        assert!(!is_base60_float("a:1"));
        assert!(!is_base60_float("12"));
    }

    #[test]
    fn floats_format_like_go() {
        let cases = [
            (0.5, "0.5"),
            (2.0, "2"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "1e+20"),
            (1e19, "10000000000000000000"),
            (-(2f64.powi(63)), "-9.223372036854776e+18"),
            (2f64.powi(63), "9223372036854776000"),
            (1e-7, "1e-07"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456.5, "123456.5"),
            (1234567.5, "1.2345675e+06"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "5e-324"),
        ];
        for (x, want) in cases {
            assert_eq!(format_float(x), want, "{x:e}");
        }
    }

    #[test]
    fn key_order_predicate() {
        assert!(go_yaml_key_less("a9", "a10"));
        assert!(!go_yaml_key_less("a10", "a9"));
        assert!(go_yaml_key_less("A_B", "AB"));
        assert!(go_yaml_key_less("a1", "a01"));
        assert!(go_yaml_key_less("Z", "a"));
        assert!(go_yaml_key_less("ab", "abc"));
        let sorted = merge_sort_by(vec!["b", "a10", "a9", "_", "a"], &|x: &&str, y: &&str| {
            go_yaml_key_less(x, y)
        });
        assert_eq!(sorted, ["_", "a", "a9", "a10", "b"]);
    }

    // --- diff: expectations produced by GNU diffutils 3.8

    #[test]
    fn equal_inputs_give_no_output() {
        for s in ["", "a\n", "a\nb", "x\n\n"] {
            assert_eq!(normal_diff(s, s), "");
            assert_eq!(unified_diff(s, s, "live", "target"), "");
        }
    }

    #[test]
    fn normal_diff_commands() {
        let cases = [
            (
                "a\nb\nc\nd\n",
                "a\nB\nc\nd\ne\n",
                "2c2\n< b\n---\n> B\n4a5\n> e\n",
            ),
            ("a\nb\nc\nd\n", "a\nd\n", "2,3d1\n< b\n< c\n"),
            ("", "a\nb\nc\n", "0a1,3\n> a\n> b\n> c\n"),
            ("a\nb\nc\n", "", "1,3d0\n< a\n< b\n< c\n"),
            ("a\n\nb\n", "a\nb\n", "2d1\n< \n"),
        ];
        for (old, new, want) in cases {
            assert_eq!(normal_diff(old, new), want, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn missing_newline_markers() {
        let cases = [
            (
                "a\nb",
                "a\nb\n",
                "2c2\n< b\n\\ No newline at end of file\n---\n> b\n",
            ),
            (
                "a\nb\n",
                "a\nc",
                "2c2\n< b\n---\n> c\n\\ No newline at end of file\n",
            ),
            (
                "x\ny",
                "x\nz",
                "2c2\n< y\n\\ No newline at end of file\n---\n> z\n\\ No newline at end of file\n",
            ),
        ];
        for (old, new, want) in cases {
            assert_eq!(normal_diff(old, new), want, "{old:?} -> {new:?}");
        }
        assert_eq!(
            unified_diff("x\ny", "x\nz", "live", "target"),
            "--- live\n+++ target\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn hunks_placed_where_gnu_diff_places_them() {
        // Plain Myers diffs differ from GNU diff on each of these.
        assert_eq!(
            normal_diff("c\nc\na\n", "b\na\nc\na\nc\n"),
            "1c1,2\n< c\n---\n> b\n> a\n3a5\n> c\n"
        );
        assert_eq!(
            normal_diff("a\na\nc\nb\n", "c\nc\nb\na\na\n"),
            "1,2c1\n< a\n< a\n---\n> c\n4a4,5\n> a\n> a\n"
        );
        assert_eq!(
            unified_diff("c\nc\na\n", "b\na\nc\na\nc\n", "live", "target"),
            "--- live\n+++ target\n@@ -1,3 +1,5 @@\n-c\n+b\n+a\n c\n a\n+c\n"
        );
    }

    #[test]
    fn unified_hunks_context_and_merging() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let edit = |changed: [usize; 2]| -> String {
            (1..=20)
                .map(|i| {
                    if changed.contains(&i) {
                        format!("L{i}\n")
                    } else {
                        format!("l{i}\n")
                    }
                })
                .collect()
        };
        assert_eq!(
            unified_diff(&old, &edit([2, 18]), "live", "target"),
            "--- live\n+++ target\n@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n"
        );
        assert_eq!(
            unified_diff(&old, &edit([5, 11]), "live", "target"),
            "--- live\n+++ target\n@@ -2,13 +2,13 @@\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n l9\n l10\n-l11\n+L11\n l12\n l13\n l14\n"
        );
        assert_eq!(
            unified_diff("", "a\nb\n", "l", "t"),
            "--- l\n+++ t\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        );
        assert_eq!(
            unified_diff("a\nb\nc\n", "", "l", "t"),
            "--- l\n+++ t\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"
        );
        assert_eq!(
            unified_diff("a\nb\nc\nd\ne\n", "new\na\nb\nc\nd\ne\n", "l", "t"),
            "--- l\n+++ t\n@@ -1,3 +1,4 @@\n+new\n a\n b\n c\n"
        );
    }

    fn deployment(image: &str, replicas: u32, extra_env: bool, tier: bool) -> Value {
        let mut env = vec![
            json!({"name": "A", "value": "1"}),
            json!({"name": "C", "value": "3"}),
        ];
        if extra_env {
            env.insert(1, json!({"name": "B", "value": "2"}));
        }
        let mut labels = json!({"app": "web"});
        if tier {
            labels["tier"] = json!("frontend");
        }
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "app", "image": image, "env": env, "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "sidecar", "image": "envoy:1.0", "args": ["--log-level", "info"]}]}}}
        })
    }

    #[test]
    fn deployment_diff_as_argocd_prints_it() {
        let live = to_yaml(&deployment("nginx:1.25", 2, false, false));
        let target = to_yaml(&deployment("nginx:1.26", 3, true, true));
        assert_eq!(
            normal_diff(&live, &target),
            "5a6\n>     tier: frontend\n9c10\n<   replicas: 2\n---\n>   replicas: 3\n21a23,24\n>         - name: B\n>           value: \"2\"\n24c27\n<         image: nginx:1.25\n---\n>         image: nginx:1.26\n"
        );
        assert_eq!(
            unified_diff(&live, &target, "live", "target"),
            "--- live\n+++ target\n@@ -3,10 +3,11 @@\n metadata:\n   labels:\n     app: web\n+    tier: frontend\n   name: web\n   namespace: prod\n spec:\n-  replicas: 2\n+  replicas: 3\n   selector:\n     matchLabels:\n       app: web\n@@ -19,9 +20,11 @@\n       - env:\n         - name: A\n           value: \"1\"\n+        - name: B\n+          value: \"2\"\n         - name: C\n           value: \"3\"\n-        image: nginx:1.25\n+        image: nginx:1.26\n         name: app\n         ports:\n         - containerPort: 80\n"
        );
    }

    // --- patch appliers and generators for property tests

    struct XorShift(u64);

    impl XorShift {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            usize::try_from(self.0 % u64::try_from(n).expect("small")).expect("small")
        }
    }

    fn random_text(r: &mut XorShift, alphabet: &[&str], max_lines: usize) -> String {
        let n = r.below(max_lines + 1);
        let mut s = String::new();
        for i in 0..n {
            s.push_str(alphabet[r.below(alphabet.len())]);
            if i + 1 < n || r.below(4) != 0 {
                s.push('\n');
            }
        }
        s
    }

    /// Lines with their terminators; the last may lack one.
    fn lines(s: &str) -> Vec<String> {
        s.split_inclusive('\n').map(str::to_owned).collect()
    }

    /// Applies a normal-format diff, checking every `<` line against `old`.
    fn apply_normal(old: &str, diff: &str) -> String {
        let old_lines = lines(old);
        let mut out: Vec<String> = Vec::new();
        let mut next_old = 0; // 0-based index of the next old line to copy
        let mut last_was_new = false;
        for line in diff.lines() {
            if let Some(text) = line.strip_prefix("< ") {
                assert_eq!(old_lines[next_old].trim_end_matches('\n'), text);
                next_old += 1;
                last_was_new = false;
            } else if let Some(text) = line.strip_prefix("> ") {
                out.push(format!("{text}\n"));
                last_was_new = true;
            } else if line == "\\ No newline at end of file" {
                if last_was_new {
                    let l = out.last_mut().expect("a line precedes the marker");
                    l.pop();
                }
            } else if line == "---" {
            } else {
                let cmd = line.find(['a', 'c', 'd']).expect("a change command");
                let range = &line[..cmd];
                let first: usize = range
                    .split(',')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("line number");
                // Lines before the change (for `a`, up to and including `first`).
                let copy_to = if &line[cmd..=cmd] == "a" {
                    first
                } else {
                    first - 1
                };
                while next_old < copy_to {
                    out.push(old_lines[next_old].clone());
                    next_old += 1;
                }
            }
        }
        out.extend(old_lines[next_old..].iter().cloned());
        out.concat()
    }

    /// Applies a unified diff, checking context and `-` lines against `old`.
    fn apply_unified(old: &str, diff: &str) -> String {
        let old_lines = lines(old);
        let mut out: Vec<String> = Vec::new();
        let mut next_old = 0;
        let mut last_kept = false;
        for line in diff.lines().skip(2) {
            if let Some(rest) = line.strip_prefix("@@ -") {
                let range = rest.split(' ').next().expect("old range");
                let mut parts = range.split(',');
                let start: usize = parts.next().and_then(|n| n.parse().ok()).expect("start");
                let len: usize = parts.next().map_or(1, |n| n.parse().expect("len"));
                let copy_to = if len == 0 { start } else { start - 1 };
                while next_old < copy_to {
                    out.push(old_lines[next_old].clone());
                    next_old += 1;
                }
            } else if line == "\\ No newline at end of file" {
                if last_kept {
                    out.last_mut().expect("a line precedes the marker").pop();
                }
            } else if let Some(text) = line.strip_prefix('+') {
                out.push(format!("{text}\n"));
                last_kept = true;
            } else if let Some(text) = line.strip_prefix('-') {
                assert_eq!(old_lines[next_old].trim_end_matches('\n'), text);
                next_old += 1;
                last_kept = false;
            } else {
                let text = line.strip_prefix(' ').expect("context line");
                assert_eq!(old_lines[next_old].trim_end_matches('\n'), text);
                out.push(format!("{text}\n"));
                next_old += 1;
                last_kept = true;
            }
        }
        out.extend(old_lines[next_old..].iter().cloned());
        out.concat()
    }

    #[test]
    fn property_diffs_applied_as_patches_rebuild_the_new_text() {
        let mut r = XorShift(0x9E37_79B9_7F4A_7C15);
        let alphabet = ["a", "b", "c", "", "- name: x"];
        for _ in 0..3000 {
            let old = random_text(&mut r, &alphabet, 10);
            let new = random_text(&mut r, &alphabet, 10);
            let normal = normal_diff(&old, &new);
            assert_eq!(normal.is_empty(), old == new, "{old:?} -> {new:?}");
            assert_eq!(
                apply_normal(&old, &normal),
                new,
                "normal {old:?} -> {new:?}\n{normal}"
            );
            let unified = unified_diff(&old, &new, "a", "b");
            assert_eq!(
                apply_unified(&old, &unified),
                new,
                "unified {old:?} -> {new:?}\n{unified}"
            );
        }
    }

    // --- exact match against the real GNU diff, when it is installed

    const GNU_DIFF: &str = "/usr/bin/diff";

    fn gnu_diff(args: &[&str], old: &str, new: &str, tag: &str) -> Option<String> {
        if !std::path::Path::new(GNU_DIFF).exists() {
            return None;
        }
        let dir = std::env::temp_dir();
        let pa = dir.join(format!("plumb-text-{}-{tag}-old", std::process::id()));
        let pb = dir.join(format!("plumb-text-{}-{tag}-new", std::process::id()));
        std::fs::write(&pa, old).ok()?;
        std::fs::write(&pb, new).ok()?;
        let out = std::process::Command::new(GNU_DIFF)
            .args(args)
            .arg(&pa)
            .arg(&pb)
            .output()
            .ok()?;
        let _ = std::fs::remove_file(&pa);
        let _ = std::fs::remove_file(&pb);
        String::from_utf8(out.stdout).ok()
    }

    fn assert_same_as_gnu(old: &str, new: &str, tag: &str) -> bool {
        let Some(want) = gnu_diff(&[], old, new, tag) else {
            return false;
        };
        assert_eq!(
            normal_diff(old, new),
            want,
            "normal diff of\n{old}\n---- vs ----\n{new}"
        );
        let want_u = gnu_diff(
            &["-u", "--label", "live", "--label", "target"],
            old,
            new,
            tag,
        )
        .unwrap_or_default();
        assert_eq!(
            unified_diff(old, new, "live", "target"),
            want_u,
            "unified diff of\n{old}\n---- vs ----\n{new}"
        );
        true
    }

    /// Realistic objects and edits: every pair is rendered with `to_yaml` and
    /// diffed by both implementations.
    fn yaml_corpus() -> Vec<(Value, Value)> {
        let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "prod"}, "data": data});
        let svc = |ports: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": ports, "selector": {"app": "web"}, "type": "ClusterIP"}});
        let port = |name: &str, n: u16| json!({"name": name, "port": n, "protocol": "TCP", "targetPort": n});
        let base = deployment("nginx:1.25", 2, false, false);
        let mut with_probe = base.clone();
        with_probe["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] =
            json!({"httpGet": {"path": "/healthz", "port": 80}, "periodSeconds": 10});
        let mut two_apps = base.clone();
        let first = two_apps["spec"]["template"]["spec"]["containers"][0].clone();
        if let Some(list) = two_apps["spec"]["template"]["spec"]["containers"].as_array_mut() {
            list.insert(0, first);
        }
        vec![
            (base.clone(), deployment("nginx:1.26", 2, false, false)),
            (base.clone(), deployment("nginx:1.25", 5, true, true)),
            (deployment("nginx:1.25", 2, true, false), base.clone()),
            (base.clone(), with_probe.clone()),
            (with_probe, deployment("nginx:1.27", 1, true, true)),
            (base.clone(), two_apps),
            (Value::Null, base.clone()),
            (base.clone(), Value::Null),
            (
                cm(json!({"app.properties": "a=1\nb=2\nc=3\n", "flag": "true"})),
                cm(json!({"app.properties": "a=1\nb=20\nc=3\nd=4\n", "flag": "false", "new": "x"})),
            ),
            (
                cm(json!({"script.sh": "#!/bin/sh\nset -e\necho start\n\necho done\n"})),
                cm(json!({"script.sh": "#!/bin/sh\nset -e\necho start\necho middle\n\necho done"})),
            ),
            (
                svc(json!([port("http", 80), port("https", 443)])),
                svc(json!([port("https", 443), port("http", 80)])),
            ),
            (
                svc(json!([port("http", 80)])),
                svc(json!([
                    port("http", 80),
                    port("metrics", 9090),
                    port("grpc", 9091)
                ])),
            ),
        ]
    }

    #[test]
    fn yaml_object_diffs_match_gnu_diff() {
        let render = |v: &Value| {
            if v.is_null() {
                String::new()
            } else {
                to_yaml(v)
            }
        };
        let mut compared = 0;
        for (i, (live, target)) in yaml_corpus().iter().enumerate() {
            if assert_same_as_gnu(&render(live), &render(target), &format!("yaml{i}")) {
                compared += 1;
            }
        }
        if compared == 0 {
            eprintln!("skipped: {GNU_DIFF} not found");
        }
    }

    #[test]
    fn random_line_sets_match_gnu_diff() {
        let mut r = XorShift(0x2545_F491_4F6C_DD1D);
        let alphabet = ["a", "b", "c", "", "  name: x", "- name: y"];
        for i in 0..300 {
            let old = random_text(&mut r, &alphabet, 14);
            let new = random_text(&mut r, &alphabet, 14);
            if !assert_same_as_gnu(&old, &new, &format!("rand{i}")) {
                eprintln!("skipped: {GNU_DIFF} not found");
                return;
            }
        }
    }
}
