//! Sprig's date functions (`now`, `date`, `dateInZone`, `htmlDate`, `htmlDateInZone`,
//! `dateModify`, `toDate`, `ago`, `unixEpoch` and their `must`/snake-case variants) over
//! Go's `time.Time` ([`GoTime`]), with Sprig 3.3's type rules: `date` and friends take a
//! `time.Time`, an `int`, `int64` or `int32` of Unix seconds and use *now* for anything
//! else (a Helm value, a `float64`, is therefore *now*); an unknown zone falls back to UTC;
//! `dateModify` leaves the time as is when the duration does not parse, `toDate` gives the
//! zero time when the text does not parse; their `must` forms fail with Go's error.

use super::durations::{go_duration, parse_duration};
use super::golayout::{format, parse_in};
use super::gotime::{GoTime, Zone};
use super::{Funcs, fail, s};
use crate::ParamType::{Any, String as Str, Time};
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add("now", Function::new(&[], |_| Ok(GoTime::now().value())));
    m.add(
        "date",
        Function::new(&[Str, Any], |a| Ok(date_in_zone(s(a, 0), &a[1], "Local"))),
    );
    for name in ["dateInZone", "date_in_zone"] {
        m.add(
            name,
            Function::new(&[Str, Any, Str], |a| {
                Ok(date_in_zone(s(a, 0), &a[1], s(a, 2)))
            }),
        );
    }
    m.add(
        "htmlDate",
        Function::new(&[Any], |a| Ok(date_in_zone("2006-01-02", &a[0], "Local"))),
    );
    m.add(
        "htmlDateInZone",
        Function::new(&[Any, Str], |a| {
            Ok(date_in_zone("2006-01-02", &a[0], s(a, 1)))
        }),
    );
    for name in ["dateModify", "date_modify"] {
        m.add(
            name,
            Function::new(&[Str, Time], |a| {
                let t = time(&a[1]);
                Ok(match parse_duration(s(a, 0)) {
                    Ok(d) => t.add(d),
                    Err(_) => t,
                }
                .value())
            }),
        );
    }
    for name in ["mustDateModify", "must_date_modify"] {
        m.add(
            name,
            Function::new(&[Str, Time], |a| match parse_duration(s(a, 0)) {
                Ok(d) => Ok(time(&a[1]).add(d).value()),
                Err(e) => fail(e),
            }),
        );
    }
    m.add(
        "toDate",
        Function::new(&[Str, Str], |a| {
            Ok(parse_in(s(a, 0), s(a, 1), &Zone::local())
                .unwrap_or_else(|_| GoTime::zero())
                .value())
        }),
    );
    m.add(
        "mustToDate",
        Function::new(&[Str, Str], |a| {
            match parse_in(s(a, 0), s(a, 1), &Zone::local()) {
                Ok(t) => Ok(t.value()),
                Err(e) => fail(e),
            }
        }),
    );
    m.add(
        "ago",
        Function::new(&[Any], |a| {
            let t = match &a[0] {
                Value::Int(n) | Value::Int64(n) => GoTime::unix(*n),
                other => GoTime::of(other).cloned().unwrap_or_else(GoTime::now),
            };
            Ok(Value::from(go_duration(round_to_second(t.since()))))
        }),
    );
    m.add(
        "unixEpoch",
        Function::new(&[Time], |a| Ok(Value::from(time(&a[0]).unix.to_string()))),
    );
}

/// The time in an argument the engine checked to be a `time.Time`.
fn time(v: &Value) -> GoTime {
    GoTime::of(v).cloned().unwrap_or_else(GoTime::zero)
}

/// Sprig's `dateInZone`.
fn date_in_zone(layout: &str, date: &Value, zone: &str) -> Value {
    let t = match date {
        Value::Int(n) | Value::Int64(n) => GoTime::unix(*n),
        other => GoTime::of(other).cloned().unwrap_or_else(GoTime::now),
    };
    let zone = Zone::load(zone).unwrap_or(Zone::Utc);
    Value::from(format(&t.in_zone(zone), layout))
}

/// Go's `Duration.Round(time.Second)`: half away from zero, saturating.
fn round_to_second(d: i64) -> i64 {
    const M: i64 = 1_000_000_000;
    let r = (d % M).abs();
    if d < 0 {
        if r + r < M {
            return d + r;
        }
        d.checked_sub(M - r).unwrap_or(i64::MIN)
    } else {
        if r + r < M {
            return d - r;
        }
        d.checked_add(M - r).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_half_away_from_zero() {
        assert_eq!(round_to_second(1_499_999_999), 1_000_000_000);
        assert_eq!(round_to_second(1_500_000_000), 2_000_000_000);
        assert_eq!(round_to_second(-1_500_000_000), -2_000_000_000);
        assert_eq!(round_to_second(-400_000_000), 0);
    }
}
