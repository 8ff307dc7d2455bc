//! Go's time layouts (`"2006-01-02T15:04:05Z07:00"`): one tokenizer (Go's `nextStdChunk`)
//! shared by formatting (`Time.Format`) and parsing (`time.ParseInLocation`), with Go's
//! rules and error texts (`parsing time "x" as "2006": cannot parse "x" as "2006"`).

use super::gotime::{Civil, GoTime, MONTHS, WEEKDAYS, Zone, days_from_civil};

/// One element of a layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    TZ,
    Iso8601,
    Iso8601Seconds,
    Iso8601Short,
    Iso8601Colon,
    Iso8601ColonSeconds,
    Num,
    NumSeconds,
    NumShort,
    NumColon,
    NumColonSeconds,
    /// `.000` (digits, separator): trailing zeros kept.
    Frac0(usize, u8),
    /// `.999`: trailing zeros dropped.
    Frac9(usize, u8),
}

impl Std {
    fn is_iso(self) -> bool {
        matches!(
            self,
            Std::Iso8601
                | Std::Iso8601Seconds
                | Std::Iso8601Short
                | Std::Iso8601Colon
                | Std::Iso8601ColonSeconds
        )
    }
}

const ZERO_X: [Std; 6] = [
    Std::ZeroMonth,
    Std::ZeroDay,
    Std::ZeroHour12,
    Std::ZeroMinute,
    Std::ZeroSecond,
    Std::Year,
];

/// Go's `nextStdChunk`: the text before the first element, the element, the rest.
fn next_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let b = layout.as_bytes();
    let at = |i: usize, s: &str| layout.get(i..i + s.len()) == Some(s);
    for i in 0..b.len() {
        let found = |std: Std, len: usize| (&layout[..i], Some(std), &layout[i + len..]);
        match b[i] {
            b'J' if at(i, "Jan") => {
                if at(i, "January") {
                    return found(Std::LongMonth, 7);
                }
                if !b.get(i + 3).is_some_and(u8::is_ascii_lowercase) {
                    return found(Std::Month, 3);
                }
            }
            b'M' if b.len() >= i + 3 => {
                if at(i, "Mon") {
                    if at(i, "Monday") {
                        return found(Std::LongWeekDay, 6);
                    }
                    if !b.get(i + 3).is_some_and(u8::is_ascii_lowercase) {
                        return found(Std::WeekDay, 3);
                    }
                }
                if at(i, "MST") {
                    return found(Std::TZ, 3);
                }
            }
            b'0' => {
                if let Some(c @ b'1'..=b'6') = b.get(i + 1) {
                    return found(ZERO_X[usize::from(c - b'1')], 2);
                }
                if at(i, "002") {
                    return found(Std::ZeroYearDay, 3);
                }
            }
            b'1' => {
                if b.get(i + 1) == Some(&b'5') {
                    return found(Std::Hour, 2);
                }
                return found(Std::NumMonth, 1);
            }
            b'2' => {
                if at(i, "2006") {
                    return found(Std::LongYear, 4);
                }
                return found(Std::Day, 1);
            }
            b'_' => {
                if b.get(i + 1) == Some(&b'2') {
                    if at(i + 1, "2006") {
                        return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
                    }
                    return found(Std::UnderDay, 2);
                }
                if at(i, "__2") {
                    return found(Std::UnderYearDay, 3);
                }
            }
            b'3' => return found(Std::Hour12, 1),
            b'4' => return found(Std::Minute, 1),
            b'5' => return found(Std::Second, 1),
            b'P' if b.get(i + 1) == Some(&b'M') => return found(Std::PM, 2),
            b'p' if b.get(i + 1) == Some(&b'm') => return found(Std::Pm, 2),
            b'-' => {
                for (s, std) in [
                    ("-070000", Std::NumSeconds),
                    ("-07:00:00", Std::NumColonSeconds),
                    ("-0700", Std::Num),
                    ("-07:00", Std::NumColon),
                    ("-07", Std::NumShort),
                ] {
                    if at(i, s) {
                        return found(std, s.len());
                    }
                }
            }
            b'Z' => {
                for (s, std) in [
                    ("Z070000", Std::Iso8601Seconds),
                    ("Z07:00:00", Std::Iso8601ColonSeconds),
                    ("Z0700", Std::Iso8601),
                    ("Z07:00", Std::Iso8601Colon),
                    ("Z07", Std::Iso8601Short),
                ] {
                    if at(i, s) {
                        return found(std, s.len());
                    }
                }
            }
            c @ (b'.' | b',') => {
                if let Some(&ch @ (b'0' | b'9')) = b.get(i + 1) {
                    let mut j = i + 1;
                    while b.get(j) == Some(&ch) {
                        j += 1;
                    }
                    if !b.get(j).is_some_and(u8::is_ascii_digit) {
                        let n = (j - (i + 1)) & 0xfff;
                        let std = if ch == b'0' {
                            Std::Frac0(n, c)
                        } else {
                            Std::Frac9(n, c)
                        };
                        return (&layout[..i], Some(std), &layout[j..]);
                    }
                }
            }
            _ => {}
        }
    }
    (layout, None, "")
}

