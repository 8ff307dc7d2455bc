//! Cron schedules as CronJobs use them: five fields (minute, hour, day of month, month, day
//! of week) with `*`, lists, ranges, steps and names, the `@hourly`-style macros, and upstream's
//! rule that a restricted day-of-month and day-of-week match when either does. Times are
//! computed in a time zone with jiff.

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    days_restricted: bool,
    weekdays_restricted: bool,
}

/// A schedule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable schedule {schedule:?}: {reason}")]
pub struct ParseError {
    schedule: String,
    reason: String,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn field(
    spec: &str,
    min: u32,
    max: u32,
    names: &[&str],
    names_from: u32,
) -> Result<(u64, bool), String> {
    let value = |s: &str| -> Result<u32, String> {
        let lower = s.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(names_from + i as u32);
        }
        s.parse::<u32>()
            .map_err(|_| format!("{s:?} is not a number"))
    };
    let mut bits = 0u64;
    let restricted = !(spec == "*" || spec == "?");
    for part in spec.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().map_err(|_| format!("bad step {s:?}"))?),
            None => (part, 1),
        };
        if step == 0 {
            return Err("a step of 0".into());
        }
        let (lo, hi) = if range == "*" || range == "?" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            (v, if part.contains('/') { max } else { v })
        };
        if lo < min || hi > max || lo > hi {
            return Err(format!("{part:?} is out of range {min}-{max}"));
        }
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, restricted))
}

impl Schedule {
    /// Parses a schedule.
    pub fn parse(s: &str) -> Result<Schedule, ParseError> {
        let err = |reason: String| ParseError {
            schedule: s.to_string(),
            reason,
        };
        let expanded = match s.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(err(format!("expected 5 fields, found {}", fields.len())));
        }
        let (minutes, _) = field(fields[0], 0, 59, &[], 0).map_err(err)?;
        let (hours, _) = field(fields[1], 0, 23, &[], 0).map_err(err)?;
        let (days, days_restricted) = field(fields[2], 1, 31, &[], 0).map_err(err)?;
        let (months, _) = field(fields[3], 1, 12, &MONTHS, 1).map_err(err)?;
        let (mut weekdays, weekdays_restricted) =
            field(fields[4], 0, 7, &WEEKDAYS, 0).map_err(err)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays | 1) & !(1 << 7);
        }
        Ok(Schedule {
            minutes,
            hours,
            days,
            months,
            weekdays,
            days_restricted,
            weekdays_restricted,
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let dom = self.days & (1 << date.day()) != 0;
        let dow = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.days_restricted && self.weekdays_restricted {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The first scheduled time strictly after `after`, in `tz`.
    pub fn next(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let start = after.to_zoned(tz.clone()).datetime();
        let mut t: DateTime = start
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(1.minute())
            .ok()?;
        for _ in 0..200_000 {
            if self.months & (1 << t.month()) == 0 {
                t = t
                    .first_of_month()
                    .checked_add(1.month())
                    .ok()?
                    .start_of_day();
                continue;
            }
            if !self.day_matches(t.date()) {
                t = t
                    .date()
                    .checked_add(1.day())
                    .ok()?
                    .to_datetime(jiff::civil::Time::midnight());
                continue;
            }
            if self.hours & (1 << t.hour()) == 0 {
                t = t
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
                continue;
            }
            if self.minutes & (1 << t.minute()) == 0 {
                t = t.checked_add(1.minute()).ok()?;
                continue;
            }
            let ts = t.to_zoned(tz.clone()).ok()?.timestamp();
            if ts > after {
                return Some(ts);
            }
            t = t.checked_add(1.minute()).ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn every_minute_is_the_next_minute() {
        let s = Schedule::parse("* * * * *").unwrap();
        assert_eq!(
            s.next(ts("2024-01-01T10:00:30Z"), &TimeZone::UTC),
            Some(ts("2024-01-01T10:01:00Z"))
        );
        assert_eq!(
            s.next(ts("2024-01-01T10:01:00Z"), &TimeZone::UTC),
            Some(ts("2024-01-01T10:02:00Z"))
        );
    }

    #[test]
    fn steps_ranges_names_and_macros() {
        let s = Schedule::parse("*/15 9-17 * * mon-fri").unwrap();
        // 2024-01-06 is a Saturday.
        assert_eq!(
            s.next(ts("2024-01-06T12:00:00Z"), &TimeZone::UTC),
            Some(ts("2024-01-08T09:00:00Z"))
        );
        let h = Schedule::parse("@hourly").unwrap();
        assert_eq!(
            h.next(ts("2024-01-01T10:20:00Z"), &TimeZone::UTC),
            Some(ts("2024-01-01T11:00:00Z"))
        );
        let m = Schedule::parse("0 0 1 jan *").unwrap();
        assert_eq!(
            m.next(ts("2024-03-01T00:00:00Z"), &TimeZone::UTC),
            Some(ts("2025-01-01T00:00:00Z"))
        );
        assert!(Schedule::parse("* * *").is_err());
        assert!(Schedule::parse("61 * * * *").is_err());
    }

    #[test]
    fn time_zones_shift_the_schedule() {
        let tz = TimeZone::get("Europe/Paris").unwrap();
        let s = Schedule::parse("0 9 * * *").unwrap();
        assert_eq!(
            s.next(ts("2024-01-01T00:00:00Z"), &tz),
            Some(ts("2024-01-01T08:00:00Z"))
        );
    }

    #[test]
    fn sunday_is_zero_or_seven() {
        let s = Schedule::parse("0 0 * * 7").unwrap();
        // 2024-01-07 is a Sunday.
        assert_eq!(
            s.next(ts("2024-01-03T00:00:00Z"), &TimeZone::UTC),
            Some(ts("2024-01-07T00:00:00Z"))
        );
    }
}
