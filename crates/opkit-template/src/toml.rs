//! TOML as Helm v4's `toToml` writes it: BurntSushi/toml v1.6.0's encoder over the template
//! value (ported from its `encode.go`): keys sorted bytewise, plain values before tables
//! within each table, nested tables indented by two spaces per level, lists of maps as
//! `[[array.of.tables]]`, other lists inline, floats always with a `.` or exponent (`1.0`,
//! `1e+06`), nil map values left out, a nil inside a list an error.
//!
//! `fromToml` reads with `toml_edit` into what BurntSushi's decoder gives Go: integers
//! `int64`, floats `float64`, tables maps, arrays lists. Differences: date-times are kept as
//! their TOML text (Go has a `time.Time`), and a parse error reads
//! `toml: line N: MESSAGE` with toml_edit's message, not BurntSushi's.

use crate::Value;

const ARRAY_NIL_ELEMENT: &str = "toml: cannot encode array with nil element";
const NO_KEY: &str = "toml: top-level values must be Go maps or structs";
/// How deep a value is followed; only a map that holds itself gets this deep (Go's
/// encoder would recurse until the stack runs out).
const MAX_DEPTH: usize = 100;

/// BurntSushi's classification of a Go value (`tomlTypeOfGo`); `None` for nil.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Scalar,
    Array,
    Table,
    ArrayOfTables,
}

/// Why `toToml` could not write a value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TomlError {
    /// The encoder's error, which Helm's `toToml` prints as its result.
    Encode(String),
    /// Go panics (`toToml nil`), which fails the template.
    Panic(String),
}

/// BurntSushi/toml's `Encoder.Encode(v)`: the TOML text, or why not.
pub(crate) fn to_toml(v: &Value) -> Result<String, TomlError> {
    if v.is_nil() {
        return Err(TomlError::Panic(
            "reflect: call of reflect.Value.Type on zero Value".into(),
        ));
    }
    let mut e = Encoder {
        out: String::new(),
        written: false,
    };
    e.encode(&[], v, 0).map_err(TomlError::Encode)?;
    Ok(e.out)
}

struct Encoder {
    out: String,
    written: bool,
}

fn kind_of(v: &Value, depth: usize) -> Result<Option<Kind>, String> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    Ok(Some(match &*v.plain() {
        Value::Nil => return Ok(None),
        Value::Bool(_) | Value::Int(_) | Value::Int64(_) | Value::Float(_) | Value::String(_) => {
            Kind::Scalar
        }
        Value::Map(_) => Kind::Table,
        Value::List(items) => {
            if items.is_empty() {
                return Ok(Some(Kind::Array));
            }
            let mut all_tables = true;
            for item in items.iter() {
                match kind_of(item, depth + 1)? {
                    None => return Err(ARRAY_NIL_ELEMENT.into()),
                    Some(Kind::Table) => {}
                    Some(_) => all_tables = false,
                }
            }
            if all_tables {
                Kind::ArrayOfTables
            } else {
                Kind::Array
            }
        }
        Value::Object(_) => return Err("toml: unsupported type: ptr".into()),
        Value::Func(_) => return Err("toml: unsupported type: func".into()),
    }))
}

fn too_deep() -> String {
    format!("toml: the value nests deeper than {MAX_DEPTH} levels (a map that holds itself?)")
}

/// BurntSushi's `dblQuotedReplacer`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn bare(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|r| r.is_ascii_alphanumeric() || r == '_' || r == '-')
}

/// `Key.maybeQuoted` of one piece.
fn key_piece(k: &str) -> String {
    if bare(k) { k.to_string() } else { quote(k) }
}

/// `Key.String()`: the dotted path of a table header.
fn key_path(key: &[String]) -> String {
    key.iter()
        .map(|k| key_piece(k))
        .collect::<Vec<_>>()
        .join(".")
}

fn indent(key: &[String]) -> String {
    "  ".repeat(key.len().saturating_sub(1))
}

