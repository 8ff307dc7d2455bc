//! Go's `fmt` printing of template values: `%v` of maps, slices and floats, and the
//! `Sprint`/`Sprintln`/`Sprintf` rules `print`, `println` and `printf` follow, including
//! Go's in-band error texts (`%!d(string=x)`, `%!(EXTRA …)`, `%!v(MISSING)`).

use crate::value::Value;

/// `fmt.Sprint(v)` of one value (`%v`).
pub(crate) fn sprint_value(v: &Value) -> String {
    let mut out = String::new();
    print_value(&mut out, v, 'v', &Flags::default(), 0);
    out
}

/// `fmt.Sprint(args...)`: spaces between operands when neither side is a string.
pub(crate) fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    let mut prev_string = false;
    for (i, a) in args.iter().enumerate() {
        let is_string = matches!(a, Value::String(_));
        if i > 0 && !is_string && !prev_string {
            out.push(' ');
        }
        print_value(&mut out, a, 'v', &Flags::default(), 0);
        prev_string = is_string;
    }
    out
}

/// `fmt.Sprintln(args...)`: always spaces, and a final newline.
pub(crate) fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        print_value(&mut out, a, 'v', &Flags::default(), 0);
    }
    out.push('\n');
    out
}

#[derive(Default, Clone, Copy, Debug)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// `fmt.Sprintf(format, args...)`, following Go's `doPrintf`: flags, `[n]` argument
/// indexes, `*` widths and precisions, and the in-band error texts.
pub(crate) fn sprintf(format: &str, args: &[Value]) -> String {
    let f = format.as_bytes();
    let end = f.len();
    let mut out = String::new();
    let mut arg_num = 0usize;
    let mut reordered = false;
    let mut i = 0usize;
    while i < end {
        let mut good_arg_num = true;
        let lasti = i;
        while i < end && f[i] != b'%' {
            i += 1;
        }
        if i > lasti {
            out.push_str(&format[lasti..i]);
        }
        if i >= end {
            break;
        }
        i += 1;
        let mut fl = Flags::default();
        while i < end {
            match f[i] {
                b'#' => fl.sharp = true,
                b'0' => fl.zero = !fl.minus,
                b'+' => fl.plus = true,
                b'-' => {
                    fl.minus = true;
                    fl.zero = false;
                }
                b' ' => fl.space = true,
                _ => break,
            }
            i += 1;
        }
        // An explicit argument index?
        let mut after_index;
        (arg_num, i, after_index) = arg_number(
            arg_num,
            format,
            i,
            args.len(),
            &mut reordered,
            &mut good_arg_num,
        );
        // Width.
        if i < end && f[i] == b'*' {
            i += 1;
            let (w, ok, n) = int_from_arg(args, arg_num);
            arg_num = n;
            if !ok {
                out.push_str("%!(BADWIDTH)");
            } else if w < 0 {
                fl.minus = true;
                fl.zero = false;
                fl.width = Some(w.unsigned_abs() as usize);
            } else {
                fl.width = Some(w as usize);
            }
            after_index = false;
        } else {
            let (w, ni) = parse_num(f, i);
            fl.width = w;
            i = ni;
            if after_index && fl.width.is_some() {
                good_arg_num = false;
            }
        }
        // Precision.
        if i + 1 < end && f[i] == b'.' {
            i += 1;
            if after_index {
                good_arg_num = false;
            }
            (arg_num, i, after_index) = arg_number(
                arg_num,
                format,
                i,
                args.len(),
                &mut reordered,
                &mut good_arg_num,
            );
            if i < end && f[i] == b'*' {
                i += 1;
                let (p, ok, n) = int_from_arg(args, arg_num);
                arg_num = n;
                if ok && p >= 0 {
                    fl.prec = Some(p as usize);
                } else if !ok {
                    out.push_str("%!(BADPREC)");
                }
                after_index = false;
            } else {
                let (p, ni) = parse_num(f, i);
                fl.prec = Some(p.unwrap_or(0));
                i = ni;
            }
        }
        if !after_index {
            (arg_num, i, _) = arg_number(
                arg_num,
                format,
                i,
                args.len(),
                &mut reordered,
                &mut good_arg_num,
            );
        }
        if i >= end {
            out.push_str("%!(NOVERB)");
            break;
        }
        let Some(verb) = format[i..].chars().next() else {
            break;
        };
        i += verb.len_utf8();
        if verb == '%' {
            out.push('%');
        } else if !good_arg_num {
            out.push_str("%!");
            out.push(verb);
            out.push_str("(BADINDEX)");
        } else if arg_num >= args.len() {
            out.push_str("%!");
            out.push(verb);
            out.push_str("(MISSING)");
        } else {
            let arg = &args[arg_num];
            arg_num += 1;
            if verb == 'T' {
                pad(&mut out, &arg.type_name(), &fl);
            } else if verb == 'v' && fl.sharp {
                // %#v: Go syntax.
                let mut g = String::new();
                go_syntax(&mut g, arg, true);
                pad(
                    &mut out,
                    &g,
                    &Flags {
                        sharp: false,
                        plus: false,
                        ..fl
                    },
                );
            } else if verb == 'v' {
                // '+' and '#' mean struct-field and Go syntax with %v, not sign and prefix.
                print_value(
                    &mut out,
                    arg,
                    verb,
                    &Flags {
                        sharp: false,
                        plus: false,
                        ..fl
                    },
                    0,
                );
            } else {
                print_value(&mut out, arg, verb, &fl, 0);
            }
        }
    }
    if !reordered && arg_num < args.len() {
        out.push_str("%!(EXTRA ");
        for (i, a) in args[arg_num..].iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if a.is_nil() {
                out.push_str("<nil>");
            } else {
                out.push_str(&a.type_name());
                out.push('=');
                print_value(&mut out, a, 'v', &Flags::default(), 0);
            }
        }
        out.push(')');
    }
    out
}

