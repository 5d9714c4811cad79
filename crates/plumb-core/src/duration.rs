//! Go durations, as `time.ParseDuration` reads them (`5s`, `3m`, `1h2m3s`, `500ms`, `1.5h`),
//! and as Argo CD reads `syncPolicy.retry.backoff` durations (a bare integer is seconds).
//!
//! Also Go's `Duration.String()` (`90s` → `1m30s`) and the canonical form of `metav1.Duration`
//! fields that plumb-diff's known-type canonicalisation writes.

use std::fmt;
use std::time::Duration;

/// A Go `time.Duration`: signed nanoseconds. Negative durations exist in Go (`-5s`);
/// [`GoDuration::to_std`] turns them into zero, which is how a negative wait behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(pub i64);

impl GoDuration {
    /// No time.
    pub const ZERO: GoDuration = GoDuration(0);

    /// `secs` seconds (saturating at Go's largest duration).
    pub fn from_secs(secs: i64) -> GoDuration {
        GoDuration(secs.saturating_mul(NANOS_PER_SEC))
    }

    /// The duration in nanoseconds, as Go holds it.
    pub fn as_nanos(self) -> i64 {
        self.0
    }

    /// A `std::time::Duration` as a Go duration (saturating at Go's largest, about 292 years).
    pub fn from_std(d: Duration) -> GoDuration {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }

    /// The duration as a `std::time::Duration`; negative durations become zero.
    pub fn to_std(self) -> Duration {
        Duration::from_nanos(u64::try_from(self.0).unwrap_or(0))
    }
}

/// Why a duration could not be read. The message names the text, as Go's does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a Go duration, or out of its range.
    #[error("time: invalid duration \"{0}\"")]
    Invalid(String),
    /// A number without a unit (`5`; only `0` may go without).
    #[error("time: missing unit in duration \"{0}\"")]
    MissingUnit(String),
    /// A unit Go does not know (`5d`).
    #[error("time: unknown unit \"{unit}\" in duration \"{text}\"")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole text.
        text: String,
    },
    /// Argo CD's wording when neither a number of seconds nor a Go duration fits.
    #[error("unable to parse {0} as a duration")]
    NotADuration(String),
}

const NANOS_PER_SEC: i64 = 1_000_000_000;

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        // Go accepts the micro sign (U+00B5) and the Greek letter mu (U+03BC).
        "us" | "\u{00b5}s" | "\u{03bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        _ => return None,
    })
}