/// BurntSushi's float text: `%g` shortest, with `.0` added when it has neither a point
/// nor an exponent.
fn float_text(f: f64) -> String {
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f.is_nan() {
        return format!("{sign}nan");
    }
    if f.is_infinite() {
        return format!("{sign}inf");
    }
    let s = crate::gofmt::sprint_value(&Value::Float(f));
    if s.contains(['e', '.']) { s } else { s + ".0" }
}

impl Encoder {
    fn write(&mut self, s: &str) {
        self.out.push_str(s);
        self.written = true;
    }

    fn newline(&mut self) {
        if self.written {
            self.write("\n");
        }
    }

    fn encode(&mut self, key: &[String], v: &Value, depth: usize) -> Result<(), String> {
        match kind_of(v, depth)? {
            None => Ok(()),
            Some(Kind::Scalar | Kind::Array) => self.key_value(key, v, false, depth),
            Some(Kind::ArrayOfTables) => self.array_of_tables(key, v, depth),
            Some(Kind::Table) => {
                if key.len() == 1 {
                    self.newline();
                }
                if !key.is_empty() {
                    let header = format!("{}[{}]", indent(key), key_path(key));
                    self.write(&header);
                    self.newline();
                }
                self.map(key, v, false, depth)
            }
        }
    }

    fn key_value(
        &mut self,
        key: &[String],
        v: &Value,
        inline: bool,
        depth: usize,
    ) -> Result<(), String> {
        let Some(last) = key.last() else {
            return self.element(v, depth);
        };
        let lead = format!("{}{} = ", indent(key), key_piece(last));
        self.write(&lead);
        self.element(v, depth)?;
        if !inline {
            self.newline();
        }
        Ok(())
    }

    fn array_of_tables(&mut self, key: &[String], v: &Value, depth: usize) -> Result<(), String> {
        if key.is_empty() {
            return Err(NO_KEY.into());
        }
        if let Value::List(items) = &*v.plain() {
            for item in items.iter() {
                self.newline();
                let header = format!("{}[[{}]]", indent(key), key_path(key));
                self.write(&header);
                self.newline();
                self.map(key, item, false, depth + 1)?;
            }
        }
        Ok(())
    }

    fn map(&mut self, key: &[String], v: &Value, inline: bool, depth: usize) -> Result<(), String> {
        let Value::Map(m) = &*v.plain() else {
            return Ok(());
        };
        let mut direct = Vec::new();
        let mut sub = Vec::new();
        for (k, x) in m.entries() {
            match kind_of(&x, depth + 1)? {
                Some(Kind::Table | Kind::ArrayOfTables) => sub.push((k, x)),
                _ => direct.push((k, x)),
            }
        }
        if inline {
            self.write("{");
        }
        let trail = !sub.is_empty();
        for (group, trail_comma) in [(direct, trail), (sub, false)] {
            let n = group.len();
            for (i, (k, x)) in group.into_iter().enumerate() {
                if x.is_nil() {
                    continue;
                }
                if inline {
                    self.key_value(std::slice::from_ref(&k), &x, true, depth + 1)?;
                    if trail_comma || i != n - 1 {
                        self.write(", ");
                    }
                } else {
                    let mut path = key.to_vec();
                    path.push(k);
                    self.encode(&path, &x, depth + 1)?;
                }
            }
        }
        if inline {
            self.write("}");
        }
        Ok(())
    }

