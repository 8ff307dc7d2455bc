//! Go's `time.Duration`, as Kubernetes writes durations: `metav1.Duration`
//! fields (`"1h30m0s"` in JSON), `?timeout=30s` query parameters,
//! `format: duration` strings in CRD schemas, command-line flags.
//!
//! [`Duration`] is a signed count of nanoseconds like Go's. It parses exactly
//! what `time.ParseDuration` accepts (an optional sign, then one or more
//! decimal numbers, each with an optional fraction and a unit: `ns`, `us`,
//! `µs` (U+00B5), `μs` (U+03BC), `ms`, `s`, `m`, `h`; `0` alone is zero), with
//! Go's error messages, and prints like `Duration.String()` (`1h30m0s`,
//! `1.5s`, `300ms`, `2µs`, `0s`). Serde reads and writes that string form.
//!
//! One deliberate difference: Go's parser wraps around when a duration adds
//! up to exactly 2⁶³ nanoseconds twice (`9223372036854775808ns` written
//! twice parses as `0s`); here that is an overflow error like every other.

use std::fmt;
use std::str::FromStr;

const MICROSECOND: u64 = 1_000;
const MILLISECOND: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// 2⁶³: the magnitude of the most negative duration.
const LIMIT: u64 = 1 << 63;

/// A Go `time.Duration`: signed nanoseconds, about ±292 years.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

/// Why a string is not a Go duration. `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the form `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or out of range.
    #[error("time: invalid duration {}", quote(.input))]
    Invalid {
        /// The text parsed.
        input: String,
    },
    /// A number without a unit (`5`, `1h30`).
    #[error("time: missing unit in duration {}", quote(.input))]
    MissingUnit {
        /// The text parsed.
        input: String,
    },
    /// A unit other than `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`.
    #[error("time: unknown unit {} in duration {}", quote(.unit), quote(.input))]
    UnknownUnit {
        /// The unit found.
        unit: String,
        /// The text parsed.
        input: String,
    },
}

/// Why a duration does not convert between [`Duration`] and
/// [`std::time::Duration`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationRangeError {
    /// `std::time::Duration` cannot be negative.
    #[error("the duration {0} is negative; it must be zero or more")]
    Negative(Duration),
    /// Longer than the longest Go duration.
    #[error("the duration {0:?} is longer than {max}", max = Duration::MAX)]
    TooLong(std::time::Duration),
}

impl Duration {
    /// The zero duration (`0s`).
    pub const ZERO: Duration = Duration(0);
    /// The longest duration, `2562047h47m16.854775807s`.
    pub const MAX: Duration = Duration(i64::MAX);
    /// The most negative duration, `-2562047h47m16.854775808s`.
    pub const MIN: Duration = Duration(i64::MIN);

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Duration {
        Duration(nanos)
    }

