//! RFC 3339 timestamps as Kubernetes' `metav1.Time` writes and reads them: written in UTC
//! with whole seconds (`2026-09-22T19:57:06Z`), read with an optional fraction and a `Z` or
//! `±hh:mm` offset.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A timestamp that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid RFC 3339 timestamp \"{0}\"")]
pub struct TimeError(pub String);

/// Seconds since the epoch (floored) and the nanoseconds within that second.
fn split(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let secs = -(d.as_secs() as i64);
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, 1_000_000_000 - n),
            }
        }
    }
}

fn from_parts(secs: i64, nanos: u32) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
            + Duration::from_nanos(u64::from(nanos))
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) → days since 1970-01-01.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
            if leap { 29 } else { 28 }
        }
    }
}

/// `2026-09-22T19:57:06Z`: UTC, whole seconds (the fraction is dropped, as `metav1.Time`
/// marshals it).
pub fn format_rfc3339(t: SystemTime) -> String {
    let (secs, _) = split(t);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (Go's `time.RFC3339` layout).
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, TimeError> {
    let err = || TimeError(text.to_string());
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Result<u32, TimeError> {
        let s = text.get(range).ok_or_else(err)?;
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(err());
        }
        s.parse().map_err(|_| err())
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(err());
    }
    let year = i64::from(num(0..4)?);
    let month = num(5..7)?;
    let day = num(8..10)?;
    let hour = num(11..13)?;
    let minute = num(14..16)?;
    let second = num(17..19)?;
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(err());
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b[i] == b'.' {
        let start = i + 1;
        let len = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if len == 0 {
            return Err(err());
        }
        for (k, c) in b[start..start + len].iter().enumerate() {
            if k < 9 {
                nanos = nanos * 10 + u32::from(c - b'0');
            }
        }
        for _ in len..9 {
            nanos *= 10;
        }
        i = start + len;
    }
    let offset_secs: i64 = match &text[i..] {
        "Z" => 0,
        rest if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) => {
            if rest.as_bytes()[3] != b':' {
                return Err(err());
            }
            let h = i64::from(num(i + 1..i + 3)?);
            let m = i64::from(num(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return Err(err());
            }
            let off = h * 3_600 + m * 60;
            if rest.starts_with('-') { -off } else { off }
        }
        _ => return Err(err()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i64::from(hour) * 3_600 + i64::from(minute) * 60 + i64::from(second)
        - offset_secs;
    Ok(from_parts(secs, nanos))
}

/// `#[serde(with = "crate::time::rfc3339")]` for a `SystemTime`.
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

/// `#[serde(with = "crate::time::rfc3339_option")]` for an `Option<SystemTime>` (null → None).
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

    #[test]
    fn formats_and_parses_round_trip() {
        let cases: &[(i64, &str)] = &[
            (0, "1970-01-01T00:00:00Z"),
            (1_790_107_026, "2026-09-22T19:57:06Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
        ];
        for (secs, text) in cases {
            let t = from_parts(*secs, 0);
            assert_eq!(format_rfc3339(t), *text);
            assert_eq!(parse_rfc3339(text), Ok(t), "{text}");
        }
    }

    #[test]
    fn reads_fractions_and_offsets_and_writes_whole_utc_seconds() {
        let t = parse_rfc3339("2026-09-22T21:57:06.75+02:00").unwrap();
        assert_eq!(split(t), (1_790_107_026, 750_000_000));
        assert_eq!(format_rfc3339(t), "2026-09-22T19:57:06Z");
        for bad in [
            "2026-09-22 19:57:06Z",
            "2026-02-30T00:00:00Z",
            "2026-09-22T19:57:06",
            "2026-09-22T24:00:00Z",
            "2026-09-22T19:57:06.Z",
            "2026-09-22T19:57:06+0200",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
