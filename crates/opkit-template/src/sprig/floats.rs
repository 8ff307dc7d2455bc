//! Sprig's decimal float arithmetic (`addf`, `add1f`, `subf`, `mulf`, `divf`): each operand
//! goes through `cast.ToFloat64`, becomes a shopspring/decimal (v1.4) from the float's
//! shortest decimal form, the operation runs exactly on decimals (division rounds half away
//! from zero to 16 places, shopspring's `DivisionPrecision`), and the result is read back as
//! the nearest `float64`. So `addf 0.1 0.2` is `0.3`, not `0.30000000000000004`.

use num_bigint::BigInt;
use num_traits::{Signed, Zero};

use super::conv::to_float64;
use super::{Funcs, R, fail};
use crate::ParamType::Any;
use crate::{FuncError, Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "add1f",
        Function::new(&[Any], |a| fold(&a[0], &[Value::Int(1)], Op::Add)),
    );
    m.add(
        "addf",
        Function::variadic(&[], Any, |a| fold(&Value::Float(0.0), a, Op::Add)),
    );
    for (name, op) in [("subf", Op::Sub), ("mulf", Op::Mul), ("divf", Op::Div)] {
        m.add(
            name,
            Function::variadic(&[Any], Any, move |a| fold(&a[0], &a[1..], op)),
        );
    }
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// Sprig's `execDecimalOp`: `first OP rest[0] OP rest[1] …` on decimals.
fn fold(first: &Value, rest: &[Value], op: Op) -> R {
    let mut acc = Decimal::from_float(to_float64(first))?;
    for v in rest {
        let d = Decimal::from_float(to_float64(v))?;
        acc = match op {
            Op::Add => acc.add(&d),
            Op::Sub => acc.add(&d.neg()),
            Op::Mul => acc.mul(&d),
            Op::Div => acc.div(&d)?,
        };
    }
    Ok(Value::Float(acc.to_float()))
}

/// shopspring's `DivisionPrecision`: digits kept after the point by `Div`.
const DIVISION_PRECISION: i64 = 16;

/// An exact decimal `coef × 10^exp`.
#[derive(Clone, Debug)]
struct Decimal {
    coef: BigInt,
    exp: i64,
}

impl Decimal {
    /// `decimal.NewFromFloat`: the shortest decimal that reads back as `f`; NaN and the
    /// infinities panic in Go with this text.
    fn from_float(f: f64) -> Result<Decimal, FuncError> {
        if !f.is_finite() {
            return fail(format!(
                "Cannot create a Decimal from {}",
                crate::gofmt::sprint_value(&Value::Float(f))
            ));
        }
        // Rust's `{:e}` prints the shortest digits that round-trip, as Go's 'shortest' does.
        let text = format!("{f:e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i64 = exp.parse().unwrap_or(0);
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = format!("{int}{frac}");
        let coef: BigInt = digits.parse().unwrap_or_default();
        Ok(Decimal {
            coef,
            exp: exp - frac.len() as i64,
        })
    }

    fn neg(&self) -> Decimal {
        Decimal {
            coef: -self.coef.clone(),
            exp: self.exp,
        }
    }

    /// Both coefficients at the smaller exponent.
    fn aligned(&self, o: &Decimal) -> (BigInt, BigInt, i64) {
        let exp = self.exp.min(o.exp);
        (
            &self.coef * pow10(self.exp - exp),
            &o.coef * pow10(o.exp - exp),
            exp,
        )
    }

    fn add(&self, o: &Decimal) -> Decimal {
        let (a, b, exp) = self.aligned(o);
        Decimal { coef: a + b, exp }
    }

    fn mul(&self, o: &Decimal) -> Decimal {
        Decimal {
            coef: &self.coef * &o.coef,
            exp: self.exp + o.exp,
        }
    }

    /// shopspring's `Div` (`DivRound` to 16 places, half away from zero).
    fn div(&self, o: &Decimal) -> Result<Decimal, FuncError> {
        if o.coef.is_zero() {
            return fail("decimal division by 0");
        }
        // self / o × 10^16 = (a × 10^(ea - eb + 16)) / b
        let shift = self.exp - o.exp + DIVISION_PRECISION;
        let (num, den) = if shift >= 0 {
            (&self.coef * pow10(shift), o.coef.clone())
        } else {
            (self.coef.clone(), &o.coef * pow10(-shift))
        };
        let q = &num / &den;
        let r = &num - &q * &den;
        let mut coef = q;
        if (r.abs() * 2u8) >= den.abs() {
            if (num.is_negative()) != (den.is_negative()) {
                coef -= 1u8;
            } else {
                coef += 1u8;
            }
        }
        Ok(Decimal {
            coef,
            exp: -DIVISION_PRECISION,
        })
    }

    /// `Decimal.Float64`: the nearest `float64` to the exact value.
    fn to_float(&self) -> f64 {
        format!("{}e{}", self.coef, self.exp)
            .parse()
            .unwrap_or(f64::NAN)
    }
}

fn pow10(n: i64) -> BigInt {
    num_traits::pow(BigInt::from(10u8), n.max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(f: f64) -> Decimal {
        Decimal::from_float(f).expect("finite")
    }

    #[test]
    fn decimal_sums_are_exact_before_rounding_to_float() {
        assert_eq!(d(0.1).add(&d(0.2)).to_float(), 0.3);
        assert_eq!(d(1.1).mul(&d(3.0)).to_float(), 3.3);
        assert_eq!(d(1e300).mul(&d(1e-300)).to_float(), 1.0);
    }

    #[test]
    fn division_rounds_half_away_from_zero_at_sixteen_places() {
        let third = d(1.0).div(&d(3.0)).expect("non-zero");
        assert_eq!(third.coef.to_string(), "3333333333333333");
        let two_thirds = d(-2.0).div(&d(3.0)).expect("non-zero");
        assert_eq!(two_thirds.coef.to_string(), "-6666666666666667");
        assert!(d(1.0).div(&d(0.0)).is_err());
    }
}
