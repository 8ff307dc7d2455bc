//! Text forms of the time types, as Go's `encoding/json` writes them for Kubernetes objects.
//!
//! * `metav1.Time` → `time.RFC3339` in UTC, second precision (`2024-01-02T03:04:05Z`).
//! * `metav1.MicroTime` → RFC 3339 in UTC with exactly six fractional digits.
//! * `metav1.Duration` → `time.Duration.String()` (`1h0m0s`, `1.5s`, `300ms`).
//!
//! Parsing accepts what Go's `time.Parse(time.RFC3339, …)` and `time.ParseDuration` accept
//! (offsets, fractional seconds, `µs`/`us`), converted to UTC.

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

/// Formats nanoseconds like Go's `time.Duration.String()`.
pub(crate) fn format_duration(d: i64) -> String {
    if d == 0 {
        return "0s".to_string();
    }
    let sign = if d < 0 { "-" } else { "" };
    let u = d.unsigned_abs();
    // Integer part and trimmed fraction of `v / 10^prec`.
    let frac = |v: u64, prec: u32| -> String {
        let p = 10u64.pow(prec);
        let (int, rem) = (v / p, v % p);
        if rem == 0 {
            int.to_string()
        } else {
            let digits = format!("{rem:0width$}", width = prec as usize);
            format!("{int}.{}", digits.trim_end_matches('0'))
        }
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", frac(u, 3));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", frac(u, 6));
    }
    let secs = u / 1_000_000_000;
    let sub = u % 1_000_000_000;
    let mut out = format!("{}s", frac((secs % 60) * 1_000_000_000 + sub, 9));
    let mins = secs / 60;
    if mins > 0 {
        out = format!("{}m{out}", mins % 60);
        let hours = mins / 60;
        if hours > 0 {
            out = format!("{hours}h{out}");
        }
    }
    format!("{sign}{out}")
}

/// Parses a Go duration string (`1h2m3.5s`, `-300ms`, `0`) into nanoseconds.
pub(crate) fn parse_duration(text: &str) -> Option<i64> {
    let (neg, mut rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let int: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().ok()?
        };
        total = total.checked_add(int.checked_mul(scale)?)?;
        if !frac_part.is_empty() {
            let digits = &frac_part[..frac_part.len().min(18)];
            let f: u128 = digits.parse().ok()?;
            total = total.checked_add(f * scale / 10u128.pow(digits.len() as u32))?;
        }
        if total > 1u128 << 63 {
            return None;
        }
        rest = after;
    }
    if neg {
        i64::try_from(-(total as i128)).ok()
    } else {
        i64::try_from(total).ok()
    }
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

    #[test]
    fn durations_match_go() {
        for (ns, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            assert_eq!(format_duration(ns), s);
            assert_eq!(parse_duration(s), Some(ns), "{s}");
        }
        assert_eq!(parse_duration("1.5h"), Some(5_400_000_000_000));
        assert_eq!(parse_duration("2us"), Some(2_000));
        assert_eq!(parse_duration("0"), Some(0));
        assert_eq!(format_duration(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(parse_duration("-2562047h47m16.854775808s"), Some(i64::MIN));
        for bad in [
            "",
            "1",
            "h",
            "1x",
            "--1s",
            "1.s.",
            "99999999999999999999h",
            ".",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