/// Go's `parsenum`: a decimal number at `i` (capped at 1e6, as Go refuses larger widths).
fn parse_num(f: &[u8], mut i: usize) -> (Option<usize>, usize) {
    let mut n: Option<usize> = None;
    while i < f.len() && f[i].is_ascii_digit() {
        let v = n.unwrap_or(0) * 10 + usize::from(f[i] - b'0');
        if v > 1_000_000 {
            return (None, f.len());
        }
        n = Some(v);
        i += 1;
    }
    (n, i)
}

/// Go's `argNumber`: an optional `[n]` (one-based) at `i`.
fn arg_number(
    arg_num: usize,
    format: &str,
    i: usize,
    num_args: usize,
    reordered: &mut bool,
    good: &mut bool,
) -> (usize, usize, bool) {
    let f = format.as_bytes();
    if i >= f.len() || f[i] != b'[' {
        return (arg_num, i, false);
    }
    *reordered = true;
    let rest = &f[i..];
    let (index, wid, ok) = if rest.len() < 3 {
        (0usize, 1usize, false)
    } else {
        match rest.iter().position(|b| *b == b']') {
            Some(close) => match parse_num(rest, 1) {
                (Some(n), ni) if ni == close && n >= 1 => (n - 1, close + 1, true),
                (Some(0), ni) if ni == close => (usize::MAX, close + 1, true),
                _ => (0, close + 1, false),
            },
            None => (0, 1, false),
        }
    };
    if ok && index < num_args {
        return (index, i + wid, true);
    }
    *good = false;
    (arg_num, i + wid, ok)
}

/// Go's `intFromArg`: an int argument for `*`.
fn int_from_arg(args: &[Value], arg_num: usize) -> (i64, bool, usize) {
    match args.get(arg_num) {
        Some(Value::Int(n) | Value::Int64(n)) if n.unsigned_abs() <= 1_000_000 => {
            (*n, true, arg_num + 1)
        }
        Some(_) => (0, false, arg_num + 1),
        None => (0, false, arg_num),
    }
}

/// `%#v`: Go-syntax representation.
fn go_syntax(out: &mut String, v: &Value, top: bool) {
    go_syntax_at(out, v, top, 0)
}

