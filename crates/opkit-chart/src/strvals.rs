//! `--set`-style strings parsed exactly as Helm's `pkg/strvals` parses them: `a.b[0].c=x`,
//! `\`-escapes, `{a,b}` lists, `null`/`true`/int64 typing (or plain strings for
//! `--set-string`), JSON values (`--set-json`), file contents (`--set-file`) and the
//! no-escape, no-list literal form (`--set-literal`), with Helm's limits (index 65536, 30 nested
//! names) and error texts. Go panics on a type clash become the error Helm's `recover` prints.

use opkit_template::{Dict, Value};

/// The largest list index `--set` accepts (Helm's `MaxIndex`).
pub(crate) const MAX_INDEX: i64 = 65536;
/// The deepest `a.b.c…` nesting `--set` accepts (Helm's `MaxNestedNameLevel`).
pub(crate) const MAX_NESTED_NAME_LEVEL: usize = 30;

/// A `--set*` string Helm would refuse, with Helm's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct StrvalsError(pub(crate) String);

/// What a value's runes become.
pub(crate) enum Mode<'r> {
    /// `--set` (`false`) and `--set-string` (`true`).
    Typed { strings: bool },
    /// `--set-json`.
    Json,
    /// `--set-file`: the runes name a file whose contents are the value.
    File(&'r dyn Fn(&str) -> Result<Value, String>),
    /// `--set-literal`: no escapes, no lists, the rest of the string is the value.
    Literal,
}

enum Stop {
    Eof,
    Err(String),
}

impl From<String> for Stop {
    fn from(s: String) -> Stop {
        Stop::Err(s)
    }
}

type R<T> = Result<T, Stop>;

/// Parses `s` into `dest` (Helm's `ParseInto`, `ParseIntoString`, `ParseJSON`,
/// `ParseIntoFile`, `ParseLiteralInto`).
pub(crate) fn parse_into(s: &str, dest: &Dict, mode: Mode<'_>) -> Result<(), StrvalsError> {
    let mut p = Parser {
        chars: s.chars().collect(),
        pos: 0,
        mode,
    };
    loop {
        match p.key(dest, 0) {
            Ok(()) => {}
            Err(Stop::Eof) => return Ok(()),
            Err(Stop::Err(e)) => return Err(StrvalsError(e)),
        }
    }
}

struct Parser<'r> {
    chars: Vec<char>,
    pos: usize,
    mode: Mode<'r>,
}

/// Go's message for a failed type assertion on an `interface{}`.
fn conversion_panic(found: &Value, want: &str) -> String {
    let found = match found {
        Value::Nil => "nil".to_string(),
        other => other.type_name(),
    };
    format!("unable to parse key: interface conversion: interface {{}} is {found}, not {want}")
}

const LIST_TYPE: &str = "[]interface {}";
const MAP_TYPE: &str = "map[string]interface {}";

