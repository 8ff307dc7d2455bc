//! Kubernetes timestamps and human durations.
//!
//! `metav1.Time` (e.g. `creationTimestamp`) travels as RFC 3339 in UTC with
//! whole seconds; `metav1.MicroTime` (e.g. an event's `eventTime`, a lease's
//! `renewTime`) with six fractional digits. Both parse any RFC 3339 time,
//! fractional seconds and offsets included, like Go's `time.Parse`. The age
//! columns of `kubectl get` come from `duration.HumanDuration`, whose
//! rounding rules ("2m3s" below ten minutes, "3h15m" below eight hours, ...)
//! are reproduced in [`human_duration`].

use jiff::tz::Offset;
use jiff::{SignedDuration, Timestamp};

/// Errors from parsing a timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// The text is not an RFC 3339 date-time.
    #[error("parsing time {}: not an RFC 3339 date-time", crate::gofmt::go_quote(.0))]
    Syntax(String),
    /// The text is well-formed but names no valid instant (e.g. February 30).
    #[error("parsing time {}: {}", crate::gofmt::go_quote(.0), .1)]
    Range(String, String),
}

/// Formats a `metav1.Time`: UTC, whole seconds, e.g. `2026-01-02T03:04:05Z`.
/// Sub-second precision is dropped, as upstream does on the wire.
pub fn format_time(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Formats a `metav1.MicroTime`: UTC with six fractional digits, e.g.
/// `2026-01-02T03:04:05.123456Z`.
pub fn format_micro_time(ts: Timestamp) -> String {
    let micros = ts.subsec_nanosecond().rem_euclid(1_000_000_000) / 1_000;
    format!("{}.{:06}Z", ts.strftime("%Y-%m-%dT%H:%M:%S"), micros)
}

/// Truncates a timestamp to whole seconds (what a `metav1.Time` can hold).
pub fn truncate_to_seconds(ts: Timestamp) -> Timestamp {
    let secs = ts.as_second() - i64::from(ts.subsec_nanosecond() < 0);
    Timestamp::from_second(secs).unwrap_or(ts)
}

/// Parses an RFC 3339 date-time (`2006-01-02T15:04:05Z`,
/// `2006-01-02T15:04:05.999+07:00`) into an instant. Strict like Go's
/// `time.RFC3339` layout: `T` and `Z` upper case, seconds required.
pub fn parse_time(s: &str) -> Result<Timestamp, TimeError> {
    let syntax = || TimeError::Syntax(s.to_owned());
    let b = s.as_bytes();
    if b.len() < 20 {
        return Err(syntax());
    }
    let num = |from: usize, len: usize| -> Result<i32, TimeError> {
        let part = b.get(from..from + len).ok_or_else(syntax)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return Err(syntax());
        }
        Ok(part
            .iter()
            .fold(0i32, |acc, d| acc * 10 + i32::from(d - b'0')))
    };
    let sep = |at: usize, c: u8| -> Result<(), TimeError> {
        if b.get(at) == Some(&c) {
            Ok(())
        } else {
            Err(syntax())
        }
    };
    let year = num(0, 4)?;
    sep(4, b'-')?;
    let month = num(5, 2)?;
    sep(7, b'-')?;
    let day = num(8, 2)?;
    sep(10, b'T')?;
    let hour = num(11, 2)?;
    sep(13, b':')?;
    let minute = num(14, 2)?;
    sep(16, b':')?;
    let second = num(17, 2)?;
    let mut pos = 19;
    let mut nanos: i32 = 0;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            if pos - start < 9 {
                nanos = nanos * 10 + i32::from(b[pos] - b'0');
            }
            pos += 1;
        }
        let digits = pos - start;
        if digits == 0 {
            return Err(syntax());
        }
        for _ in digits..9 {
            nanos *= 10;
        }
    }
    let offset_seconds = match b.get(pos) {
        Some(b'Z') if pos + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if pos + 6 == b.len() => {
            let oh = num(pos + 1, 2)?;
            sep(pos + 3, b':')?;
            let om = num(pos + 4, 2)?;
            if oh > 23 || om > 59 {
                return Err(TimeError::Range(
                    s.to_owned(),
                    "time zone offset out of range".into(),
                ));
            }
            let secs = oh * 3600 + om * 60;
            if sign == b'-' { -secs } else { secs }
        }
        _ => return Err(syntax()),
    };
    let range = |e: jiff::Error| TimeError::Range(s.to_owned(), e.to_string());
    let month = i8::try_from(month).map_err(|_| syntax())?;
    let day = i8::try_from(day).map_err(|_| syntax())?;
    let hour = i8::try_from(hour).map_err(|_| syntax())?;
    let minute = i8::try_from(minute).map_err(|_| syntax())?;
    let second = i8::try_from(second).map_err(|_| syntax())?;
    let year = i16::try_from(year).map_err(|_| syntax())?;
    let dt =
        jiff::civil::DateTime::new(year, month, day, hour, minute, second, nanos).map_err(range)?;
    let offset = Offset::from_seconds(offset_seconds).map_err(range)?;
    offset.to_timestamp(dt).map_err(range)
}

