//! RFC 3339 timestamps as Kubernetes' `metav1.Time` writes and reads them: written in UTC
//! with whole seconds (`2026-09-22T19:57:06Z`), read with an optional fraction and a `Z` or
//! `±hh:mm` offset. The arithmetic is `jiff`'s; this module only fixes the grammar, which is
//! Go's `time.RFC3339` layout (`jiff` alone would also take `2026-09-22 19:57Z` or `+0200`).

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

/// Whether `text` has the shape `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
fn go_rfc3339_shape(text: &str) -> bool {
    let b = text.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !(digits(0..4) && digits(5..7) && digits(8..10))
        || !(digits(11..13) && digits(14..16) && digits(17..19))
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return false;
    }
    let mut rest = &b[19..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    match rest {
        b"Z" => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (Go's `time.RFC3339` layout); dates and
/// times out of range (`2026-02-30`, `24:00:00`) are errors.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, TimeError> {
    let err = || TimeError(text.to_string());
    if !go_rfc3339_shape(text) {
        return Err(err());
    }
    let ts: jiff::Timestamp = text.parse().map_err(|_| err())?;
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
            "2026-09-22T19:57:06,5Z",
            "2026-09-22T19:57Z",
            "2026-09-22T19:57:06+0200",
            "2026-09-22T19:57:06+02",
            "+2026-09-22T19:57:06Z",
        ] {
            assert_eq!(parse_rfc3339(bad), Err(TimeError(bad.into())), "{bad}");
        }
    }
}