impl Parser<'_> {
    fn literal(&self) -> bool {
        matches!(self.mode, Mode::Literal)
    }

    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    /// Runes up to one of `stop` (consumed and returned), `\` escaping the next rune except in
    /// literal mode; `Eof` carries what was read.
    fn runes_until(&mut self, stop: &[char]) -> (Vec<char>, Option<char>) {
        let mut v = Vec::new();
        loop {
            match self.read() {
                None => return (v, None),
                Some(r) if stop.contains(&r) => return (v, Some(r)),
                Some('\\') if !self.literal() => match self.read() {
                    None => return (v, None),
                    Some(next) => v.push(next),
                },
                Some(r) => v.push(r),
            }
        }
    }

    fn key(&mut self, data: &Dict, nested: usize) -> R<()> {
        let stop: &[char] = if self.literal() {
            &['=', '[', '.']
        } else {
            &['=', '[', ',', '.']
        };
        let (k, last) = self.runes_until(stop);
        let k: String = k.into_iter().collect();
        match last {
            None => {
                if k.is_empty() {
                    Err(Stop::Eof)
                } else {
                    Err(format!("key {k:?} has no value").into())
                }
            }
            Some('[') => {
                let i = self.key_index()?;
                let list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Value::List(l)) => l.as_ref().clone(),
                    Some(other) => return Err(conversion_panic(&other, LIST_TYPE).into()),
                };
                let (list, res) = self.list_item(list, i, nested);
                set(data, &k, Value::list(list));
                res
            }
            Some('=') => self.assign(data, &k),
            Some(',') => {
                set(data, &k, Value::string(""));
                Err(format!("key {k:?} has no value (cannot end with ,)").into())
            }
            Some(_) => {
                // '.'
                let nested = nested + 1;
                if nested > MAX_NESTED_NAME_LEVEL {
                    return Err(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )
                    .into());
                }
                let inner = match data.get(&k) {
                    None => Dict::default(),
                    Some(Value::Map(d)) => d,
                    Some(other) => return Err(conversion_panic(&other, MAP_TYPE).into()),
                };
                let res = self.key(&inner, nested);
                if res.is_ok() && inner.is_empty() {
                    return Err(format!("key map {k:?} has no value").into());
                }
                if !inner.is_empty() {
                    set(data, &k, Value::Map(inner));
                }
                res
            }
        }
    }

    /// `key=` seen: reads the value and sets it.
    fn assign(&mut self, data: &Dict, k: &str) -> R<()> {
        match self.mode {
            Mode::Literal => {
                let v = self.val_rest();
                set(data, k, Value::string(v));
                Ok(())
            }
            Mode::Json => {
                if self.empty_val() {
                    set(data, k, Value::Nil);
                    return Ok(());
                }
                let v = self.json_value()?;
                set(data, k, v);
                self.empty_val();
                Ok(())
            }
            _ => match self.val_list()? {
                Listed::List(l) => {
                    set(data, k, Value::list(l));
                    Ok(())
                }
                Listed::Eof => {
                    set(data, k, Value::string(""));
                    Err(Stop::Eof)
                }
                Listed::NotList => {
                    let rs = self.val();
                    match self.typed(&rs) {
                        Ok(v) => {
                            set(data, k, v);
                            Ok(())
                        }
                        Err(e) => {
                            set(data, k, Value::Nil);
                            Err(e.into())
                        }
                    }
                }
            },
        }
    }

    /// The index inside `[…]`. Helm wraps the end of input as `error parsing index: EOF`
    /// with `%w`, and its parse loop takes any wrapped EOF for the end: the key is dropped
    /// and parsing ends without an error.
    fn key_index(&mut self) -> R<i64> {
        let (v, last) = self.runes_until(&[']']);
        if last.is_none() {
            return Err(Stop::Eof);
        }
        atoi(&v.into_iter().collect::<String>())
            .map_err(|e| format!("error parsing index: {e}").into())
    }

    /// The item `[i]` of `list` (Helm's recursive `listItem`, here a loop over the nested
    /// `[i][j]…` so deep nesting needs no stack): the list with the item set, and how it went.
    fn list_item(&mut self, list: Vec<Value>, i: i64, nested: usize) -> (Vec<Value>, R<()>) {
        // The enclosing lists of a nested item, outermost first, each with its index.
        let mut outer: Vec<(Vec<Value>, i64)> = Vec::new();
        let (mut list, mut i) = (list, i);
        let mut res = loop {
            match self.item_step(&mut list, i, nested) {
                Step::Done(res) => break res,
                Step::Nested(next) => {
                    let current = match list.get(i as usize) {
                        None | Some(Value::Nil) => Vec::new(),
                        Some(Value::List(l)) => l.as_ref().clone(),
                        Some(other) => break Err(conversion_panic(other, LIST_TYPE).into()),
                    };
                    outer.push((std::mem::replace(&mut list, current), i));
                    i = next;
                }
            }
        };
        // Each enclosing list takes its finished item; after an error Helm returns the
        // enclosing lists unchanged.
        while let Some((mut parent, pi)) = outer.pop() {
            if res.is_ok() {
                res = set_index(&mut parent, pi, Value::list(std::mem::take(&mut list)));
            }
            list = parent;
        }
        (list, res)
    }

    /// One level of `listItem`: what follows `[i]`.
    fn item_step(&mut self, list: &mut Vec<Value>, i: i64, nested: usize) -> Step {
        if i < 0 {
            return Step::Done(Err(format!("negative {i} index not allowed").into()));
        }
        let (k, last) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            let k: String = k.into_iter().collect();
            return Step::Done(Err(
                format!("unexpected data at end of array index: {k:?}").into()
            ));
        }
        Step::Done(match last {
            None => Err(Stop::Eof),
            Some('=') => {
                let v = match self.mode {
                    Mode::Literal => Value::string(self.val_rest()),
                    Mode::Json => {
                        if self.empty_val() {
                            Value::Nil
                        } else {
                            let v = match self.json_value() {
                                Ok(v) => v,
                                Err(e) => return Step::Done(Err(e)),
                            };
                            let res = set_index(list, i, v);
                            if res.is_ok() {
                                self.empty_val();
                            }
                            return Step::Done(res);
                        }
                    }
                    _ => match self.val_list() {
                        Ok(Listed::List(l)) => Value::list(l),
                        Ok(Listed::Eof) => Value::string(""),
                        Ok(Listed::NotList) => {
                            let rs = self.val();
                            match self.typed(&rs) {
                                Ok(v) => v,
                                Err(e) => return Step::Done(Err(e.into())),
                            }
                        }
                        Err(e) => return Step::Done(Err(e)),
                    },
                };
                set_index(list, i, v)
            }
            Some('[') => {
                return match self.key_index() {
                    Ok(next) => Step::Nested(next),
                    Err(e) => Step::Done(Err(e)),
                };
            }
            Some(_) => {
                // '.'
                let mut inner = Dict::default();
                if let Some(existing) = list.get_mut(i as usize) {
                    match existing {
                        Value::Map(d) => inner = d.clone(),
                        _ => *existing = Value::Map(inner.clone()),
                    }
                }
                self.key(&inner, nested)
                    .and_then(|()| set_index(list, i, Value::Map(inner)))
            }
        })
    }

    /// Skips white space; true at the end or at a `,` (consumed).
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None | Some(',') => return true,
                Some(r) if r.is_whitespace() => {}
                Some(_) => {
                    self.pos -= 1;
                    return false;
                }
            }
        }
    }

    /// One JSON value from the rest of the input (Go's `json.Decoder.Decode`).
    fn json_value(&mut self) -> R<Value> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let mut it = serde_json::Deserializer::from_str(&rest).into_iter::<serde_json::Value>();
        let v = match it.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(e.to_string().into()),
            None => return Err("unexpected EOF".to_string().into()),
        };
        let used = rest[..it.byte_offset()].chars().count();
        self.pos += used;
        Ok(Value::from_json(&v))
    }

    fn val(&mut self) -> Vec<char> {
        self.runes_until(&[',']).0
    }

    fn val_rest(&mut self) -> String {
        let rest: String = self.chars[self.pos..].iter().collect();
        self.pos = self.chars.len();
        rest
    }

    fn val_list(&mut self) -> R<Listed> {
        match self.read() {
            None => return Ok(Listed::Eof),
            Some('{') => {}
            Some(_) => {
                self.pos -= 1;
                return Ok(Listed::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.runes_until(&[',', '}']);
            match last {
                None => return Err("list must terminate with '}'".to_string().into()),
                Some('}') => {
                    if let Some(r) = self.read()
                        && r != ','
                    {
                        self.pos -= 1;
                    }
                    list.push(self.typed(&rs)?);
                    return Ok(Listed::List(list));
                }
                Some(_) => list.push(self.typed(&rs)?),
            }
        }
    }

    /// What the runes of a value become in this mode.
    fn typed(&self, rs: &[char]) -> Result<Value, String> {
        let s: String = rs.iter().collect();
        match self.mode {
            Mode::Typed { strings } => Ok(typed_val(s, strings)),
            Mode::File(read) => read(&s),
            Mode::Json | Mode::Literal => Ok(Value::string(s)),
        }
    }
}

/// What follows a list index: the item is done, or another index `[next]` opens a nested
/// list.
enum Step {
    Done(R<()>),
    Nested(i64),
}

enum Listed {
    List(Vec<Value>),
    Eof,
    NotList,
}

fn set(data: &Dict, key: &str, val: Value) {
    if !key.is_empty() {
        data.insert(key, val);
    }
}

fn set_index(list: &mut Vec<Value>, index: i64, val: Value) -> R<()> {
    if index < 0 {
        return Err(format!("negative {index} index not allowed").into());
    }
    if index > MAX_INDEX {
        return Err(format!(
            "index of {index} is greater than maximum supported index of {MAX_INDEX}"
        )
        .into());
    }
    let index = index as usize;
    if list.len() <= index {
        list.resize(index + 1, Value::Nil);
    }
    list[index] = val;
    Ok(())
}

/// Go's `strconv.Atoi`, with its error texts.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {s:?}: invalid syntax"));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {s:?}: value out of range"))
}