fn go_syntax_at(out: &mut String, v: &Value, top: bool, depth: usize) {
    if depth > MAX_PRINT_DEPTH {
        out.push_str("%!v(DEPTH)");
        return;
    }
    match v {
        Value::Nil if top => out.push_str("<nil>"),
        Value::Nil => out.push_str("interface {}(nil)"),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::List(items) => {
            out.push_str("[]interface {}{");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                go_syntax_at(out, item, false, depth + 1);
            }
            out.push('}');
        }
        Value::Map(m) => {
            out.push_str("map[string]interface {}{");
            for (i, (k, val)) in m.entries().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&go_quote(k));
                out.push(':');
                go_syntax_at(out, val, false, depth + 1);
            }
            out.push('}');
        }
        other => print_value(out, other, 'v', &Flags::default(), 0),
    }
}

fn bad_verb(out: &mut String, v: &Value, verb: char) {
    out.push_str("%!");
    out.push(verb);
    out.push('(');
    if v.is_nil() {
        out.push_str("<nil>");
    } else {
        out.push_str(&v.type_name());
        out.push('=');
        print_value(out, v, 'v', &Flags::default(), 0);
    }
    out.push(')');
}

/// How deep printing follows nested maps and lists. Only a map that holds itself (Sprig's
/// `set $d "k" $d`) gets this deep; Go recurses until its stack overflows, here the
/// printing stops with `%!v(DEPTH)`.
pub(crate) const MAX_PRINT_DEPTH: usize = 100;

fn print_value(out: &mut String, v: &Value, verb: char, f: &Flags, depth: usize) {
    if depth > MAX_PRINT_DEPTH {
        out.push_str("%!v(DEPTH)");
        return;
    }
    match v {
        Value::Nil => {
            if depth > 0 || verb == 'v' {
                pad(out, "<nil>", f);
            } else {
                bad_verb(out, v, verb);
            }
        }
        Value::Bool(b) => match verb {
            't' | 'v' => pad(out, if *b { "true" } else { "false" }, f),
            _ => bad_verb(out, v, verb),
        },
        Value::Int(i) | Value::Int64(i) => fmt_integer(out, v, *i, verb, f),
        Value::Float(x) => fmt_float(out, v, *x, verb, f),
        Value::String(s) => fmt_string(out, v, s, verb, f),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_value(out, item, verb, f, depth + 1);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, val)) in m.entries().iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                fmt_string(out, &Value::string(k.as_str()), k, verb, f);
                out.push(':');
                print_value(out, val, verb, f, depth + 1);
            }
            out.push(']');
        }
        Value::Object(o) => match verb {
            'v' | 's' => pad(out, &o.format(), f),
            _ => match o.underlying() {
                Some(u) => print_value(out, &u, verb, f, depth),
                None => bad_verb(out, v, verb),
            },
        },
        Value::Func(func) => match verb {
            'v' | 'p' => pad(out, &func.go_type(), f),
            _ => bad_verb(out, v, verb),
        },
    }
}

/// Pads `s` to the width in runes: spaces on the left (right with `-`), zeros with `0`.
fn pad(out: &mut String, s: &str, f: &Flags) {
    let n = s.chars().count();
    let w = f.width.unwrap_or(0);
    if n >= w {
        out.push_str(s);
        return;
    }
    let fill = if f.zero { '0' } else { ' ' };
    if f.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', w - n));
    } else {
        out.extend(std::iter::repeat_n(fill, w - n));
        out.push_str(s);
    }
}

/// Pads a signed number: zero padding goes between the sign and the digits.
fn pad_number(out: &mut String, sign: &str, body: &str, f: &Flags) {
    let w = f.width.unwrap_or(0);
    let n = sign.chars().count() + body.chars().count();
    if f.zero && !f.minus && n < w {
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', w - n));
        out.push_str(body);
    } else {
        let s = format!("{sign}{body}");
        let nf = Flags { zero: false, ..*f };
        pad(out, &s, &nf);
    }
}