/// Go's `time.ParseDuration`: an optional sign, then one or more `<number><unit>` parts, where
/// the number may have a fraction and the unit is one of `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`.
/// `"0"` needs no unit. Out-of-range values are an error, as in Go.
pub fn parse_go_duration(text: &str) -> Result<GoDuration, DurationError> {
    let invalid = || DurationError::Invalid(text.to_string());
    let mut s = text;
    let mut neg = false;
    if let Some(rest) = s.strip_prefix('-') {
        neg = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(GoDuration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    // Go accumulates in a uint64 and allows exactly 1<<63 only for a negative result.
    let limit: u64 = if neg { 1 << 63 } else { (1 << 63) - 1 };
    let mut total: u64 = 0;
    while !s.is_empty() {
        let bytes = s.as_bytes();
        if !(bytes[0] == b'.' || bytes[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Integer part.
        let int_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &b in &bytes[..int_len] {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .filter(|&v| v <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        s = &s[int_len..];
        // Fraction: digits are kept while they fit, the rest only count for their scale
        // being ignored, exactly as Go's `leadingFraction` does.
        let mut frac: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut frac_len = 0;
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for &b in &s.as_bytes()[..digits] {
                if overflow {
                    continue;
                }
                match frac
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(b - b'0')))
                    .filter(|&f| f <= 1 << 63)
                {
                    Some(f) => {
                        frac = f;
                        scale *= 10.0;
                    }
                    None => overflow = true,
                }
            }
            frac_len = digits;
            s = &s[digits..];
        }
        if int_len == 0 && frac_len == 0 {
            // "." or ".s"
            return Err(invalid());
        }
        // Unit: everything up to the next '.' or digit.
        let unit_len = s
            .bytes()
            .take_while(|&b| b != b'.' && !b.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(text.to_string()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let unit_ns = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit.to_string(),
            text: text.to_string(),
        })?;
        let mut part = v
            .checked_mul(unit_ns)
            .filter(|&p| p <= 1 << 63)
            .ok_or_else(invalid)?;
        if frac > 0 {
            // Go: v += uint64(float64(f) * (float64(unit) / scale)); float64 is exact enough
            // for every duration people write, and this is the same arithmetic.
            let extra = (frac as f64) * (unit_ns as f64 / scale);
            part = part
                .checked_add(extra as u64)
                .filter(|&p| p <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(part)
            .filter(|&t| t <= limit)
            .ok_or_else(invalid)?;
    }
    let nanos = if neg {
        // total <= 1<<63 here; 1<<63 itself is i64::MIN.
        0i64.wrapping_sub_unsigned(total)
    } else {
        total as i64
    };
    Ok(GoDuration(nanos))
}

/// Argo CD's `parseStringToDuration` (retry backoff `duration` / `maxDuration`): a plain
/// integer (Go `strconv.Atoi`: optional sign, digits) is a number of seconds; anything else
/// must be a Go duration. Where Go would silently overflow `n * time.Second`, this is an error.
pub fn parse_argo_duration(text: &str) -> Result<GoDuration, DurationError> {
    if let Ok(secs) = text.parse::<i64>() {
        return secs
            .checked_mul(NANOS_PER_SEC)
            .map(GoDuration)
            .ok_or_else(|| DurationError::NotADuration(text.to_string()));
    }
    parse_go_duration(text).map_err(|_| DurationError::NotADuration(text.to_string()))
}

/// A Go duration in Go's canonical form (`8760h` → `8760h0m0s`, `90s` → `1m30s`), as a
/// `metav1.Duration` field reads back after Kubernetes parsed it; `None` when `text` is not
/// a Go duration.
pub fn canonical_go_duration(text: &str) -> Option<String> {
    parse_go_duration(text).ok().map(|d| d.to_string())
}

/// Go's `Duration.String()` form (`5s`, `3m0s`, `1h2m3s`, `500ms`), for messages.
impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let u = self.0.unsigned_abs();
        let sign = if neg { "-" } else { "" };
        if u == 0 {
            return f.write_str("0s");
        }
        if u < 1_000_000_000 {
            // Sub-second: the largest unit that keeps a non-zero integer part.
            let (unit, div) = if u < 1_000 {
                ("ns", 1)
            } else if u < 1_000_000 {
                ("µs", 1_000)
            } else {
                ("ms", 1_000_000)
            };
            return write!(f, "{sign}{}{unit}", trim_fraction(u, div));
        }
        let hours = u / 3_600_000_000_000;
        let rem = u % 3_600_000_000_000;
        let mins = rem / 60_000_000_000;
        let rem = rem % 60_000_000_000;
        let secs = trim_fraction(rem, 1_000_000_000);
        if hours > 0 {
            write!(f, "{sign}{hours}h{mins}m{secs}s")
        } else if mins > 0 {
            write!(f, "{sign}{mins}m{secs}s")
        } else {
            write!(f, "{sign}{secs}s")
        }
    }
}

/// `n / div` with its fraction, trailing zeros removed (`1500, 1000` → `1.5`).
fn trim_fraction(n: u64, div: u64) -> String {
    let int = n / div;
    let frac = n % div;
    if frac == 0 {
        return int.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = NANOS_PER_SEC;

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        let cases: &[(&str, i64)] = &[
            ("5s", 5 * S),
            ("3m", 180 * S),
            ("1h2m3s", 3723 * S),
            ("500ms", 500_000_000),
            ("1.5h", 5400 * S),
            ("0", 0),
            ("-5s", -5 * S),
            ("+2m", 120 * S),
            ("1us", 1_000),
            ("1µs", 1_000),
            ("1μs", 1_000),
            ("10ns", 10),
            (".5s", 500_000_000),
            ("1.s", S),
            ("2h45m", 9900 * S),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse_go_duration(text), Ok(GoDuration(*nanos)), "{text}");
        }
    }

    #[test]
    fn malformed_go_durations_are_errors() {
        for text in [
            "",
            "5",
            "s",
            ".",
            "-",
            "1d",
            "5 s",
            "1h-2m",
            "9999999999999999999h",
        ] {
            assert!(parse_go_duration(text).is_err(), "{text} should not parse");
        }
        assert_eq!(
            parse_go_duration("5").unwrap_err().to_string(),
            "time: missing unit in duration \"5\""
        );
        assert_eq!(
            parse_go_duration("1d").unwrap_err().to_string(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
    }

    #[test]
    fn argo_durations_take_bare_integers_as_seconds() {
        assert_eq!(parse_argo_duration("5"), Ok(GoDuration(5 * S)));
        assert_eq!(parse_argo_duration("180"), Ok(GoDuration(180 * S)));
        assert_eq!(parse_argo_duration("3m"), Ok(GoDuration(180 * S)));
        assert_eq!(parse_argo_duration("-1"), Ok(GoDuration(-S)));
        assert_eq!(
            parse_argo_duration("soon").unwrap_err().to_string(),
            "unable to parse soon as a duration"
        );
    }

    #[test]
    fn displays_like_go() {
        for (nanos, text) in [
            (5 * S, "5s"),
            (180 * S, "3m0s"),
            (3723 * S, "1h2m3s"),
            (500_000_000, "500ms"),
            (1_500_000_000, "1.5s"),
            (0, "0s"),
            (-5 * S, "-5s"),
        ] {
            assert_eq!(GoDuration(nanos).to_string(), text);
        }
        assert_eq!(GoDuration(-5 * S).to_std(), Duration::ZERO);
        assert_eq!(
            GoDuration::from_std(Duration::from_millis(1_500)).to_string(),
            "1.5s"
        );
        assert_eq!(
            GoDuration::from_std(Duration::from_nanos(1_500)).to_string(),
            "1.5µs"
        );
        assert_eq!(GoDuration::from_std(Duration::MAX), GoDuration(i64::MAX));
    }

    /// What plumb-diff's known-type canonicalisation of `metav1.Duration` fields produced
    /// before it used this module (it summed floats; Go and this module sum integers).
    #[test]
    fn canonical_forms_for_known_type_fields() {
        for (text, canon) in [
            ("8760h", Some("8760h0m0s")),
            ("90s", Some("1m30s")),
            ("1.5s", Some("1.5s")),
            ("500ms", Some("500ms")),
            ("0", Some("0s")),
            ("-90s", Some("-1m30s")),
            ("1h0.5m", Some("1h0m30s")),
            ("2us", Some("2µs")),
            ("5x", None),
            ("5", None),
            ("", None),
        ] {
            assert_eq!(canonical_go_duration(text).as_deref(), canon, "{text}");
        }
    }
}