/// Go's `appendInt`: `x` zero-padded to `width` digits.
fn pad(out: &mut String, x: i64, width: usize) {
    if x < 0 {
        out.push('-');
    }
    out.push_str(&format!("{:0width$}", x.unsigned_abs()));
}

/// Go's `Time.Format`.
pub(crate) fn format(t: &GoTime, layout: &str) -> String {
    let c: Civil = t.civil();
    let mut out = String::with_capacity(layout.len() + 10);
    let mut layout = layout;
    loop {
        let (prefix, std, suffix) = next_chunk(layout);
        out.push_str(prefix);
        let Some(std) = std else { break };
        layout = suffix;
        let hour12 = match c.hour % 12 {
            0 => 12,
            h => h,
        };
        match std {
            Std::Year => pad(&mut out, c.year.abs() % 100, 2),
            Std::LongYear => pad(&mut out, c.year, 4),
            Std::Month => out.push_str(&MONTHS[c.month as usize - 1][..3]),
            Std::LongMonth => out.push_str(MONTHS[c.month as usize - 1]),
            Std::NumMonth => pad(&mut out, i64::from(c.month), 0),
            Std::ZeroMonth => pad(&mut out, i64::from(c.month), 2),
            Std::WeekDay => out.push_str(&WEEKDAYS[c.weekday as usize][..3]),
            Std::LongWeekDay => out.push_str(WEEKDAYS[c.weekday as usize]),
            Std::Day => pad(&mut out, i64::from(c.day), 0),
            Std::UnderDay => {
                if c.day < 10 {
                    out.push(' ');
                }
                pad(&mut out, i64::from(c.day), 0);
            }
            Std::ZeroDay => pad(&mut out, i64::from(c.day), 2),
            Std::UnderYearDay => {
                out.push_str(match c.yday {
                    0..=9 => "  ",
                    10..=99 => " ",
                    _ => "",
                });
                pad(&mut out, i64::from(c.yday), 0);
            }
            Std::ZeroYearDay => pad(&mut out, i64::from(c.yday), 3),
            Std::Hour => pad(&mut out, i64::from(c.hour), 2),
            Std::Hour12 => pad(&mut out, i64::from(hour12), 0),
            Std::ZeroHour12 => pad(&mut out, i64::from(hour12), 2),
            Std::Minute => pad(&mut out, i64::from(c.minute), 0),
            Std::ZeroMinute => pad(&mut out, i64::from(c.minute), 2),
            Std::Second => pad(&mut out, i64::from(c.second), 0),
            Std::ZeroSecond => pad(&mut out, i64::from(c.second), 2),
            Std::PM => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
            Std::Pm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
            Std::TZ if !c.abbrev.is_empty() => out.push_str(&c.abbrev),
            Std::TZ => {
                let zone = c.offset / 60;
                out.push(if zone < 0 { '-' } else { '+' });
                pad(&mut out, i64::from(zone.abs() / 60), 2);
                pad(&mut out, i64::from(zone.abs() % 60), 2);
            }
            Std::Frac0(n, sep) | Std::Frac9(n, sep) => {
                let trim = matches!(std, Std::Frac9(..));
                if trim && (n == 0 || c.nsec == 0) {
                    continue;
                }
                let mut frac = format!("{:09}", c.nsec);
                frac.truncate(n.min(9));
                if trim {
                    frac.truncate(frac.trim_end_matches('0').len());
                    if frac.is_empty() {
                        continue;
                    }
                }
                out.push(char::from(sep));
                out.push_str(&frac);
            }
            zone_std => {
                if c.offset == 0 && zone_std.is_iso() {
                    out.push('Z');
                    continue;
                }
                let abs = c.offset.abs();
                out.push(if c.offset < 0 { '-' } else { '+' });
                pad(&mut out, i64::from(abs / 3600), 2);
                let colon = matches!(
                    zone_std,
                    Std::Iso8601Colon
                        | Std::NumColon
                        | Std::Iso8601ColonSeconds
                        | Std::NumColonSeconds
                );
                if colon {
                    out.push(':');
                }
                if !matches!(zone_std, Std::NumShort | Std::Iso8601Short) {
                    pad(&mut out, i64::from(abs / 60 % 60), 2);
                }
                if matches!(
                    zone_std,
                    Std::Iso8601Seconds
                        | Std::NumSeconds
                        | Std::NumColonSeconds
                        | Std::Iso8601ColonSeconds
                ) {
                    if colon {
                        out.push(':');
                    }
                    pad(&mut out, i64::from(abs % 60), 2);
                }
            }
        }
    }
    out
}