fn fmt_integer(out: &mut String, v: &Value, i: i64, verb: char, f: &Flags) {
    let neg = i < 0;
    let u = i.unsigned_abs();
    let (digits, prefix) = match verb {
        'd' | 'v' => (u.to_string(), ""),
        'b' => (format!("{u:b}"), "0b"),
        'o' => (format!("{u:o}"), "0"),
        'O' => (format!("{u:o}"), "0o"),
        'x' => (format!("{u:x}"), "0x"),
        'X' => (format!("{u:X}"), "0X"),
        'c' => {
            let c = char::from_u32(i as u32).filter(|_| (0..=0x10FFFF).contains(&i));
            pad(out, &c.unwrap_or('\u{FFFD}').to_string(), f);
            return;
        }
        'q' => {
            let c = char::from_u32(i as u32).filter(|_| (0..=0x10FFFF).contains(&i));
            pad(out, &quote_rune(c.unwrap_or('\u{FFFD}')), f);
            return;
        }
        'U' => {
            let s = format!("U+{u:04X}");
            pad(out, &s, f);
            return;
        }
        _ => {
            bad_verb(out, v, verb);
            return;
        }
    };
    let mut body = digits;
    if let Some(p) = f.prec {
        if p == 0 && u == 0 {
            body = String::new();
        } else if body.len() < p {
            body = format!("{}{}", "0".repeat(p - body.len()), body);
        }
    }
    let mut sign = String::new();
    if neg {
        sign.push('-');
    } else if f.plus {
        sign.push('+');
    } else if f.space {
        sign.push(' ');
    }
    if (f.sharp && verb != 'd' && verb != 'v') || verb == 'O' {
        sign.push_str(prefix);
    }
    let zf = Flags {
        zero: f.zero && f.prec.is_none(),
        ..*f
    };
    pad_number(out, &sign, &body, &zf);
}

/// Decimal digits of |x| without trailing zeros and the decimal point position:
/// |x| = 0.d1d2d3… × 10^dp. `sig` rounds to that many significant digits; `None`
/// gives the shortest digits that read back as `x`.
fn decimal_digits(x: f64, sig: Option<usize>) -> (Vec<u8>, i32) {
    let x = x.abs();
    if x == 0.0 {
        return (Vec::new(), 0);
    }
    let s = match sig {
        None => format!("{x:e}"),
        Some(n) => format!("{:.*e}", n.max(1) - 1, x),
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, exp + 1)
}

fn fmt_e(out: &mut String, digits: &[u8], dp: i32, prec: usize, e: char) {
    out.push(digits.first().map(|d| *d as char).unwrap_or('0'));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            out.push(digits.get(i).map(|d| *d as char).unwrap_or('0'));
        }
    }
    out.push(e);
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
}