    /// The duration in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Parses like Go's `time.ParseDuration`: `300ms`, `-1.5h`, `2h45m`, `0`.
    pub fn parse(s: &str) -> Result<Duration, DurationError> {
        let invalid = || DurationError::Invalid {
            input: s.to_owned(),
        };
        let mut rest = s;
        let mut neg = false;
        if let Some(sign @ ('-' | '+')) = rest.chars().next() {
            neg = sign == '-';
            rest = &rest[1..];
        }
        if rest == "0" {
            return Ok(Duration::ZERO);
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total: u64 = 0;
        while !rest.is_empty() {
            let starts_number = |c: u8| c == b'.' || c.is_ascii_digit();
            if !starts_number(rest.as_bytes()[0]) {
                return Err(invalid());
            }
            let (mut value, int_digits, after) = leading_int(rest).ok_or_else(invalid)?;
            rest = after;
            let (mut fraction, mut scale, mut fraction_digits) = (0, 1.0, 0);
            if let Some(after) = rest.strip_prefix('.') {
                (fraction, scale, fraction_digits, rest) = leading_fraction(after);
            }
            if int_digits == 0 && fraction_digits == 0 {
                // No digits, e.g. `.s` or `-.s`.
                return Err(invalid());
            }
            // The unit runs up to the next number; `.` and digits are ASCII, so
            // this is a character boundary.
            let unit_len = rest.bytes().position(starts_number).unwrap_or(rest.len());
            if unit_len == 0 {
                return Err(DurationError::MissingUnit {
                    input: s.to_owned(),
                });
            }
            let (unit_text, after) = rest.split_at(unit_len);
            rest = after;
            let unit = match unit_text {
                "ns" => 1,
                "us" | "µs" | "μs" => MICROSECOND,
                "ms" => MILLISECOND,
                "s" => SECOND,
                "m" => MINUTE,
                "h" => HOUR,
                _ => {
                    return Err(DurationError::UnknownUnit {
                        unit: unit_text.to_owned(),
                        input: s.to_owned(),
                    });
                }
            };
            if value > LIMIT / unit {
                return Err(invalid());
            }
            value *= unit;
            if fraction > 0 {
                // Go computes the fraction in float64, which is nanosecond-exact
                // for fractions of an hour; the same operations give the same
                // result. `fraction / scale < 1`, so this is below `unit`.
                value += (fraction as f64 * (unit as f64 / scale)) as u64;
                if value > LIMIT {
                    return Err(invalid());
                }
            }
            total = total.checked_add(value).ok_or_else(invalid)?;
            if total > LIMIT {
                return Err(invalid());
            }
        }
        if neg {
            // `total` is at most 2⁶³, whose negation is `i64::MIN`.
            return Ok(Duration(0i64.wrapping_sub(total as i64)));
        }
        i64::try_from(total).map(Duration).map_err(|_| invalid())
    }

    /// Like [`parse`](Self::parse), but a bare unsigned decimal number is a
    /// count of seconds (`2`, `0.5`), as opkit's flags and annotations have
    /// always accepted (kubectl's `--request-timeout` reads a bare integer as
    /// seconds the same way). Errors are those of the text as given.
    pub fn parse_or_seconds(s: &str) -> Result<Duration, DurationError> {
        if !s.is_empty()
            && s.bytes().all(|c| c == b'.' || c.is_ascii_digit())
            && let Ok(d) = Duration::parse(&format!("{s}s"))
        {
            return Ok(d);
        }
        Duration::parse(s)
    }

    /// The `std::time::Duration` of a non-negative duration.
    pub fn to_std(self) -> Result<std::time::Duration, DurationRangeError> {
        std::time::Duration::try_from(self)
    }
}

/// A non-negative Go duration as a `std::time::Duration` (`watches.yaml`'s
/// `reconcilePeriod`, chainsaw's timeouts): Go's parse error or the range error, as text.
pub fn parse_std(s: &str) -> Result<std::time::Duration, String> {
    Duration::parse(s)
        .map_err(|e| e.to_string())?
        .to_std()
        .map_err(|e| e.to_string())
}

/// The value parser of command-line duration flags (clap's `value_parser`): a Go duration
/// (`250ms`, `2s`, `1m30s`, `1h`) or a bare number of seconds; not negative.
pub fn parse_flag(s: &str) -> Result<std::time::Duration, String> {
    Duration::parse_or_seconds(s.trim())
        .map_err(|e| e.to_string())?
        .to_std()
        .map_err(|e| e.to_string())
}

/// Go's `leadingInt`: the leading digits of `s` as a number (`None` above
/// 2⁶³), how many there were, and what follows them.
fn leading_int(s: &str) -> Option<(u64, usize, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    for c in s[..digits].bytes() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, digits, &s[digits..]))
}

/// Go's `leadingFraction`: the leading digits of `s` as `x / scale`, keeping
/// as many digits as fit (the rest are consumed but dropped), how many digits
/// there were, and what follows them.
fn leading_fraction(s: &str) -> (u64, f64, usize, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1.0f64, false);
    for c in s[..digits].bytes() {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, digits, &s[digits..])
}

/// The quoting of Go's `time` package errors: `"` and `\` escaped, control
/// and non-ASCII characters as `\x` escapes of their UTF-8 bytes.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut utf8 = [0u8; 4];
            for b in c.encode_utf8(&mut utf8).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

impl fmt::Display for Duration {
    /// Go's `Duration.String()`: `72h3m0.5s`, `1.5s`, `300ms`, `2µs`, `1ns`,
    /// `0s`; units above hours are never used.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The longest is `-2562047h47m16.854775808s`.
        let mut buf = [0u8; 32];
        let mut w = buf.len();
        let mut u = self.0.unsigned_abs();
        if u < SECOND {
            // Below a second, the unit is the largest that keeps the leading digit non-zero.
            w -= 1;
            buf[w] = b's';
            w -= 1;
            let prec = if u == 0 {
                return f.pad("0s");
            } else if u < MICROSECOND {
                buf[w] = b'n';
                0
            } else if u < MILLISECOND {
                w -= 1;
                buf[w..w + 2].copy_from_slice("µ".as_bytes());
                3
            } else {
                buf[w] = b'm';
                6
            };
            (w, u) = fmt_frac(&mut buf[..w], u, prec);
            w = fmt_int(&mut buf[..w], u);
        } else {
            w -= 1;
            buf[w] = b's';
            (w, u) = fmt_frac(&mut buf[..w], u, 9);
            // `u` is now whole seconds.
            w = fmt_int(&mut buf[..w], u % 60);
            u /= 60;
            if u > 0 {
                w -= 1;
                buf[w] = b'm';
                w = fmt_int(&mut buf[..w], u % 60);
                u /= 60;
                if u > 0 {
                    w -= 1;
                    buf[w] = b'h';
                    w = fmt_int(&mut buf[..w], u);
                }
            }
        }
        if self.0 < 0 {
            w -= 1;
            buf[w] = b'-';
        }
        f.pad(std::str::from_utf8(&buf[w..]).map_err(|_| fmt::Error)?)
    }
}

