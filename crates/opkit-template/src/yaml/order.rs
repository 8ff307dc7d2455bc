//! go-yaml's map key order (`keyList.Less`): numbers by value, strings character by
//! character with runs of digits compared as numbers (`a2` before `a10`) and letters
//! before other characters; v3 changed one rule (right after a digit, a letter sorts
//! before a digit).

use std::cmp::Ordering;

use super::Yaml;

/// Go's `reflect.Kind` number of a key, which orders keys of different kinds.
fn kind_rank(k: &Yaml) -> u8 {
    match k {
        Yaml::Bool(_) => 1,
        Yaml::Int(_) => 2,
        Yaml::Uint(_) => 11,
        Yaml::Float(_) => 14,
        Yaml::Null => 20,
        Yaml::Map(_) => 21,
        Yaml::Seq(_) => 23,
        Yaml::Str(_) => 24,
    }
}

fn key_number(k: &Yaml) -> Option<f64> {
    match k {
        Yaml::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Yaml::Int(i) => Some(*i as f64),
        Yaml::Uint(u) => Some(*u as f64),
        Yaml::Float(f) => Some(*f),
        _ => None,
    }
}

/// go-yaml's `keyList.Less` as an ordering: numbers by value, strings letter by letter
/// with runs of digits compared as numbers (`a2` before `a10`), letters before other
/// characters.
pub(super) fn key_order(a: &Yaml, b: &Yaml, v3: bool) -> Ordering {
    if less(a, b, v3) {
        Ordering::Less
    } else if less(b, a, v3) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn less(a: &Yaml, b: &Yaml, v3: bool) -> bool {
    let (ak, bk) = (kind_rank(a), kind_rank(b));
    if let (Some(af), Some(bf)) = (key_number(a), key_number(b)) {
        if af != bf {
            return af < bf;
        }
        if ak != bk {
            return ak < bk;
        }
        return match (a, b) {
            (Yaml::Int(x), Yaml::Int(y)) => x < y,
            (Yaml::Uint(x), Yaml::Uint(y)) => x < y,
            (Yaml::Float(x), Yaml::Float(y)) => x < y,
            (Yaml::Bool(x), Yaml::Bool(y)) => !x && *y,
            _ => false,
        };
    }
    let (Yaml::Str(a), Yaml::Str(b)) = (a, b) else {
        return ak < bk;
    };
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    // Whether the last equal character was a digit: v3 then sorts a letter before a digit
    // (`a1b` before `a10`); v2 sorts letters after other characters throughout.
    let mut digits = false;
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            digits = go_is_digit(ar[i]);
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return if v3 && digits { al } else { bl };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && go_is_digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && go_is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit_value(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && go_is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_value(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Go's `unicode.IsDigit` (any decimal digit, not only ASCII). Rust has no test for the
/// `Nd` category alone, so other numeric characters outside ASCII (`½`, `Ⅻ`) count too.
fn go_is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// `int64(r - '0')` as go-yaml computes it, also for non-ASCII digits.
fn digit_value(c: char) -> i64 {
    c as i64 - '0' as i64
}
