//! Text forms of the time types, as Go's `encoding/json` writes them for Kubernetes objects.
//!
//! * `metav1.Time` → `time.RFC3339` in UTC, second precision (`2024-01-02T03:04:05Z`).
//! * `metav1.MicroTime` → RFC 3339 in UTC with exactly six fractional digits.
//!
//! Parsing accepts what Go's `time.Parse(time.RFC3339, …)` accepts (offsets, fractional
//! seconds), converted to UTC. `metav1.Duration` is `opkit_apimachinery::Duration`'s string form
//! (`time.Duration.String()`: `1h0m0s`, `1.5s`, `300ms`).

const SECS_PER_DAY: i64 = 86_400;
const NANOS_PER_SEC: i64 = 1_000_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Formats Unix `seconds` (+ `nanos`) as RFC 3339 in UTC; with `micros`, six fractional
/// digits are written (truncated, as Go does). `None` outside years 0000–9999, which Go's
/// JSON marshaller refuses as well.
pub(crate) fn format_rfc3339(seconds: i64, nanos: i64, micros: bool) -> Option<String> {
    let seconds = seconds.checked_add(nanos.div_euclid(NANOS_PER_SEC))?;
    let nanos = nanos.rem_euclid(NANOS_PER_SEC);
    let days = seconds.div_euclid(SECS_PER_DAY);
    let sod = seconds.rem_euclid(SECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return None;
    }
    let (h, m, s) = (sod / 3600, sod / 60 % 60, sod % 60);
    Some(if micros {
        format!(
            "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:06}Z",
            nanos / 1000
        )
    } else {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
    })
}

/// Parses RFC 3339 (`2024-01-02T03:04:05Z`, `…05.123+02:00`) into Unix (seconds, nanos).
pub(crate) fn parse_rfc3339(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = b.get(range)?;
        digits.iter().try_fold(0u32, |acc, &d| {
            d.is_ascii_digit().then(|| acc * 10 + u32::from(d - b'0'))
        })
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let year = i64::from(num(0..4)?);
    let month = num(5..7)?;
    let day = num(8..10)?;
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut i = 19;
    let mut nanos: i64 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 9 {
                nanos = nanos * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = i64::from(oh * 3600 + om * 60);
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * SECS_PER_DAY
        + i64::from(hour * 3600 + minute * 60 + second)
        - offset;
    Some((secs, nanos as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        let t = parse_rfc3339("2024-01-02T03:04:05Z");
        assert_eq!(t, Some((1_704_164_645, 0)));
        assert_eq!(
            format_rfc3339(1_704_164_645, 0, false).as_deref(),
            Some("2024-01-02T03:04:05Z")
        );
        assert_eq!(
            format_rfc3339(1_704_164_645, 123_456_789, true).as_deref(),
            Some("2024-01-02T03:04:05.123456Z")
        );
        assert_eq!(
            parse_rfc3339("2024-01-02T05:04:05.5+02:00"),
            Some((1_704_164_645, 500_000_000))
        );
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(
            format_rfc3339(-62_135_596_800, 0, false).as_deref(),
            Some("0001-01-01T00:00:00Z")
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00Z").map(|t| t.0 % 86_400),
            Some(0)
        );
    }

    #[test]
    fn bad_times_are_rejected() {
        for bad in [
            "",
            "2024-01-02",
            "2024-13-02T03:04:05Z",
            "2023-02-29T03:04:05Z",
            "2024-01-02T24:04:05Z",
            "2024-01-02T03:04:05",
            "2024-01-02T03:04:05.Z",
            "2024-01-02T03:04:05+0200",
            "2024-01-02T03:04:05Zjunk",
            "２024-01-02T03:04:05Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        assert_eq!(format_rfc3339(i64::MAX, 0, false), None);
        assert_eq!(format_rfc3339(i64::MIN / 2, 0, true), None);
    }
}