/// Writes the `prec` low decimal digits of `v` as a fraction (`.5`, trailing
/// zeros and a bare `.` omitted) at the end of `buf`; returns where it
/// starts and `v` without those digits.
fn fmt_frac(buf: &mut [u8], mut v: u64, prec: usize) -> (usize, u64) {
    let mut w = buf.len();
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            w -= 1;
            buf[w] = b'0' + digit;
        }
        v /= 10;
    }
    if print {
        w -= 1;
        buf[w] = b'.';
    }
    (w, v)
}

/// Writes `v` in decimal at the end of `buf`; returns where it starts.
fn fmt_int(buf: &mut [u8], mut v: u64) -> usize {
    let mut w = buf.len();
    loop {
        w -= 1;
        buf[w] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return w;
        }
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

impl TryFrom<Duration> for std::time::Duration {
    type Error = DurationRangeError;

    fn try_from(d: Duration) -> Result<Self, Self::Error> {
        u64::try_from(d.0)
            .map(std::time::Duration::from_nanos)
            .map_err(|_| DurationRangeError::Negative(d))
    }
}

impl TryFrom<std::time::Duration> for Duration {
    type Error = DurationRangeError;

    fn try_from(d: std::time::Duration) -> Result<Self, Self::Error> {
        i64::try_from(d.as_nanos())
            .map(Duration)
            .map_err(|_| DurationRangeError::TooLong(d))
    }
}

impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Duration;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Go duration string such as \"1h30m\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                Duration::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ns(s: &str) -> i64 {
        Duration::parse(s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .as_nanos()
    }

    #[test]
    fn parses_go_examples() {
        // Go's own ParseDuration test table, condensed.
        for (text, want) in [
            ("0", 0),
            ("5s", 5 * SECOND as i64),
            ("30s", 30 * SECOND as i64),
            ("1478s", 1478 * SECOND as i64),
            ("-5s", -5 * SECOND as i64),
            ("+5s", 5 * SECOND as i64),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * SECOND as i64),
            ("5.6s", 5_600_000_000),
            ("5.s", 5 * SECOND as i64),
            (".5s", 500_000_000),
            ("1.0s", SECOND as i64),
            ("1.00s", SECOND as i64),
            ("1.004s", 1_004_000_000),
            ("1.0040s", 1_004_000_000),
            ("100.00100s", 100_001_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("14s", 14 * SECOND as i64),
            ("15m", 15 * MINUTE as i64),
            ("16h", 16 * HOUR as i64),
            ("3h30m", (3 * HOUR + 30 * MINUTE) as i64),
            ("10.5s4m", (4 * MINUTE) as i64 + 10_500_000_000),
            ("-2m3.4s", -((2 * MINUTE) as i64 + 3_400_000_000)),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("39h9m14.425s", 140_954_425_000_000),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * MINUTE as i64),
            ("9007199254740993ns", 9_007_199_254_740_993),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * MINUTE as i64),
            (
                "0.830103483285477580700h",
                (49 * MINUTE + 48 * SECOND) as i64 + 372_539_827,
            ),
            ("300ms", 300_000_000),
            ("-1.5h", -5_400_000_000_000),
            ("2h45m", (2 * HOUR + 45 * MINUTE) as i64),
            ("1h30m", (HOUR + 30 * MINUTE) as i64),
        ] {
            assert_eq!(ns(text), want, "{text}");
        }
    }

    #[test]
    fn refuses_like_go_with_its_messages() {
        for text in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "\u{85}\u{85}",
            "\u{FFFD}",
            "9223372036854775810ns",
            "9223372036854775808ns",
            "-9223372036854775809ns",
            "9223372036854775.808us",
            "9223372036854ms775us808ns",
            "--1s",
            "1h-5m",
            "99999999999999999999h",
            "9223372036854775808ns9223372036854775808ns",
        ] {
            assert!(Duration::parse(text).is_err(), "{text:?} should be refused");
        }
        let msg = |s: &str| Duration::parse(s).unwrap_err().to_string();
        assert_eq!(msg(""), r#"time: invalid duration """#);
        assert_eq!(msg("3"), r#"time: missing unit in duration "3""#);
        assert_eq!(msg("1h30"), r#"time: missing unit in duration "1h30""#);
        assert_eq!(msg("1x"), r#"time: unknown unit "x" in duration "1x""#);
        assert_eq!(msg("1d"), r#"time: unknown unit "d" in duration "1d""#);
        assert_eq!(msg(".s"), r#"time: invalid duration ".s""#);
        assert_eq!(msg("-"), r#"time: invalid duration "-""#);
        assert_eq!(
            msg("9223372036854775808ns"),
            r#"time: invalid duration "9223372036854775808ns""#
        );
        assert_eq!(
            msg("3\u{FFFD}"),
            r#"time: unknown unit "\xef\xbf\xbd" in duration "3\xef\xbf\xbd""#
        );
        assert_eq!(msg("\"1\""), r#"time: invalid duration "\"1\"""#);
        assert_eq!(
            msg("1\ts"),
            r#"time: unknown unit "\x09s" in duration "1\x09s""#
        );
    }

    #[test]
    fn prints_like_go() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_000, "2µs"),
            (2_200_000, "2.2ms"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (3_300_000_000, "3.3s"),
            (60_000_000_000, "1m0s"),
            (4 * MINUTE as i64 + 5 * SECOND as i64, "4m5s"),
            (4 * MINUTE as i64 + 5_001_000_000, "4m5.001s"),
            (
                5 * HOUR as i64 + 6 * MINUTE as i64 + 7_001_000_000,
                "5h6m7.001s",
            ),
            (8 * MINUTE as i64 + 1, "8m0.000000001s"),
            ((HOUR + 30 * MINUTE) as i64, "1h30m0s"),
            (-90 * SECOND as i64, "-1m30s"),
            (-1, "-1ns"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(Duration::from_nanos(nanos).to_string(), text);
        }
        assert_eq!(format!("{:>6}", Duration::ZERO), "    0s");
    }

    #[test]
    fn bare_seconds_are_accepted_only_by_parse_or_seconds() {
        let secs = |s: &str| Duration::parse_or_seconds(s).map(|d| d.as_nanos());
        assert_eq!(secs("2"), Ok(2 * SECOND as i64));
        assert_eq!(secs("0.5"), Ok(500_000_000));
        assert_eq!(secs("0"), Ok(0));
        assert_eq!(secs("1h30m"), Ok((HOUR + 30 * MINUTE) as i64));
        assert_eq!(
            Duration::parse_or_seconds("1..2").unwrap_err().to_string(),
            r#"time: missing unit in duration "1..2""#
        );
        assert!(Duration::parse_or_seconds("-2").is_err());
        assert!(Duration::parse_or_seconds("").is_err());
        assert!(Duration::parse("2").is_err());
    }

    #[test]
    fn converts_to_and_from_std() {
        let d = Duration::parse("1.5s").unwrap();
        assert_eq!(d.to_std(), Ok(std::time::Duration::from_millis(1500)));
        assert_eq!(
            Duration::try_from(std::time::Duration::from_millis(1500)),
            Ok(d)
        );
        let neg = Duration::parse("-1s").unwrap();
        assert_eq!(neg.to_std(), Err(DurationRangeError::Negative(neg)));
        assert_eq!(
            neg.to_std().unwrap_err().to_string(),
            "the duration -1s is negative; it must be zero or more"
        );
        let long = std::time::Duration::from_secs(u64::MAX);
        assert_eq!(
            Duration::try_from(long),
            Err(DurationRangeError::TooLong(long))
        );
        assert_eq!(
            Duration::try_from(std::time::Duration::from_nanos(i64::MAX as u64)),
            Ok(Duration::MAX)
        );
    }

    #[test]
    fn serde_uses_the_string_form() {
        let d: Duration = serde_json::from_str(r#""1h30m""#).unwrap();
        assert_eq!(serde_json::to_string(&d).unwrap(), r#""1h30m0s""#);
        let err = serde_json::from_str::<Duration>(r#""5""#).unwrap_err();
        assert!(err.to_string().contains("missing unit"), "{err}");
        assert!(serde_json::from_str::<Duration>("5").is_err());
    }

    proptest! {
        #[test]
        fn printing_then_parsing_is_the_identity(nanos in any::<i64>()) {
            let d = Duration::from_nanos(nanos);
            prop_assert_eq!(Duration::parse(&d.to_string()), Ok(d));
        }

        #[test]
        fn parsing_never_panics(s in "[-+]?[0-9.]{0,25}(ns|us|µs|μs|ms|s|m|h|x|)[0-9.]{0,5}[a-zµ]{0,2}") {
            let _ = Duration::parse(&s);
            let _ = Duration::parse_or_seconds(&s);
        }
    }
}
