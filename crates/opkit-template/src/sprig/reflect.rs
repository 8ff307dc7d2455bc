//! Sprig's reflection functions: Go's type (`%T`) and kind names of values.

use super::{Funcs, deep_equal, kind_of, s};
use crate::ParamType::{Any, String as Str};
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "typeOf",
        Function::new(&[Any], |a| Ok(Value::from(a[0].type_name()))),
    );
    m.add(
        "typeIs",
        Function::new(&[Str, Any], |a| {
            Ok(Value::Bool(s(a, 0) == a[1].type_name()))
        }),
    );
    m.add(
        "typeIsLike",
        Function::new(&[Str, Any], |a| {
            let t = a[1].type_name();
            Ok(Value::Bool(s(a, 0) == t || format!("*{}", s(a, 0)) == t))
        }),
    );
    m.add(
        "kindOf",
        Function::new(&[Any], |a| Ok(Value::from(kind_of(&a[0])))),
    );
    m.add(
        "kindIs",
        Function::new(&[Str, Any], |a| Ok(Value::Bool(s(a, 0) == kind_of(&a[1])))),
    );
    m.add(
        "deepEqual",
        Function::new(&[Any, Any], |a| Ok(Value::Bool(deep_equal(&a[0], &a[1])))),
    );
}
