//! RFC 3339 timestamps as Kubernetes' `metav1.Time` writes and reads them: written in UTC
//! with whole seconds (`2026-09-22T19:57:06Z`), read exactly as Go's `time.Parse(time.RFC3339, …)`
//! reads them (what `metav1.Time` accepts: a fraction of any length after `.` or `,`, a
//! one-digit hour, offsets up to `±24:60`, no leap second). The arithmetic is `jiff`'s; this
//! module only fixes the grammar (`jiff` alone would also take `2026-09-22 19:57Z`, `+0200`
//! or `23:59:60`).

use std::time::SystemTime;

/// A timestamp that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid RFC 3339 timestamp \"{0}\"")]
pub struct TimeError(pub String);

/// `2026-09-22T19:57:06Z`: UTC, whole seconds (the fraction is dropped, as `metav1.Time`
/// marshals it). Times beyond `jiff`'s range (years -9999 to 9999) are clamped to it.
pub fn format_rfc3339(t: SystemTime) -> String {
    let ts = jiff::Timestamp::try_from(t).unwrap_or(if t > SystemTime::UNIX_EPOCH {
        jiff::Timestamp::MAX
    } else {
        jiff::Timestamp::MIN
    });
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The fields of Go's `time.Parse(time.RFC3339, …)` grammar, which `metav1.Time` reads
/// with: `YYYY-MM-DD`, `T`, an hour of one or two digits, `:MM:SS`, an optional fraction
/// after `.` or `,` (any number of digits, nanoseconds kept: the rest is truncated), then
/// `Z` or `±hh:mm`. Ranges as Go checks them: hour 0–23, minute and second 0–59 (no leap
/// second `:60`), the day within its month, an offset up to `±24:60`.
struct Fields {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    nanos: i32,
    offset_seconds: i32,
}

fn go_rfc3339_fields(text: &str) -> Option<Fields> {
    let b = text.as_bytes();
    let mut i = 0;
    // `n` digits exactly at the cursor.
    let fixed = |n: usize, i: &mut usize| -> Option<i32> {
        let s = b.get(*i..*i + n)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *i += n;
        Some(s.iter().fold(0, |acc, d| acc * 10 + i32::from(d - b'0')))
    };
    let lit = |c: u8, i: &mut usize| -> Option<()> { (b.get(*i) == Some(&c)).then(|| *i += 1) };
    let year = fixed(4, &mut i)?;
    lit(b'-', &mut i)?;
    let month = fixed(2, &mut i)?;
    lit(b'-', &mut i)?;
    let day = fixed(2, &mut i)?;
    lit(b'T', &mut i)?;
    // Go's `15` is an hour of one or two digits.
    let hour = if b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        fixed(2, &mut i)?
    } else {
        fixed(1, &mut i)?
    };
    lit(b':', &mut i)?;
    let minute = fixed(2, &mut i)?;
    lit(b':', &mut i)?;
    let second = fixed(2, &mut i)?;
    let mut nanos = 0;
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let kept = &b[i..i + digits.min(9)];
        nanos = kept.iter().fold(0, |acc, d| acc * 10 + i32::from(d - b'0'))
            * 10_i32.pow(9 - kept.len() as u32);
        i += digits;
    }
    let offset_seconds = match b.get(i) {
        Some(b'Z') => {
            i += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            i += 1;
            let h = fixed(2, &mut i)?;
            lit(b':', &mut i)?;
            let m = fixed(2, &mut i)?;
            if h > 24 || m > 60 {
                return None;
            }
            let s = h * 3600 + m * 60;
            if sign == b'-' { -s } else { s }
        }
        _ => return None,
    };
    if i != b.len() || !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(Fields {
        year: i16::try_from(year).ok()?,
        month: i8::try_from(month).ok()?,
        day: i8::try_from(day).ok()?,
        hour: i8::try_from(hour).ok()?,
        minute: i8::try_from(minute).ok()?,
        second: i8::try_from(second).ok()?,
        nanos,
        offset_seconds,
    })
}

/// Parses a timestamp as Go's `time.Parse(time.RFC3339, …)` does (so as `metav1.Time`
/// reads it; see `Fields`): `2026-09-22T19:57:06Z`, `…06.5+02:00`, `…06,5Z`, `…T1:57:06Z`.
/// Dates and times out of range (`2026-02-30`, `24:00:00`, `23:59:60`) are errors, as are
/// times outside `jiff`'s range (years -9999 to 9999, less a day at either end).
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, TimeError> {
    let err = || TimeError(text.to_string());
    let f = go_rfc3339_fields(text).ok_or_else(err)?;
    let civil =
        jiff::civil::DateTime::new(f.year, f.month, f.day, f.hour, f.minute, f.second, f.nanos)
            .map_err(|_| err())?;
    let offset = jiff::tz::Offset::from_seconds(f.offset_seconds).map_err(|_| err())?;
    let ts = offset.to_timestamp(civil).map_err(|_| err())?;
    Ok(SystemTime::from(ts))
}

/// `#[serde(with = "plumb_core::time::rfc3339")]` for a `SystemTime`.
pub mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_rfc3339(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_rfc3339(&text).map_err(D::Error::custom)
    }
}