/// Go's `time` package quoting in parse errors: `"` and `\` escaped, bytes outside
/// printable ASCII as `\xNN`.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if !(' '..'\u{80}').contains(&c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
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

/// A `ParseError`'s text.
fn parse_error(layout: &str, value: &str, elem: &str, value_elem: &str, msg: &str) -> String {
    if msg.is_empty() {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(value_elem),
            quote(elem)
        )
    } else {
        format!("parsing time {}{msg}", quote(value))
    }
}

/// Go's `getnum`: one or two digits (`fixed`: exactly two).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let d = |i: usize| {
        b.get(i)
            .filter(|c| c.is_ascii_digit())
            .map(|c| i64::from(c - b'0'))
    };
    let first = d(0)?;
    match d(1) {
        Some(second) => Some((first * 10 + second, &s[2..])),
        None if fixed => None,
        None => Some((first, &s[1..])),
    }
}

/// Go's `getnum3`: one to three digits (`fixed`: exactly three).
fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let n = s.bytes().take(3).take_while(u8::is_ascii_digit).count();
    if n == 0 || (fixed && n != 3) {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// Go's `skip`: removes `prefix` from `value`, runs of spaces matching runs of spaces.
fn skip<'v>(mut value: &'v str, mut prefix: &str) -> Result<&'v str, ()> {
    while let Some(p) = prefix.as_bytes().first() {
        if *p == b' ' {
            if value.as_bytes().first().is_some_and(|c| *c != b' ') {
                return Err(());
            }
            prefix = prefix.trim_start_matches(' ');
            value = value.trim_start_matches(' ');
            continue;
        }
        if value.as_bytes().first() != Some(p) {
            return Err(());
        }
        prefix = &prefix[1..];
        value = &value[1..];
    }
    Ok(value)
}

/// Go's `lookup`: a case-insensitive ASCII prefix from `tab`.
fn lookup<'v>(tab: &[&str], value: &'v str) -> Option<(usize, &'v str)> {
    tab.iter().enumerate().find_map(|(i, name)| {
        let head = value.get(..name.len())?;
        head.eq_ignore_ascii_case(name)
            .then(|| (i, &value[name.len()..]))
    })
}

