//! Whether a plain YAML scalar reads back as a string, as go-yaml v2 decides it.
//!
//! go-yaml's encoder writes a string plain only when `resolve("", s)` would give
//! `!!str` back, and double-quotes it otherwise (`"true"`, `"1e3"`,
//! `"2001-12-14"`). That decision is `resolve.go`'s table of words (bools, nulls,
//! `.inf`, `<<`), Go's `strconv.ParseInt`/`ParseUint` (base 0) and `ParseFloat`
//! with go-yaml's underscore rules, go-yaml's four timestamp layouts as Go's
//! `time.Parse` accepts them (`2001-02-30` is no date, so it stays plain), and
//! `encode.go`'s `isBase60Float` (`1:20` is quoted).
//!
//! Must agree with `go.yaml.in/yaml/v2` v2.4.2 on every string: a miss shows in
//! `argocd app diff` output as quotes Argo CD does not print, or lacks.

/// Whether a plain scalar `s` would be read back by go-yaml v2 as a string
/// (`resolve.go` `resolve("", s)` yielding `!!str`).
pub(super) fn resolves_to_str(s: &str) -> bool {
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
pub(super) fn is_resolve_map_word(s: &str) -> bool {
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
pub(super) fn is_base60_float(s: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    // --- YAML: expectations produced by sigs.k8s.io/yaml v1.6.0 (go.yaml.in/yaml/v2 v2.4.2)

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
}