/// `#[serde(with = "plumb_core::time::rfc3339_option")]` for an `Option<SystemTime>`
/// (null → None; pair it with `skip_serializing_if = "Option::is_none"` and `default`).
pub mod rfc3339_option {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::format_rfc3339(*t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => super::parse_rfc3339(&text)
                .map(Some)
                .map_err(D::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: i64, nanos: u32) -> SystemTime {
        if secs >= 0 {
            UNIX_EPOCH + Duration::new(secs.unsigned_abs(), nanos)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
                + Duration::from_nanos(nanos.into())
        }
    }

    #[test]
    fn formats_and_parses_round_trip() {
        let cases: &[(i64, &str)] = &[
            (0, "1970-01-01T00:00:00Z"),
            (1_790_107_026, "2026-09-22T19:57:06Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (253_402_207_199, "9999-12-30T21:59:59Z"),
        ];
        for (secs, text) in cases {
            let t = at(*secs, 0);
            assert_eq!(format_rfc3339(t), *text);
            assert_eq!(parse_rfc3339(text), Ok(t), "{text}");
        }
    }

    #[test]
    fn reads_fractions_and_offsets_and_writes_whole_utc_seconds() {
        let t = parse_rfc3339("2026-09-22T21:57:06.75+02:00").unwrap();
        assert_eq!(t, at(1_790_107_026, 750_000_000));
        assert_eq!(format_rfc3339(t), "2026-09-22T19:57:06Z");
        assert_eq!(
            parse_rfc3339("2026-09-22T19:57:06.123456789Z"),
            Ok(at(1_790_107_026, 123_456_789))
        );
        assert_eq!(
            parse_rfc3339("2026-09-22T19:57:06-01:30"),
            Ok(at(1_790_107_026 + 5_400, 0))
        );
        assert_eq!(format_rfc3339(at(-1, 500_000_000)), "1969-12-31T23:59:59Z");
        // jiff's range ends a day before year 10000 (room for any offset).
        assert!(parse_rfc3339("9999-12-31T23:59:59Z").is_err());
        assert_eq!(
            format_rfc3339(at(300_000_000_000, 0)),
            "9999-12-30T22:00:00Z"
        );
    }

    #[test]
    fn only_go_rfc3339_layout_is_read() {
        for bad in [
            "",
            "yesterday",
            "2026-09-22 19:57:06Z",
            "2026-09-22t19:57:06Z",
            "2026-09-22T19:57:06z",
            "2026-02-30T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-09-22T19:57:06",
            "2026-09-22T24:00:00Z",
            "2026-09-22T19:60:00Z",
            "2026-09-22T19:57:06.Z",
            "2026-09-22T19:57Z",
            "2026-09-22T19:57:06+0200",
            "2026-09-22T19:57:06+02",
            "+2026-09-22T19:57:06Z",
        ] {
            assert_eq!(parse_rfc3339(bad), Err(TimeError(bad.into())), "{bad}");
        }
    }

    /// What Go 1.26's `time.Parse(time.RFC3339, s)` (the parser of `metav1.Time`) answers,
    /// recorded from Go: `Some(unix seconds, nanoseconds)` or `None` for an error.
    #[test]
    fn matches_go_time_parse_rfc3339() {
        let table: &[(&str, Option<(i64, u32)>)] = &[
            ("2026-09-22T19:57:06Z", Some((1_790_107_026, 0))),
            // No leap second: Go refuses second 60.
            ("2026-09-22T23:59:60Z", None),
            ("2026-12-31T23:59:60Z", None),
            // Any number of fraction digits; beyond nine they are truncated.
            (
                "2026-09-22T19:57:06.1234567891Z",
                Some((1_790_107_026, 123_456_789)),
            ),
            (
                "2026-09-22T19:57:06.123456789123456Z",
                Some((1_790_107_026, 123_456_789)),
            ),
            (
                "2026-09-22T19:57:06.9999999999Z",
                Some((1_790_107_026, 999_999_999)),
            ),
            ("2026-09-22T19:57:06.0000000005Z", Some((1_790_107_026, 0))),
            // A comma before the fraction, and a one-digit hour (Go's layout `15`).
            ("2026-09-22T19:57:06,5Z", Some((1_790_107_026, 500_000_000))),
            ("2026-09-22T1:57:06Z", Some((1_790_042_226, 0))),
            // Offsets up to ±24:60.
            ("2026-09-22T19:57:06+24:00", Some((1_790_020_626, 0))),
            ("2026-09-22T19:57:06+23:60", Some((1_790_020_626, 0))),
            ("2026-09-22T19:57:06-00:00", Some((1_790_107_026, 0))),
            ("2026-09-22T19:57:06+25:00", None),
            ("2026-09-22T19:57:06+02:61", None),
            ("0000-01-01T00:00:00Z", Some((-62_167_219_200, 0))),
            ("2024-02-29T00:00:00Z", Some((1_709_164_800, 0))),
            ("2026-02-29T00:00:00Z", None),
            ("2026-09-22T24:00:00Z", None),
            ("2026-9-22T19:57:06Z", None),
            ("2026-09-22T19:57:6Z", None),
            ("2026-09-22T19:7:06Z", None),
            ("2026-09-22T19:57:06.Z", None),
            ("2026-09-22T19:57:06,Z", None),
            ("2026-09-22T19:57:06.5,5Z", None),
            ("2026-09-22T19:57:06 Z", None),
            (" 2026-09-22T19:57:06Z", None),
            ("2026-09-22T19:57:06Z ", None),
            ("+026-09-22T19:57:06Z", None),
            ("2026-09-22T-1:57:06Z", None),
            ("2026-09-22T19:57:06x02:00", None),
            ("2026-09-22T19:57:06+2:00", None),
            ("2026-09-22T19:57:06+02:00:00", None),
            ("2026-09-22T19:57:06+0200", None),
            ("2026-09-22T19:57:06z", None),
            ("2026-09-22t19:57:06Z", None),
        ];
        for (text, want) in table {
            let got = parse_rfc3339(text).ok().map(|t| {
                let ts = jiff::Timestamp::try_from(t).unwrap();
                (ts.as_second(), ts.subsec_nanosecond().unsigned_abs())
            });
            assert_eq!(got, *want, "{text}");
        }
    }
}