/// Go's `time.Duration` arithmetic saturates at ±292 years; we do the same so
/// that absurd timestamps cannot overflow.
fn to_go_nanos(d: SignedDuration) -> i64 {
    let n = d.as_nanos();
    n.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// A succinct duration with ~2-3 significant figures, exactly like
/// upstream's `duration.HumanDuration` (the `AGE` column): `0s`…`119s`,
/// `2m3s`…`9m59s`, `10m`…`179m`, `3h`…`7h59m`, `8h`…`47h`, `2d`…`7d23h`,
/// `8d`…`729d`, `2y`…`7y364d`, then years. Up to one second in the future
/// reads `0s`; further is `<invalid>`.
pub fn human_duration(d: SignedDuration) -> String {
    let d = to_go_nanos(d);
    let seconds = d / SECOND;
    if seconds < -1 {
        return "<invalid>".to_owned();
    } else if seconds < 0 {
        return "0s".to_owned();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d / MINUTE;
    if minutes < 10 {
        let s = (d / SECOND) % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d / HOUR;
    if hours < 8 {
        let m = (d / MINUTE) % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{}h", hours / 24, h);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{}d", hours / 24 / 365, dy);
    }
    format!("{}y", hours / 24 / 365)
}

/// The shorter variant, upstream's `duration.ShortHumanDuration`: one unit
/// only (`59s`, `59m`, `23h`, `364d`, `2y`).
pub fn short_human_duration(d: SignedDuration) -> String {
    let d = to_go_nanos(d);
    let seconds = d / SECOND;
    if seconds < -1 {
        "<invalid>".to_owned()
    } else if seconds < 0 {
        "0s".to_owned()
    } else if seconds < 60 {
        format!("{seconds}s")
    } else if d / MINUTE < 60 {
        format!("{}m", d / MINUTE)
    } else if d / HOUR < 24 {
        format!("{}h", d / HOUR)
    } else if d / HOUR < 24 * 365 {
        format!("{}d", d / HOUR / 24)
    } else {
        format!("{}y", d / HOUR / 24 / 365)
    }
}

/// The age of `ts` at `now` as [`human_duration`], or `<unknown>` when
/// there is no timestamp (upstream's `translateTimestampSince`).
pub fn age(ts: Option<Timestamp>, now: Timestamp) -> String {
    match ts {
        Some(ts) => human_duration(now.duration_since(ts)),
        None => "<unknown>".to_owned(),
    }
}

/// Reads a timestamp field of a JSON object: `None` when absent, `null`,
/// empty or unparsable (upstream's zero time).
pub fn timestamp_field(value: Option<&serde_json::Value>) -> Option<Timestamp> {
    let s = value?.as_str()?;
    let ts = parse_time(s).ok()?;
    // Go's zero time (0001-01-01T00:00:00Z) means "unset".
    if ts.as_second() == GO_ZERO_TIME_UNIX {
        return None;
    }
    Some(ts)
}

/// Unix seconds of Go's zero `time.Time`.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: i64) -> SignedDuration {
        SignedDuration::from_secs(n)
    }

    #[test]
    fn formats_time_with_whole_seconds_in_utc() {
        let ts = parse_time("2026-01-02T04:04:05.987+01:00").unwrap();
        assert_eq!(format_time(ts), "2026-01-02T03:04:05Z");
        assert_eq!(format_micro_time(ts), "2026-01-02T03:04:05.987000Z");
        assert_eq!(format_time(truncate_to_seconds(ts)), "2026-01-02T03:04:05Z");
        assert_eq!(truncate_to_seconds(ts).subsec_nanosecond(), 0);
    }

    #[test]
    fn parses_rfc3339_strictly() {
        assert!(parse_time("2026-01-02T03:04:05Z").is_ok());
        assert!(parse_time("2026-01-02T03:04:05.123456789Z").is_ok());
        assert!(parse_time("2026-01-02T03:04:05-07:30").is_ok());
        for bad in [
            "",
            "2026-01-02",
            "2026-01-02 03:04:05Z",
            "2026-01-02T03:04Z",
            "2026-01-02t03:04:05z",
            "2026-01-02T03:04:05.Z",
            "2026-01-02T03:04:05+0100",
            "2026-1-02T03:04:05Z",
            "2026-01-02T03:04:05Zjunk",
        ] {
            assert!(
                matches!(parse_time(bad), Err(TimeError::Syntax(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_time("2026-02-30T03:04:05Z"),
            Err(TimeError::Range(..))
        ));
        assert!(matches!(
            parse_time("2026-01-02T24:04:05Z"),
            Err(TimeError::Range(..))
        ));
        let err = parse_time("x").unwrap_err().to_string();
        assert_eq!(err, "parsing time \"x\": not an RFC 3339 date-time");
    }

    #[test]
    fn human_duration_boundaries_match_upstream() {
        let cases = [
            (secs(-3), "<invalid>"),
            (SignedDuration::from_millis(-1999), "0s"),
            (secs(-1), "0s"),
            (secs(0), "0s"),
            (secs(59), "59s"),
            (secs(119), "119s"),
            (secs(120), "2m"),
            (secs(123), "2m3s"),
            (secs(9 * 60 + 59), "9m59s"),
            (secs(10 * 60), "10m"),
            (secs(179 * 60 + 59), "179m"),
            (secs(3 * 3600), "3h"),
            (secs(3 * 3600 + 15 * 60), "3h15m"),
            (secs(7 * 3600 + 59 * 60), "7h59m"),
            (secs(8 * 3600), "8h"),
            (secs(47 * 3600), "47h"),
            (secs(48 * 3600), "2d"),
            (secs(50 * 3600), "2d2h"),
            (secs(8 * 86400 - 3600), "7d23h"),
            (secs(8 * 86400), "8d"),
            (secs(729 * 86400), "729d"),
            (secs(730 * 86400), "2y"),
            (secs(731 * 86400), "2y1d"),
            (secs(8 * 365 * 86400), "8y"),
            (secs(20 * 365 * 86400 + 86400), "20y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn short_human_duration_uses_one_unit() {
        assert_eq!(short_human_duration(secs(59)), "59s");
        assert_eq!(short_human_duration(secs(60)), "1m");
        assert_eq!(short_human_duration(secs(3599)), "59m");
        assert_eq!(short_human_duration(secs(3600)), "1h");
        assert_eq!(short_human_duration(secs(86400)), "1d");
        assert_eq!(short_human_duration(secs(365 * 86400)), "1y");
        assert_eq!(short_human_duration(secs(-5)), "<invalid>");
    }

    #[test]
    fn age_of_missing_or_zero_timestamp_is_unknown() {
        let now = parse_time("2026-01-02T03:04:05Z").unwrap();
        assert_eq!(age(None, now), "<unknown>");
        assert_eq!(
            timestamp_field(Some(&serde_json::json!("0001-01-01T00:00:00Z"))),
            None
        );
        assert_eq!(timestamp_field(Some(&serde_json::Value::Null)), None);
        let created = timestamp_field(Some(&serde_json::json!("2026-01-02T03:00:00Z")));
        assert_eq!(age(created, now), "4m5s");
    }
}
