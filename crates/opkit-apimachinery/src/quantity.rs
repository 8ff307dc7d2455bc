//! Resource quantities (`500m`, `1Gi`, `2e3`), as `k8s.io/apimachinery/pkg/api/resource`
//! parses them, reduced to an exact integer of nano units so they can be added and compared
//! (the server needs that to compute a pod's QoS class).

/// A quantity in nano units (`1` = `1n`, `1_000_000_000` = `1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity(pub i128);

impl Quantity {
    /// Parses `<sign><digits>[.<digits>]<suffix>`, the suffix binary (`Ki`…`Ei`), decimal
    /// (`n`, `u`, `m`, none, `k`, `M`…`E`) or an exponent (`e3`, `E-2`). Amounts finer than a
    /// nano round up, as upstream rounds a quantity to its smallest scale. `None` for what
    /// upstream refuses, or for magnitudes too large to hold.
    pub fn parse(s: &str) -> Option<Quantity> {
        let (neg, body) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let num_end = body
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(body.len());
        let (num, suffix) = body.split_at(num_end);
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
            return None;
        }
        let mut mantissa: i128 = 0;
        for c in int_part.bytes().chain(frac_part.bytes()) {
            mantissa = mantissa
                .checked_mul(10)?
                .checked_add(i128::from(c - b'0'))?;
        }
        // value = mantissa * 10^exp10 * 2^exp2
        let mut exp10 = -i32::try_from(frac_part.len()).ok()?;
        let mut exp2 = 0u32;
        match suffix {
            "" => {}
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            "Ki" => exp2 = 10,
            "Mi" => exp2 = 20,
            "Gi" => exp2 = 30,
            "Ti" => exp2 = 40,
            "Pi" => exp2 = 50,
            "Ei" => exp2 = 60,
            e if e.starts_with(['e', 'E']) => exp10 = exp10.checked_add(e[1..].parse().ok()?)?,
            _ => return None,
        }
        let mut v = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
        let shift = exp10.checked_add(9)?;
        if shift >= 0 {
            v = v.checked_mul(10i128.checked_pow(shift.unsigned_abs())?)?;
        } else {
            // Too fine for i128 means below one nano: it rounds up to 1n (or stays 0).
            let d = 10i128
                .checked_pow(shift.unsigned_abs())
                .unwrap_or(i128::MAX);
            v = v / d + i128::from(v % d != 0);
        }
        Some(Quantity(if neg { -v } else { v }))
    }

    /// Whether the quantity is above zero.
    pub fn is_positive(self) -> bool {
        self.0 > 0
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    const ONE: i128 = 1_000_000_000;

    #[test]
    fn decimal_binary_and_exponent_suffixes_parse_exactly() {
        let q = |s| Quantity::parse(s).map(|q| q.0);
        assert_eq!(q("1"), Some(ONE));
        assert_eq!(q("500m"), Some(ONE / 2));
        assert_eq!(q("0.5"), Some(ONE / 2));
        assert_eq!(q("1Ki"), Some(1024 * ONE));
        assert_eq!(q("1Gi"), Some((1 << 30) * ONE));
        assert_eq!(q("1G"), Some(1_000_000_000 * ONE));
        assert_eq!(q("2e3"), Some(2000 * ONE));
        assert_eq!(q("1E-3"), Some(ONE / 1000));
        assert_eq!(q("-1"), Some(-ONE));
        assert_eq!(q(".5"), Some(ONE / 2));
        assert_eq!(q("1n"), Some(1));
        assert_eq!(q("0.1n"), Some(1), "finer than a nano rounds up");
        assert_eq!(Quantity::parse("1024Mi"), Quantity::parse("1Gi"));
    }

    #[test]
    fn malformed_or_huge_quantities_are_refused() {
        for s in [
            "", "m", ".", "1..2", "1.2.3", "1x", "1Kb", "--1", "1e", "9e99999", "1Ei1",
        ] {
            assert_eq!(Quantity::parse(s), None, "{s:?}");
        }
        assert_eq!(Quantity::parse(&"9".repeat(60)), None);
    }
}