/// Go's `atoi` on a fixed-width field (optional sign, digits only).
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    Some(if s.starts_with('-') { -n } else { n })
}

/// Go's `parseNanoseconds` of `value[..nbytes]` (separator then digits).
fn parse_nanos(value: &str, nbytes: usize) -> Result<i64, ()> {
    if !value.starts_with(['.', ',']) {
        return Err(());
    }
    let nbytes = nbytes.min(10);
    let mut ns = atoi(value.get(1..nbytes).ok_or(())?).ok_or(())?;
    if ns < 0 {
        return Err(());
    }
    for _ in 0..10 - nbytes {
        ns *= 10;
    }
    Ok(ns)
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start of `value`.
fn parse_time_zone(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if value.starts_with("ChST") || value.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = value.strip_prefix("GMT") {
        return Some(
            3 + if rest.is_empty() {
                0
            } else {
                signed_offset(rest)
            },
        );
    }
    if b[0] == b'+' || b[0] == b'-' {
        return Some(signed_offset(value)).filter(|n| *n > 0);
    }
    let upper = b
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match upper {
        5 if b[4] == b'T' => Some(5),
        4 if b[3] == b'T' || value.starts_with("WITA") => Some(4),
        3 => Some(3),
        _ => None,
    }
}

/// Go's `parseSignedOffset`: the length of `±N` with N ≤ 23, or 0.
fn signed_offset(value: &str) -> usize {
    if !value.starts_with(['+', '-']) {
        return 0;
    }
    let digits = value[1..].bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return 0;
    }
    match value[1..1 + digits].parse::<u64>() {
        Ok(x) if x <= 23 => 1 + digits,
        _ => 0,
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days before the first of `month` in a non-leap year.
fn days_before(month: i64) -> i64 {
    (1..month).map(|m| days_in(m, 1)).sum()
}

/// Go's `time.ParseInLocation(layout, value, loc)` (the local location is `loc`).
pub(crate) fn parse_in(layout: &str, value: &str, loc: &Zone) -> Result<GoTime, String> {
    let (alayout, avalue) = (layout, value);
    let (mut layout, mut value) = (layout, value);
    let mut range_err = "";
    let (mut am, mut pm) = (false, false);
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0i64);
    let mut z: Option<Zone> = None;
    let mut zone_offset: Option<i64> = None;
    let mut zone_name = String::new();
    loop {
        let (prefix, std, suffix) = next_chunk(layout);
        let stdstr = &layout[prefix.len()..layout.len() - suffix.len()];
        value =
            skip(value, prefix).map_err(|()| parse_error(alayout, avalue, prefix, value, ""))?;
        let Some(std) = std else {
            if !value.is_empty() {
                return Err(parse_error(
                    alayout,
                    avalue,
                    "",
                    value,
                    &format!(": extra text: {}", quote(value)),
                ));
            }
            break;
        };
        layout = suffix;
        let hold = value;
        let mut ok = true;
        match std {
            Std::Year => match value.get(..2).and_then(atoi) {
                Some(y) => {
                    value = &value[2..];
                    year = if y >= 69 { y + 1900 } else { y + 2000 };
                }
                None => ok = false,
            },
            Std::LongYear => {
                match value
                    .get(..4)
                    .filter(|p| p.as_bytes()[0].is_ascii_digit())
                    .and_then(atoi)
                {
                    Some(y) => {
                        value = &value[4..];
                        year = y;
                    }
                    None => ok = false,
                }
            }
            Std::Month | Std::LongMonth => {
                let short: Vec<&str> = MONTHS.iter().map(|m| &m[..3]).collect();
                let tab: &[&str] = if std == Std::Month { &short } else { &MONTHS };
                match lookup(tab, value) {
                    Some((i, rest)) => {
                        month = i as i64 + 1;
                        value = rest;
                    }
                    None => ok = false,
                }
            }
            Std::NumMonth | Std::ZeroMonth => match getnum(value, std == Std::ZeroMonth) {
                Some((m, rest)) => {
                    month = m;
                    value = rest;
                    if !(1..=12).contains(&m) {
                        range_err = "month";
                    }
                }
                None => ok = false,
            },
            Std::WeekDay | Std::LongWeekDay => {
                let short: Vec<&str> = WEEKDAYS.iter().map(|d| &d[..3]).collect();
                let tab: &[&str] = if std == Std::WeekDay {
                    &short
                } else {
                    &WEEKDAYS
                };
                match lookup(tab, value) {
                    Some((_, rest)) => value = rest,
                    None => ok = false,
                }
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                if std == Std::UnderDay && value.starts_with(' ') {
                    value = &value[1..];
                }
                match getnum(value, std == Std::ZeroDay) {
                    Some((d, rest)) => {
                        day = d;
                        value = rest;
                    }
                    None => ok = false,
                }
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                for _ in 0..2 {
                    if std == Std::UnderYearDay && value.starts_with(' ') {
                        value = &value[1..];
                    }
                }
                match getnum3(value, std == Std::ZeroYearDay) {
                    Some((d, rest)) => {
                        yday = d;
                        value = rest;
                    }
                    None => ok = false,
                }
            }
            Std::Hour | Std::Hour12 | Std::ZeroHour12 => {
                match getnum(value, std == Std::ZeroHour12) {
                    Some((h, rest)) => {
                        hour = h;
                        value = rest;
                        let limit = if std == Std::Hour { 23 } else { 12 };
                        if h > limit {
                            range_err = "hour";
                        }
                    }
                    None => ok = false,
                }
            }
            Std::Minute | Std::ZeroMinute => match getnum(value, std == Std::ZeroMinute) {
                Some((m, rest)) => {
                    min = m;
                    value = rest;
                    if m >= 60 {
                        range_err = "minute";
                    }
                }
                None => ok = false,
            },
            Std::Second | Std::ZeroSecond => match getnum(value, std == Std::ZeroSecond) {
                Some((s, rest)) => {
                    sec = s;
                    value = rest;
                    if s >= 60 {
                        range_err = "second";
                    } else if value.len() >= 2
                        && value.starts_with(['.', ','])
                        && value.as_bytes()[1].is_ascii_digit()
                        && !matches!(next_chunk(layout).1, Some(Std::Frac0(..) | Std::Frac9(..)))
                    {
                        let n = 2 + value[2..].bytes().take_while(u8::is_ascii_digit).count();
                        match parse_nanos(value, n) {
                            Ok(ns) => nsec = ns,
                            Err(()) => ok = false,
                        }
                        value = &value[n..];
                    }
                }
                None => ok = false,
            },
            Std::PM | Std::Pm => {
                let (up, low) = if std == Std::PM {
                    ("PM", "AM")
                } else {
                    ("pm", "am")
                };
                match value.get(..2) {
                    Some(p) if p == up => pm = true,
                    Some(p) if p == low => am = true,
                    _ => ok = false,
                }
                if ok {
                    value = &value[2..];
                }
            }
            Std::TZ => {
                if let Some(rest) = value.strip_prefix("UTC") {
                    z = Some(Zone::Utc);
                    value = rest;
                } else {
                    match parse_time_zone(value) {
                        Some(n) => {
                            zone_name = value[..n].to_string();
                            value = &value[n..];
                        }
                        None => ok = false,
                    }
                }
            }
            Std::Frac0(n, _) => {
                let ndigit = 1 + n;
                match value.get(..ndigit).map(|_| parse_nanos(value, ndigit)) {
                    Some(Ok(ns)) => {
                        nsec = ns;
                        value = &value[ndigit..];
                    }
                    _ => ok = false,
                }
            }
            Std::Frac9(..) => {
                let b = value.as_bytes();
                if b.len() >= 2 && (b[0] == b'.' || b[0] == b',') && b[1].is_ascii_digit() {
                    let i = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    match parse_nanos(value, 1 + i) {
                        Ok(ns) => nsec = ns,
                        Err(()) => ok = false,
                    }
                    value = &value[1 + i..];
                }
            }
            zone_std => {
                if zone_std.is_iso() && value.starts_with('Z') {
                    value = &value[1..];
                    z = Some(Zone::Utc);
                } else {
                    match parse_offset(zone_std, value) {
                        Some((off, rest, err)) => {
                            zone_offset = Some(off);
                            value = rest;
                            if !err.is_empty() {
                                range_err = err;
                            }
                        }
                        None => ok = false,
                    }
                }
            }
        }
        if !range_err.is_empty() {
            return Err(parse_error(
                alayout,
                avalue,
                stdstr,
                value,
                &format!(": {range_err} out of range"),
            ));
        }
        if !ok {
            return Err(parse_error(alayout, avalue, stdstr, hold, ""));
        }
    }
    if pm && hour < 12 {
        hour += 12;
    } else if am && hour == 12 {
        hour = 0;
    }
    let fail = |msg: &str| Err(parse_error(alayout, avalue, "", value, msg));
    if yday >= 0 {
        let (mut m, mut d) = (0, 0);
        if is_leap(year) {
            if yday == 31 + 29 {
                m = 2;
                d = 29;
            } else if yday > 31 + 29 {
                yday -= 1;
            }
        }
        if !(1..=365).contains(&yday) {
            return fail(": day-of-year out of range");
        }
        if m == 0 {
            m = (yday - 1) / 31 + 1;
            if days_before(m + 1) < yday {
                m += 1;
            }
            d = yday - days_before(m);
        }
        if month >= 0 && month != m {
            return fail(": day-of-year does not match month");
        }
        month = m;
        if day >= 0 && day != d {
            return fail(": day-of-year does not match day");
        }
        day = d;
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }
    if day < 1 || day > days_in(month, year) {
        return fail(": day out of range");
    }
    let wall =
        days_from_civil(year, month as u32, day as u32) * 86_400 + hour * 3600 + min * 60 + sec;
    let at = |unix: i64, zone: Zone| GoTime {
        unix,
        nsec: nsec as u32,
        zone,
        mono: None,
    };
    if let Some(zone) = z {
        return Ok(at(wall, zone));
    }
    if let Some(off) = zone_offset {
        let unix = wall - off;
        let (name, local_off) = loc.lookup(unix);
        if i64::from(local_off) == off && (zone_name.is_empty() || name == zone_name) {
            return Ok(at(unix, loc.clone()));
        }
        return Ok(at(
            unix,
            Zone::Fixed {
                name: zone_name,
                offset: off as i32,
            },
        ));
    }
    if !zone_name.is_empty() {
        let (name, off) = loc.lookup(wall);
        if name == zone_name {
            return Ok(at(wall - i64::from(off), loc.clone()));
        }
        let offset = match zone_name.strip_prefix("GMT") {
            Some(n) if !n.is_empty() => atoi(n).unwrap_or(0) * 3600,
            _ => 0,
        };
        return Ok(at(
            wall,
            Zone::Fixed {
                name: zone_name,
                offset: offset as i32,
            },
        ));
    }
    Ok(at(wall - in_zone_offset(loc, wall), loc.clone()))
}

/// The offset to subtract from a wall clock in `zone` to get Unix time (Go's `Date`).
pub(crate) fn in_zone_offset(zone: &Zone, wall: i64) -> i64 {
    let (_, first) = zone.lookup(wall);
    if first == 0 {
        return 0;
    }
    let (_, second) = zone.lookup(wall - i64::from(first));
    i64::from(second)
}

/// A numeric zone offset (`-0700`, `-07:00`, `-07`, …) at the start of `value`: seconds
/// east, the rest, and a range error to report.
fn parse_offset(std: Std, value: &str) -> Option<(i64, &str, &'static str)> {
    let b = value.as_bytes();
    let (sign, h, m, s, rest) = match std {
        Std::Iso8601Colon | Std::NumColon => {
            if b.len() < 6 || b[3] != b':' {
                return None;
            }
            (&value[..1], &value[1..3], &value[4..6], "00", &value[6..])
        }
        Std::NumShort | Std::Iso8601Short => {
            if b.len() < 3 {
                return None;
            }
            (&value[..1], &value[1..3], "00", "00", &value[3..])
        }
        Std::Iso8601ColonSeconds | Std::NumColonSeconds => {
            if b.len() < 9 || b[3] != b':' || b[6] != b':' {
                return None;
            }
            (
                &value[..1],
                &value[1..3],
                &value[4..6],
                &value[7..9],
                &value[9..],
            )
        }
        Std::Iso8601Seconds | Std::NumSeconds => {
            if b.len() < 7 {
                return None;
            }
            (
                &value[..1],
                &value[1..3],
                &value[3..5],
                &value[5..7],
                &value[7..],
            )
        }
        _ => {
            if b.len() < 5 {
                return None;
            }
            (&value[..1], &value[1..3], &value[3..5], "00", &value[5..])
        }
    };
    let hr = getnum(h, true)?.0;
    let mm = getnum(m, true)?.0;
    let ss = getnum(s, true)?.0;
    let mut err = "";
    if hr > 24 {
        err = "time zone offset hour";
    }
    if mm > 60 {
        err = "time zone offset minute";
    }
    if ss > 60 {
        err = "time zone offset second";
    }
    let off = (hr * 60 + mm) * 60 + ss;
    match sign {
        "+" => Some((off, rest, err)),
        "-" => Some((-off, rest, err)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(unix: i64, nsec: u32) -> GoTime {
        GoTime {
            unix,
            nsec,
            zone: Zone::Utc,
            mono: None,
        }
    }

    #[test]
    fn reference_layouts_format_as_go() {
        let t = utc(1_136_239_445, 123_456_000);
        assert_eq!(
            format(&t, "2006-01-02T15:04:05Z07:00"),
            "2006-01-02T22:04:05Z"
        );
        assert_eq!(
            format(&t, "Mon Jan _2 15:04:05 MST 2006"),
            "Mon Jan  2 22:04:05 UTC 2006"
        );
        assert_eq!(
            format(&t, "3:04PM .000 .999999 ,99"),
            "10:04PM .123 .123456 ,12"
        );
        assert_eq!(format(&t, "__2 002 -07:00:00 Z07"), "  2 002 +00:00:00 Z");
        let fixed = t.in_zone(Zone::Fixed {
            name: String::new(),
            offset: -(7 * 3600 + 30 * 60),
        });
        assert_eq!(
            format(&fixed, "15:04 MST -0700 Z07:00"),
            "14:34 -0730 -0730 -07:30"
        );
    }

    #[test]
    fn parsing_reads_what_formatting_writes() {
        let t = parse_in(
            "2006-01-02T15:04:05.999Z07:00",
            "2024-02-29T10:11:12.5+05:30",
            &Zone::Utc,
        )
        .expect("valid");
        assert_eq!(t.unix, 1_709_181_672);
        assert_eq!(t.nsec, 500_000_000);
        assert_eq!(
            format(&t, "2006-01-02 15:04:05.000 -0700"),
            "2024-02-29 10:11:12.500 +0530"
        );
    }

    #[test]
    fn parse_errors_read_as_go() {
        let err = |l: &str, v: &str| parse_in(l, v, &Zone::Utc).err().expect("an error");
        assert_eq!(
            err("2006-01-02", "2024-13-01"),
            r#"parsing time "2024-13-01": month out of range"#
        );
        assert_eq!(
            err("2006-01-02", "x"),
            r#"parsing time "x" as "2006-01-02": cannot parse "x" as "2006""#
        );
        assert_eq!(
            err("2006-01-02", "2023-02-29"),
            r#"parsing time "2023-02-29": day out of range"#
        );
        assert_eq!(
            err("2006", "2024 "),
            r#"parsing time "2024 ": extra text: " ""#
        );
    }
}
