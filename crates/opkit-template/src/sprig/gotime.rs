//! Go's `time.Time` as a template value: an instant (Unix seconds and nanoseconds), the
//! location it is shown in, and the monotonic clock reading `time.Now` attaches. Sprig's
//! date functions make and take these; templates print them (`%v` is Go's `Time.String`,
//! `2006-01-02 15:04:05.999999999 -0700 MST m=+0.000000001`) and call their methods
//! (`.Unix`, `.Format`, `.Year`, …). Time zones come from the system's tz database when it
//! has one and from the tz data jiff embeds otherwise, as Go's `LoadLocation` falls back to
//! its own copy.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use jiff::tz::TimeZone;

use super::golayout;
use crate::ParamType::String as Str;
use crate::{Function, Member, Object, Value};

/// A location: Go's `*time.Location`.
#[derive(Clone)]
pub(crate) enum Zone {
    /// `time.UTC`.
    Utc,
    /// A location from the tz database (`Local` is the system's).
    Tz(TimeZone),
    /// `time.FixedZone(name, offset)`.
    Fixed { name: String, offset: i32 },
}

impl Zone {
    /// Go's `time.LoadLocation`: `""` and `"UTC"` are UTC, `"Local"` the system's zone,
    /// other names come from the tz database; `None` when Go fails.
    pub(crate) fn load(name: &str) -> Option<Zone> {
        match name {
            "" | "UTC" => Some(Zone::Utc),
            "Local" => Some(Zone::local()),
            _ if name.contains("..") || name.starts_with(['/', '\\']) => None,
            _ => TimeZone::get(name).ok().map(Zone::Tz),
        }
    }

    /// `time.Local`: the `TZ` variable's zone, else the system's (`/etc/localtime`).
    pub(crate) fn local() -> Zone {
        static LOCAL: OnceLock<Zone> = OnceLock::new();
        LOCAL
            .get_or_init(|| match std::env::var("TZ") {
                Ok(tz) if tz.is_empty() || tz == "UTC" => Zone::Utc,
                _ => Zone::Tz(TimeZone::try_system().unwrap_or(TimeZone::UTC)),
            })
            .clone()
    }

    /// The abbreviation and the offset east of UTC in seconds in force at `unix`.
    pub(crate) fn lookup(&self, unix: i64) -> (String, i32) {
        match self {
            Zone::Utc => ("UTC".into(), 0),
            Zone::Fixed { name, offset } => (name.clone(), *offset),
            Zone::Tz(tz) => {
                let ts = jiff::Timestamp::from_second(unix.clamp(
                    jiff::Timestamp::MIN.as_second(),
                    jiff::Timestamp::MAX.as_second(),
                ))
                .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
                let info = tz.to_offset_info(ts);
                (info.abbreviation().to_string(), info.offset().seconds())
            }
        }
    }
}

/// The Unix second of 0001-01-01T00:00:00Z, Go's zero `Time`.
const ZERO_UNIX: i64 = -62_135_596_800;

/// A Go `time.Time`.
#[derive(Clone)]
pub(crate) struct GoTime {
    pub(crate) unix: i64,
    pub(crate) nsec: u32,
    pub(crate) zone: Zone,
    /// Nanoseconds since the process's clock origin, for times from `time.Now`.
    pub(crate) mono: Option<i64>,
}

/// When this process's monotonic clock readings start (Go counts from process start).
fn mono_origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl GoTime {
    /// `time.Now()`: the wall clock in the local zone, with a monotonic reading.
    pub(crate) fn now() -> GoTime {
        let origin = mono_origin();
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        GoTime {
            unix: since.as_secs() as i64,
            nsec: since.subsec_nanos(),
            zone: Zone::local(),
            mono: Some(origin.elapsed().as_nanos() as i64 + 1),
        }
    }

    /// `time.Unix(sec, 0)`, in the local zone.
    pub(crate) fn unix(sec: i64) -> GoTime {
        GoTime {
            unix: sec,
            nsec: 0,
            zone: Zone::local(),
            mono: None,
        }
    }

    /// Go's zero `Time` (`0001-01-01 00:00:00 +0000 UTC`).
    pub(crate) fn zero() -> GoTime {
        GoTime {
            unix: ZERO_UNIX,
            nsec: 0,
            zone: Zone::Utc,
            mono: None,
        }
    }

    /// `t.In(zone)`.
    pub(crate) fn in_zone(&self, zone: Zone) -> GoTime {
        GoTime {
            zone,
            ..self.clone()
        }
    }

    /// `t.Add(d)` for `d` nanoseconds.
    pub(crate) fn add(&self, d: i64) -> GoTime {
        let total = i128::from(self.nsec) + i128::from(d % 1_000_000_000);
        let carry = total.div_euclid(1_000_000_000) as i64;
        GoTime {
            unix: self
                .unix
                .saturating_add(d / 1_000_000_000)
                .saturating_add(carry),
            nsec: total.rem_euclid(1_000_000_000) as u32,
            zone: self.zone.clone(),
            mono: self.mono.map(|m| m.saturating_add(d)),
        }
    }

    /// `time.Since(t)` in nanoseconds, saturating as Go's `Sub` does.
    pub(crate) fn since(&self) -> i64 {
        let now = GoTime::now();
        if let (Some(a), Some(b)) = (now.mono, self.mono) {
            return a.saturating_sub(b);
        }
        let ns = (i128::from(now.unix) - i128::from(self.unix)) * 1_000_000_000
            + i128::from(now.nsec)
            - i128::from(self.nsec);
        ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The civil fields where the time is shown.
    pub(crate) fn civil(&self) -> Civil {
        let (abbrev, offset) = self.zone.lookup(self.unix);
        let local = self.unix.saturating_add(i64::from(offset));
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            yday: (days - days_from_civil(year, 1, 1) + 1) as u32,
            weekday: (days + 4).rem_euclid(7) as u32,
            hour: (secs / 3600) as u32,
            minute: (secs / 60 % 60) as u32,
            second: (secs % 60) as u32,
            nsec: self.nsec,
            offset,
            abbrev,
        }
    }

    /// Go's `Time.String`.
    pub(crate) fn string(&self) -> String {
        let mut s = golayout::format(self, "2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let u = m.unsigned_abs();
            s.push_str(&format!(
                " m={sign}{}.{:09}",
                u / 1_000_000_000,
                u % 1_000_000_000
            ));
        }
        s
    }

    /// A template value holding this time.
    pub(crate) fn value(self) -> Value {
        Value::Object(Arc::new(self))
    }

    /// The time inside a value, if it is one.
    pub(crate) fn of(v: &Value) -> Option<&GoTime> {
        match v {
            Value::Object(o) => {
                let any: &dyn std::any::Any = &**o;
                any.downcast_ref::<GoTime>()
            }
            _ => None,
        }
    }
}