    fn element(&mut self, v: &Value, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        match &*v.plain() {
            Value::String(s) => self.write(&quote(s)),
            Value::Bool(b) => self.write(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::Int64(i) => self.write(&i.to_string()),
            Value::Float(f) => self.write(&float_text(*f)),
            Value::List(items) => {
                self.write("[");
                for (i, item) in items.iter().enumerate() {
                    self.element(item, depth + 1)?;
                    if i + 1 != items.len() {
                        self.write(", ");
                    }
                }
                self.write("]");
            }
            Value::Map(_) => self.map(&[], v, true, depth)?,
            Value::Nil => {
                return Err("reflect: call of reflect.Value.Interface on zero Value".into());
            }
            other => return Err(format!("toml: unexpected type: {}", other.type_name())),
        }
        Ok(())
    }
}

/// BurntSushi/toml's `Unmarshal` into `map[string]interface{}`.
pub(crate) fn from_toml(text: &str) -> Result<Value, String> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e
            .span()
            .map(|r| text[..r.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(1);
        format!("toml: line {line}: {}", e.message().trim_end())
    })?;
    Ok(table_value(doc.as_table()))
}

fn table_value(t: &toml_edit::Table) -> Value {
    Value::map(
        t.iter()
            .filter_map(|(k, item)| item_value(item).map(|v| (k.to_string(), v)))
            .collect(),
    )
}

fn item_value(item: &toml_edit::Item) -> Option<Value> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(v) => Some(toml_value(v)),
        toml_edit::Item::Table(t) => Some(table_value(t)),
        toml_edit::Item::ArrayOfTables(a) => Some(Value::list(a.iter().map(table_value).collect())),
    }
}

fn toml_value(v: &toml_edit::Value) -> Value {
    match v {
        toml_edit::Value::String(s) => Value::from(s.value().as_str()),
        toml_edit::Value::Integer(i) => Value::Int64(*i.value()),
        toml_edit::Value::Float(f) => Value::Float(*f.value()),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Datetime(d) => Value::from(d.value().to_string()),
        toml_edit::Value::Array(a) => Value::list(a.iter().map(toml_value).collect()),
        toml_edit::Value::InlineTable(t) => Value::map(
            t.iter()
                .map(|(k, x)| (k.to_string(), toml_value(x)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(j: serde_json::Value) -> String {
        match to_toml(&Value::from_json(&j)) {
            Ok(s) | Err(TomlError::Encode(s)) => s,
            Err(TomlError::Panic(p)) => panic!("{p}"),
        }
    }

    #[test]
    fn tables_come_after_plain_values_and_nest_with_indentation() {
        assert_eq!(
            toml(serde_json::json!({"b": {"y": 2, "c": {"z": "s"}}, "a": 1, "l": [1, "x"]})),
            "a = 1.0\nl = [1.0, \"x\"]\n\n[b]\n  y = 2.0\n  [b.c]\n    z = \"s\"\n"
        );
    }

    #[test]
    fn lists_of_maps_are_arrays_of_tables() {
        assert_eq!(
            toml(serde_json::json!({"srv": [{"a": 1}, {"b": {"c": true}}]})),
            "[[srv]]\n  a = 1.0\n\n[[srv]]\n  [srv.b]\n    c = true\n"
        );
    }

    #[test]
    fn from_toml_types_values_as_go_does() {
        let v = from_toml("a = 1\nb = 1.5\n[t]\nc = [true, \"x\"]\n[[l]]\nd = 2\n").unwrap();
        assert_eq!(
            v.to_string(),
            "map[a:1 b:1.5 l:[map[d:2]] t:map[c:[true x]]]"
        );
        let Value::Map(m) = v else { panic!("a map") };
        assert_eq!(m.get("a").map(|x| x.type_name()).as_deref(), Some("int64"));
        let err = from_toml("a = 1\nb =").unwrap_err();
        assert!(err.starts_with("toml: line 2: "), "{err}");
    }

    #[test]
    fn nil_inside_a_list_fails_and_nil_in_a_map_is_left_out() {
        assert_eq!(toml(serde_json::json!({"l": [1, null]})), ARRAY_NIL_ELEMENT);
        assert_eq!(
            toml(serde_json::json!({"n": null, "k": "v"})),
            "k = \"v\"\n"
        );
        assert_eq!(toml(serde_json::json!([{"a": 1}])), NO_KEY);
        assert!(matches!(to_toml(&Value::Nil), Err(TomlError::Panic(_))));
    }
}