/// Helm's `typedVal`: `true`/`false`/`null` (any case), `0`, and decimal int64s without a
/// leading zero are typed; everything else stays a string.
fn typed_val(val: String, strings: bool) -> Value {
    if strings {
        return Value::string(val);
    }
    if val.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if val.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if val.eq_ignore_ascii_case("null") {
        return Value::Nil;
    }
    if val == "0" {
        return Value::Int64(0);
    }
    if !val.is_empty()
        && !val.starts_with('0')
        && let Ok(i) = atoi(&val)
    {
        return Value::Int64(i);
    }
    Value::string(val)
}

/// A fresh map with `s` parsed into it (for tests and one-off parsing).
#[cfg(test)]
pub(crate) fn parse(s: &str, mode: Mode<'_>) -> Result<Value, StrvalsError> {
    let d = Dict::default();
    parse_into(s, &d, mode)?;
    Ok(Value::Map(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_(s: &str) -> Result<String, String> {
        parse(s, Mode::Typed { strings: false })
            .map(|v| format!("{v:?}"))
            .map_err(|e| e.0)
    }

    fn show(s: &str, mode: Mode<'_>) -> String {
        parse(s, mode)
            .map(|v| v.to_string())
            .unwrap_or_else(|e| e.0)
    }

    #[test]
    fn set_types_numbers_as_int64_and_keeps_leading_zeros_as_strings() {
        let v = parse(
            "a=1,b=0,c=007,d=-3,e=true,f=NULL,g=1.5,h=",
            Mode::Typed { strings: false },
        )
        .unwrap();
        let d = as_dict(&v);
        assert!(matches!(d.get("a"), Some(Value::Int64(1))));
        assert!(matches!(d.get("b"), Some(Value::Int64(0))));
        assert_eq!(d.get("c").unwrap().as_str(), Some("007"));
        assert!(matches!(d.get("d"), Some(Value::Int64(-3))));
        assert!(matches!(d.get("e"), Some(Value::Bool(true))));
        assert!(matches!(d.get("f"), Some(Value::Nil)));
        assert_eq!(d.get("g").unwrap().as_str(), Some("1.5"));
        assert_eq!(d.get("h").unwrap().as_str(), Some(""));
    }

    fn as_dict(v: &Value) -> Dict {
        match v {
            Value::Map(d) => d.clone(),
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn set_string_keeps_everything_a_string() {
        let v = parse("a=1,b=true", Mode::Typed { strings: true }).unwrap();
        assert_eq!(as_dict(&v).get("a").unwrap().as_str(), Some("1"));
        assert_eq!(as_dict(&v).get("b").unwrap().as_str(), Some("true"));
    }

    #[test]
    fn nested_names_lists_and_escapes() {
        let typed = || Mode::Typed { strings: false };
        assert_eq!(show("a.b.c=x", typed()), "map[a:map[b:map[c:x]]]");
        assert_eq!(show("a[1].b=x", typed()), "map[a:[<nil> map[b:x]]]");
        assert_eq!(show("a[0][1]=x", typed()), "map[a:[[<nil> x]]]");
        assert_eq!(show("a\\.b=x\\,y", typed()), "map[a.b:x,y]");
        assert_eq!(show("a={1,b,}", typed()), "map[a:[1 b ]]");
        assert_eq!(show("a={x,y}b=2", typed()), "map[a:[x y] b:2]");
        assert_eq!(
            show("name1=value1,name2=value2", typed()),
            "map[name1:value1 name2:value2]"
        );
    }

    #[test]
    fn errors_have_helms_texts() {
        assert_eq!(set_("x").unwrap_err(), r#"key "x" has no value"#);
        assert_eq!(
            set_("x,").unwrap_err(),
            r#"key "x" has no value (cannot end with ,)"#
        );
        assert_eq!(set_("a.=1").unwrap_err(), r#"key map "a" has no value"#);
        assert_eq!(set_("a={1,2").unwrap_err(), "list must terminate with '}'");
        assert_eq!(
            set_("a[x]=1").unwrap_err(),
            r#"error parsing index: strconv.Atoi: parsing "x": invalid syntax"#
        );
        assert_eq!(
            set_("a[-1]=1").unwrap_err(),
            "negative -1 index not allowed"
        );
        assert_eq!(
            set_("a[65537]=1").unwrap_err(),
            "index of 65537 is greater than maximum supported index of 65536"
        );
        assert_eq!(
            set_("a[0]x=1").unwrap_err(),
            r#"unexpected data at end of array index: "x""#
        );
        assert_eq!(
            set_("a=1,a.b=2").unwrap_err(),
            "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}"
        );
        assert_eq!(
            set_("a=1,a[0]=2").unwrap_err(),
            "unable to parse key: interface conversion: interface {} is int64, not []interface {}"
        );
        // Nesting as deep as the input goes (Helm has no bound) needs no stack.
        let lists = format!("a{}=1", "[0]".repeat(5000));
        assert!(parse(&lists, Mode::Typed { strings: false }).is_ok());
        let deep = format!("{}=1", vec!["a"; 32].join("."));
        assert_eq!(
            set_(&deep).unwrap_err(),
            "value name nested level is greater than maximum supported nested level of 30"
        );
    }

    #[test]
    fn json_values_are_decoded_and_empty_ones_are_null() {
        assert_eq!(
            show(r#"a={"b":[1,"x"]},c=,d=[1]"#, Mode::Json),
            "map[a:map[b:[1 x]] c:<nil> d:[1]]"
        );
        assert_eq!(show("a[1]=true", Mode::Json), "map[a:[<nil> true]]");
        assert!(parse("a=tru", Mode::Json).is_err());
    }

    #[test]
    fn literal_values_take_the_rest_verbatim() {
        assert_eq!(
            show("a.b=x,y\\z={1}", Mode::Literal),
            "map[a:map[b:x,y\\z={1}]]"
        );
        assert_eq!(show("a[0]=1", Mode::Literal), "map[a:[1]]");
    }

    #[test]
    fn file_values_read_the_named_file() {
        let read = |p: &str| -> Result<Value, String> {
            if p == "f.txt" {
                Ok(Value::string("contents"))
            } else {
                Err(format!("open {p}: no such file or directory"))
            }
        };
        assert_eq!(show("a=f.txt", Mode::File(&read)), "map[a:contents]");
        assert_eq!(
            show("a=nope", Mode::File(&read)),
            "open nope: no such file or directory"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_set_string_gives_values_or_an_error_never_a_panic(
            s in "[a-c.\\[\\]0-9=,{}\\\\ \"-]{0,40}"
        ) {
            for mode in [
                Mode::Typed { strings: false },
                Mode::Typed { strings: true },
                Mode::Json,
                Mode::Literal,
            ] {
                let _ = parse(&s, mode);
            }
        }
    }
}