/// A time's calendar and clock fields in its zone.
pub(crate) struct Civil {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) yday: u32,
    /// 0 is Sunday.
    pub(crate) weekday: u32,
    pub(crate) hour: u32,
    pub(crate) minute: u32,
    pub(crate) second: u32,
    pub(crate) nsec: u32,
    pub(crate) offset: i32,
    pub(crate) abbrev: String,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day number (days since 1970-01-01).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

pub(crate) const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Go's `time.Month` and `time.Weekday`: integers that print as names.
struct Named {
    type_name: &'static str,
    name: &'static str,
    n: i64,
}

impl Object for Named {
    fn type_name(&self) -> String {
        self.type_name.into()
    }

    fn member(&self, name: &str) -> Option<Member> {
        let s = self.name;
        (name == "String").then(|| Member::Method(Function::new(&[], move |_| Ok(s.into()))))
    }

    fn format(&self) -> String {
        self.name.into()
    }

    fn underlying(&self) -> Option<Value> {
        Some(Value::Int(self.n))
    }
}

impl Object for GoTime {
    fn type_name(&self) -> String {
        "time.Time".into()
    }

    fn member(&self, name: &str) -> Option<Member> {
        let t = self.clone();
        if name == "Format" {
            return Some(Member::Method(Function::new(&[Str], move |a| {
                Ok(Value::from(golayout::format(&t, super::s(a, 0))))
            })));
        }
        let c = self.civil();
        let value = match name {
            "Unix" => Value::Int64(t.unix),
            "UnixMilli" => Value::Int64(t.unix.wrapping_mul(1000) + i64::from(t.nsec / 1_000_000)),
            "UnixMicro" => Value::Int64(t.unix.wrapping_mul(1_000_000) + i64::from(t.nsec / 1000)),
            "UnixNano" => Value::Int64(t.unix.wrapping_mul(1_000_000_000) + i64::from(t.nsec)),
            "Year" => Value::Int(c.year),
            "YearDay" => Value::Int(i64::from(c.yday)),
            "Day" => Value::Int(i64::from(c.day)),
            "Hour" => Value::Int(i64::from(c.hour)),
            "Minute" => Value::Int(i64::from(c.minute)),
            "Second" => Value::Int(i64::from(c.second)),
            "Nanosecond" => Value::Int(i64::from(c.nsec)),
            "Month" => Value::Object(Arc::new(Named {
                type_name: "time.Month",
                name: MONTHS[c.month as usize - 1],
                n: i64::from(c.month),
            })),
            "Weekday" => Value::Object(Arc::new(Named {
                type_name: "time.Weekday",
                name: WEEKDAYS[c.weekday as usize],
                n: i64::from(c.weekday),
            })),
            "IsZero" => Value::Bool(t.unix == ZERO_UNIX && t.nsec == 0),
            "UTC" => t.in_zone(Zone::Utc).value(),
            "Local" => t.in_zone(Zone::local()).value(),
            "String" => Value::from(t.string()),
            _ => return None,
        };
        Some(Member::Method(Function::new(&[], move |_| {
            Ok(value.clone())
        })))
    }

    fn format(&self) -> String {
        self.string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip_through_day_numbers() {
        for (y, m, d) in [
            (1970, 1, 1),
            (2000, 2, 29),
            (1, 1, 1),
            (-44, 3, 15),
            (9999, 12, 31),
        ] {
            assert_eq!(civil_from_days(days_from_civil(y, m, d)), (y, m, d));
        }
        assert_eq!(days_from_civil(1, 1, 1) * 86_400, ZERO_UNIX);
    }

    #[test]
    fn zero_time_prints_as_go() {
        assert_eq!(GoTime::zero().string(), "0001-01-01 00:00:00 +0000 UTC");
    }
}
