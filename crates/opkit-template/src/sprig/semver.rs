//! Sprig's `semverCompare` and `semver` (the version object and its methods) over
//! `opkit-semver`, which holds Masterminds/semver's rules for charts and OLM alike.

use std::cmp::Ordering;
use std::sync::Arc;

use opkit_semver::Version;

use super::{Funcs, fail, s};
use crate::ParamType::String as Str;
use crate::{FuncError, Function, Member, Object, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "semverCompare",
        Function::new(&[Str, Str], |a| {
            opkit_semver::satisfies(s(a, 0), s(a, 1))
                .map(Value::Bool)
                .map_err(semver_error)
        }),
    );
    m.add(
        "semver",
        Function::new(&[Str], |a| {
            let v = Version::parse(s(a, 0)).map_err(semver_error)?;
            Ok(VersionObject::value(v, true))
        }),
    );
}

fn semver_error(e: opkit_semver::Error) -> FuncError {
    FuncError::new(e.to_string())
}

/// Sprig's `semver` result, Go's `*semver.Version` (`pointer`), or the `semver.Version`
/// value its `Inc*`/`Set*` methods return. Both print as the canonical form and have the
/// value methods `Major`, `Minor`, `Patch`, `Prerelease`, `Metadata`, `String`,
/// `IncMajor`, `IncMinor`, `IncPatch`, `SetPrerelease`, `SetMetadata`; only the pointer has
/// `Original` and the comparisons (`Compare`, `LessThan`, `GreaterThan`, `Equal`,
/// `LessThanEqual`, `GreaterThanEqual`), which take a `*semver.Version`.
struct VersionObject {
    v: Version,
    pointer: bool,
}

/// The `*semver.Version` parameter type of the comparison methods.
const VERSION_PTR: crate::ParamType = crate::ParamType::Struct("*semver.Version");

impl VersionObject {
    fn value(v: Version, pointer: bool) -> Value {
        Value::Object(Arc::new(VersionObject { v, pointer }))
    }

    /// The version inside an argument the engine checked to be a `*semver.Version`.
    fn of(v: &Value) -> Option<&Version> {
        super::host::<VersionObject>(v).map(|x| &x.v)
    }
}

impl Object for VersionObject {
    fn type_name(&self) -> String {
        if self.pointer {
            "*semver.Version".into()
        } else {
            "semver.Version".into()
        }
    }

    fn member(&self, name: &str) -> Option<Member> {
        let v = self.v.clone();
        let cmp = |test: fn(Ordering) -> bool| {
            let v = v.clone();
            Member::Method(Function::new(
                &[VERSION_PTR],
                move |a| match VersionObject::of(&a[0]) {
                    Some(o) => Ok(Value::Bool(test(v.compare(o)))),
                    None => fail(super::NIL_DEREF),
                },
            ))
        };
        let set = |field: fn(&Version, &str) -> Result<Version, opkit_semver::Error>| {
            let v = v.clone();
            Member::Method(Function::new(&[Str], move |a| {
                let next = field(&v, s(a, 0)).map_err(semver_error)?;
                Ok(VersionObject::value(next, false))
            }))
        };
        let value = match name {
            "Major" => Value::Int(v.major() as i64),
            "Minor" => Value::Int(v.minor() as i64),
            "Patch" => Value::Int(v.patch() as i64),
            "Prerelease" => Value::from(v.prerelease()),
            "Metadata" => Value::from(v.metadata()),
            "String" => Value::from(v.to_string()),
            "IncMajor" => VersionObject::value(v.inc_major(), false),
            "IncMinor" => VersionObject::value(v.inc_minor(), false),
            "IncPatch" => VersionObject::value(v.inc_patch(), false),
            "SetPrerelease" => return Some(set(Version::set_prerelease)),
            "SetMetadata" => return Some(set(Version::set_metadata)),
            "Original" if self.pointer => Value::from(v.original()),
            "Compare" if self.pointer => {
                return Some(Member::Method(Function::new(&[VERSION_PTR], move |a| {
                    match VersionObject::of(&a[0]) {
                        Some(o) => Ok(Value::Int(v.compare(o) as i64)),
                        None => fail(super::NIL_DEREF),
                    }
                })));
            }
            "LessThan" if self.pointer => return Some(cmp(Ordering::is_lt)),
            "GreaterThan" if self.pointer => return Some(cmp(Ordering::is_gt)),
            "Equal" if self.pointer => return Some(cmp(Ordering::is_eq)),
            "LessThanEqual" if self.pointer => return Some(cmp(Ordering::is_le)),
            "GreaterThanEqual" if self.pointer => return Some(cmp(Ordering::is_ge)),
            _ => return None,
        };
        Some(Member::Method(Function::new(&[], move |_| {
            Ok(value.clone())
        })))
    }

    fn format(&self) -> String {
        self.v.to_string()
    }

    /// Masterminds' `MarshalJSON`: the canonical form as a string.
    fn json(&self) -> Option<Result<Value, String>> {
        Some(Ok(Value::from(self.v.to_string())))
    }
}