fn fmt_f(out: &mut String, digits: &[u8], dp: i32, prec: usize) {
    if dp > 0 {
        for i in 0..dp as usize {
            out.push(digits.get(i).map(|d| *d as char).unwrap_or('0'));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 1..=prec as i32 {
            let j = dp + i - 1;
            let c = if j >= 0 {
                digits.get(j as usize).map(|d| *d as char).unwrap_or('0')
            } else {
                '0'
            };
            out.push(c);
        }
    }
}

/// `strconv.FormatFloat(x, fmt, prec, 64)` without the sign; `prec` None is shortest.
fn format_float_abs(x: f64, verb: char, prec: Option<usize>) -> String {
    let mut out = String::new();
    match verb {
        'b' => return format_float_b(x.abs()),
        'x' | 'X' => return format_float_x(x.abs(), verb, prec),
        'e' | 'E' => {
            let (d, dp) = match prec {
                None => decimal_digits(x, None),
                Some(p) => decimal_digits(x, Some(p + 1)),
            };
            let p = prec.unwrap_or(d.len().saturating_sub(1));
            fmt_e(&mut out, &d, dp, p, verb);
        }
        'f' | 'F' => match prec {
            Some(p) => out = format!("{:.*}", p, x.abs()),
            None => {
                let (d, dp) = decimal_digits(x, None);
                let p = (d.len() as i32 - dp).max(0) as usize;
                fmt_f(&mut out, &d, dp, p);
            }
        },
        _ => {
            // 'g' / 'G'
            let shortest = prec.is_none();
            let (d, dp) = match prec {
                None => decimal_digits(x, None),
                Some(p) => decimal_digits(x, Some(p.max(1))),
            };
            let mut p = match prec {
                None => d.len(),
                Some(p) => p.max(1),
            };
            let mut eprec = p as i32;
            if eprec > d.len() as i32 && d.len() as i32 >= dp {
                eprec = d.len() as i32;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            let e = if verb == 'G' { 'E' } else { 'e' };
            if !d.is_empty() && (exp < -4 || exp >= eprec) {
                if p > d.len() {
                    p = d.len();
                }
                fmt_e(&mut out, &d, dp, p.saturating_sub(1), e);
            } else {
                if p as i32 > dp {
                    p = d.len();
                }
                fmt_f(&mut out, &d, dp, (p as i32 - dp).max(0) as usize);
            }
        }
    }
    out
}

/// Mantissa (with the implicit bit) and binary exponent of a finite, non-negative float,
/// as Go's `genericFtoa` takes them apart.
fn float_parts(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u64 << 52;
    }
    (mant, exp - 1023)
}

/// `strconv.FormatFloat(x, 'b', -1, 64)` of |x|: `4503599627370496p-52`.
fn format_float_b(x: f64) -> String {
    let (mant, exp) = float_parts(x);
    let e = exp - 52;
    format!("{mant}p{}{e}", if e >= 0 { "+" } else { "" })
}

/// `strconv.FormatFloat(x, 'x', prec, 64)` of |x|: `0x1.8p+01`.
fn format_float_x(x: f64, verb: char, prec: Option<usize>) -> String {
    let (mut mant, mut exp) = float_parts(x);
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec.filter(|p| *p < 15) {
        let shift = (p * 4) as u32;
        let extra = (mant << shift) & ((1u64 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8; 16] = if verb == 'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::from("0");
    out.push(verb);
    out.push(if (mant >> 60) & 1 == 1 { '1' } else { '0' });
    mant <<= 4;
    let digits = match prec {
        None if mant != 0 => {
            let mut n = 0;
            let mut m = mant;
            while m != 0 {
                n += 1;
                m <<= 4;
            }
            n
        }
        None => 0,
        Some(p) => p,
    };
    if digits > 0 {
        out.push('.');
        for _ in 0..digits {
            out.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    }
    out.push(if verb == 'X' { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
    out
}

/// `%v` of a float64, as Go prints it (`1e+06`, `3.5`, `-0`, `+Inf`).
#[cfg(test)]
fn format_float_v(x: f64) -> String {
    let mut out = String::new();
    fmt_float(&mut out, &Value::Float(x), x, 'v', &Flags::default());
    out
}

fn fmt_float(out: &mut String, v: &Value, x: f64, verb: char, f: &Flags) {
    let verb2 = match verb {
        'v' => 'g',
        'b' | 'x' | 'X' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' => verb,
        _ => {
            bad_verb(out, v, verb);
            return;
        }
    };
    let prec = match verb2 {
        'e' | 'E' | 'f' | 'F' => Some(f.prec.unwrap_or(6)),
        _ => f.prec,
    };
    if x.is_nan() {
        let s = if f.plus {
            "+NaN"
        } else if f.space {
            " NaN"
        } else {
            "NaN"
        };
        pad(out, s, &Flags { zero: false, ..*f });
        return;
    }
    if x.is_infinite() {
        let s = if x < 0.0 {
            "-Inf"
        } else if f.space && !f.plus {
            " Inf"
        } else {
            "+Inf"
        };
        pad(out, s, &Flags { zero: false, ..*f });
        return;
    }
    let mut body = format_float_abs(x, verb2, prec);
    if f.sharp && !body.contains('.') {
        // '#' keeps the decimal point.
        match body.find(['e', 'E']) {
            Some(i) => body.insert(i, '.'),
            None => body.push('.'),
        }
    }
    let sign = if x.is_sign_negative() {
        "-"
    } else if f.plus {
        "+"
    } else if f.space {
        " "
    } else {
        ""
    };
    pad_number(out, sign, &body, f);
}

fn fmt_string(out: &mut String, v: &Value, s: &str, verb: char, f: &Flags) {
    let truncated: String;
    let s = match f.prec {
        Some(p) if verb != 'x' && verb != 'X' => {
            truncated = s.chars().take(p).collect();
            truncated.as_str()
        }
        _ => s,
    };
    match verb {
        'v' | 's' => pad(out, s, f),
        'q' => {
            let q = if f.sharp && can_backquote(s) {
                format!("`{s}`")
            } else {
                go_quote(s)
            };
            pad(out, &q, f);
        }
        'x' | 'X' => {
            let bytes = s.as_bytes();
            let bytes = match f.prec {
                Some(p) if p < bytes.len() => &bytes[..p],
                _ => bytes,
            };
            let mut h = String::new();
            for (i, b) in bytes.iter().enumerate() {
                if f.space && i > 0 {
                    h.push(' ');
                }
                if f.sharp && (f.space || i == 0) {
                    h.push_str(if verb == 'x' { "0x" } else { "0X" });
                }
                if verb == 'x' {
                    h.push_str(&format!("{b:02x}"));
                } else {
                    h.push_str(&format!("{b:02X}"));
                }
            }
            pad(out, &h, f);
        }
        _ => bad_verb(out, v, verb),
    }
}

fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !c.is_control()))
}

fn push_escaped(out: &mut String, c: char, quote: char) {
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        '\\' => out.push_str("\\\\"),
        c if c == quote => {
            out.push('\\');
            out.push(c);
        }
        c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if is_print(c) => out.push(c),
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// An approximation of Go's `unicode.IsPrint` good for the characters templates meet.
pub(crate) fn is_print(c: char) -> bool {
    !(c.is_control()
        || matches!(c as u32, 0x80..=0x9f | 0xad | 0x2028 | 0x2029 | 0xfeff | 0xfff9..=0xfffb)
        || (c.is_whitespace() && c != ' '))
}

/// Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_escaped(&mut out, c, '"');
    }
    out.push('"');
    out
}

fn quote_rune(c: char) -> String {
    let mut out = String::from("'");
    push_escaped(&mut out, c, '\'');
    out.push('\'');
    out
}

/// Go's `%.10q`-style truncation: quote at most `n` runes.
pub(crate) fn go_quote_trunc(s: &str, n: usize) -> String {
    let t: String = s.chars().take(n).collect();
    go_quote(&t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: &str, args: Vec<Value>) -> String {
        sprintf(f, &args)
    }

    #[test]
    fn floats_print_like_go_percent_v() {
        for (x, want) in [
            (1000000.0, "1e+06"),
            (123456.0, "123456"),
            (3.5, "3.5"),
            (-0.0, "-0"),
            (0.0, "0"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (1e21, "1e+21"),
            (123.4, "123.4"),
            (f64::INFINITY, "+Inf"),
            (f64::NAN, "NaN"),
            (17.0, "17"),
            (1e100, "1e+100"),
        ] {
            assert_eq!(format_float_v(x), want, "{x}");
        }
    }

    #[test]
    fn printf_verbs_follow_go() {
        assert_eq!(s("%04x", vec![Value::Int(127)]), "007f");
        assert_eq!(s("%5.2f|", vec![Value::Float(1.23456)]), " 1.23|");
        assert_eq!(s("%-5d|", vec![Value::Int(42)]), "42   |");
        assert_eq!(s("%+d", vec![Value::Int(5)]), "+5");
        assert_eq!(s("%e", vec![Value::Float(1234.5678)]), "1.234568e+03");
        assert_eq!(s("%g", vec![Value::Float(1e6)]), "1e+06");
        assert_eq!(s("%.3g", vec![Value::Float(1234.5678)]), "1.23e+03");
        assert_eq!(s("%g", vec![Value::Float(100000.0)]), "100000");
        assert_eq!(s("%q", vec![Value::from("a\"b\n")]), "\"a\\\"b\\n\"");
        assert_eq!(s("%#q", vec![Value::from("ab")]), "`ab`");
        assert_eq!(s("%x", vec![Value::from("hi")]), "6869");
        assert_eq!(s("%X", vec![Value::Int(255)]), "FF");
        assert_eq!(s("%#x", vec![Value::Int(255)]), "0xff");
        assert_eq!(s("%t", vec![Value::Bool(true)]), "true");
        assert_eq!(s("%T %T", vec![Value::Int(1), Value::Nil]), "int <nil>");
        assert_eq!(s("%d", vec![Value::from("x")]), "%!d(string=x)");
        assert_eq!(s("%s", vec![Value::Int(3)]), "%!s(int=3)");
        assert_eq!(s("%s", vec![Value::Nil]), "%!s(<nil>)");
        assert_eq!(s("%d %d", vec![Value::Int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            s("%d", vec![Value::Int(1), Value::from("a"), Value::Nil]),
            "1%!(EXTRA string=a, <nil>)"
        );
        assert_eq!(s("100%%", vec![]), "100%");
        assert_eq!(s("%", vec![]), "%!(NOVERB)");
        assert_eq!(s("%05s", vec![Value::from("ab")]), "000ab");
        assert_eq!(s("%.2s", vec![Value::from("abcdef")]), "ab");
        assert_eq!(s("%c", vec![Value::Int(65)]), "A");
        assert_eq!(s("%U", vec![Value::Int(65)]), "U+0041");
        assert_eq!(s("%08.3f", vec![Value::Float(-3.5)]), "-003.500");
        assert_eq!(s("%d", vec![Value::Float(17.0)]), "%!d(float64=17)");
        assert_eq!(
            s("%d", vec![Value::list(vec![Value::Int(1), Value::Nil])]),
            "[1 <nil>]"
        );
        assert_eq!(s("%*d", vec![Value::Int(4), Value::Int(7)]), "   7");
    }

    #[test]
    fn printf_argument_indexes_and_v_flags_follow_go() {
        let ab = || vec![Value::from("a"), Value::from("b")];
        assert_eq!(s("%[2]s-%[1]s-%s", ab()), "b-a-b");
        assert_eq!(s("%[1]s %[1]q", ab()), "a \"a\"");
        assert_eq!(s("%[3]s", ab()), "%!s(BADINDEX)");
        assert_eq!(s("%[0]s", ab()), "%!s(BADINDEX)");
        assert_eq!(s("%[x]s", ab()), "%!s(BADINDEX)");
        assert_eq!(s("%[2]*[1]d", vec![Value::Int(7), Value::Int(3)]), "  7");
        assert_eq!(s("%+v %+d", vec![Value::Int(5), Value::Int(5)]), "5 +5");
        assert_eq!(
            s(
                "%#v",
                vec![Value::from_json(
                    &serde_json::json!({"a": [1, "x", null], "b": true})
                )]
            ),
            "map[string]interface {}{\"a\":[]interface {}{1, \"x\", interface {}(nil)}, \"b\":true}"
        );
        assert_eq!(
            s("%#v %#v", vec![Value::from("q"), Value::Nil]),
            "\"q\" <nil>"
        );
    }

    #[test]
    fn float_binary_and_hex_verbs_follow_strconv() {
        assert_eq!(s("%b", vec![Value::Float(1.0)]), "4503599627370496p-52");
        assert_eq!(
            s("%x %X", vec![Value::Float(1.0), Value::Float(-3.0)]),
            "0x1p+00 -0X1.8P+01"
        );
        assert_eq!(s("%x", vec![Value::Float(0.0)]), "0x0p+00");
        assert_eq!(s("%.2x", vec![Value::Float(1.0 / 3.0)]), "0x1.55p-02");
        assert_eq!(s("%x", vec![Value::Float(1e100)]), "0x1.249ad2594c37dp+332");
    }

    #[test]
    fn sprint_spaces_between_non_strings_only() {
        assert_eq!(
            sprint(&[
                Value::Int(1),
                Value::Int(2),
                Value::from("a"),
                Value::Int(3)
            ]),
            "1 2a3"
        );
        assert_eq!(sprint(&[Value::Nil]), "<nil>");
        assert_eq!(sprintln(&[Value::from("a"), Value::from("b")]), "a b\n");
    }
}
