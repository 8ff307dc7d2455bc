//! Turning raw fuzzer bytes into structured inputs.
//!
//! libFuzzer mutates flat byte strings; most of opkit's code under test wants JSON values,
//! selector-like strings or patches. [`Input`] reads choices from the bytes (a byte picks a
//! branch, a length, an alphabet entry), so every byte string maps to exactly one structured
//! input and small mutations give small structural changes. When the bytes run out every
//! choice reads as zero, which keeps the decoding total and bounded.

use serde_json::{Map, Number, Value};

/// The deepest JSON value [`Input::json`] builds (well below the crates' own nesting limits,
/// so the fuzzers spend their time on semantics rather than on depth refusals).
pub const MAX_JSON_DEPTH: usize = 6;

/// Object keys drawn by [`Input::json`]: the field names and directives the code under test
/// treats specially, plus a few plain ones.
pub const KEYS: &[&str] = &[
    "a",
    "b",
    "name",
    "value",
    "metadata",
    "spec",
    "status",
    "labels",
    "annotations",
    "finalizers",
    "containers",
    "image",
    "ports",
    "containerPort",
    "protocol",
    "env",
    "volumes",
    "volumeMounts",
    "mountPath",
    "template",
    "selector",
    "matchLabels",
    "replicas",
    "items",
    "apiVersion",
    "kind",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$setElementOrder/finalizers",
    "$deleteFromPrimitiveList/finalizers",
    "managedFields",
    "ownerReferences",
    "uid",
];

/// Strings drawn by [`Input::json`]: directive values, names that collide, odd text.
pub const STRINGS: &[&str] = &[
    "",
    "a",
    "b",
    "x",
    "app",
    "web",
    "replace",
    "delete",
    "merge",
    "deleteFromPrimitiveList",
    "TCP",
    "UDP",
    "v1",
    "apps/v1",
    "Pod",
    "Deployment",
    "$patch",
    "é",
    "\u{0}",
    "~1",
    "/",
    "1",
];

/// A cursor over fuzzer bytes that reads choices.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads choices from `data`.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    /// Whether all bytes have been consumed.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte, or 0 when exhausted.
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// A number in `0..n` (`n` ≥ 1; values of `n` above 256 use two bytes).
    pub fn below(&mut self, n: usize) -> usize {
        let n = n.max(1);
        let raw = if n > 256 {
            usize::from(self.byte()) << 8 | usize::from(self.byte())
        } else {
            usize::from(self.byte())
        };
        raw % n
    }

    /// A coin flip.
    pub fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// One item of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Up to `max` raw bytes.
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max + 1).min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// Everything not consumed yet.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    /// A string of up to `max` tokens from `tokens`.
    pub fn tokens(&mut self, tokens: &[&str], max: usize) -> String {
        let n = self.below(max + 1);
        let mut out = String::new();
        for _ in 0..n {
            out.push_str(self.pick(tokens));
        }
        out
    }

    /// A JSON value at most `depth` levels deep, with keys from [`KEYS`] and strings from
    /// [`STRINGS`].
    pub fn json(&mut self, depth: usize) -> Value {
        let choice = if depth == 0 {
            self.below(5)
        } else {
            self.below(8)
        };
        match choice {
            0 => Value::Null,
            1 => Value::Bool(self.flag()),
            2 => Value::Number(self.number()),
            3 | 4 => Value::String(self.pick(STRINGS).to_owned()),
            5 => {
                let n = self.below(4);
                Value::Array((0..n).map(|_| self.json(depth - 1)).collect())
            }
            _ => Value::Object(self.object(depth - 1)),
        }
    }

    /// A JSON object whose values are at most `depth` levels deep.
    pub fn object(&mut self, depth: usize) -> Map<String, Value> {
        let n = self.below(5);
        let mut map = Map::new();
        for _ in 0..n {
            let key = self.pick(KEYS).to_owned();
            map.insert(key, self.json(depth));
        }
        map
    }

    /// A JSON number: small integers, negatives, large and fractional values.
    pub fn number(&mut self) -> Number {
        match self.below(6) {
            0 => Number::from(self.below(4)),
            1 => Number::from(-i64::from(self.byte())),
            2 => Number::from(u64::MAX - u64::from(self.byte())),
            3 => Number::from(i64::MIN + i64::from(self.byte())),
            4 => Number::from_f64(f64::from(self.byte()) / 4.0).unwrap_or_else(|| Number::from(0)),
            _ => Number::from(self.byte()),
        }
    }

    /// Applies up to `rounds` random edits to `value`: replace a node with a fresh value,
    /// remove an object key or list item, duplicate a list item, add a key. Each edit walks
    /// from the root to a node chosen by the bytes.
    pub fn mutate(&mut self, value: &mut Value, rounds: usize) {
        let n = self.below(rounds + 1);
        for _ in 0..n {
            let node = self.walk(value);
            match self.below(5) {
                0 => *node = self.json(2),
                1 => match node {
                    Value::Object(map) if !map.is_empty() => {
                        let i = self.below(map.len());
                        if let Some(k) = map.keys().nth(i).cloned() {
                            map.remove(&k);
                        }
                    }
                    Value::Array(items) if !items.is_empty() => {
                        let i = self.below(items.len());
                        items.remove(i);
                    }
                    _ => {}
                },
                2 => {
                    if let Value::Array(items) = node
                        && !items.is_empty()
                    {
                        let i = self.below(items.len());
                        let copy = items[i].clone();
                        items.push(copy);
                    }
                }
                _ => {
                    if let Value::Object(map) = node {
                        let key = self.pick(KEYS).to_owned();
                        map.insert(key, self.json(2));
                    }
                }
            }
        }
    }

    /// A node of `value` reached by following choices from the root.
    fn walk<'v>(&mut self, value: &'v mut Value) -> &'v mut Value {
        let mut node = value;
        for _ in 0..MAX_JSON_DEPTH * 2 {
            if !self.flag() {
                break;
            }
            let len = match &*node {
                Value::Object(map) => map.len(),
                Value::Array(items) => items.len(),
                _ => 0,
            };
            if len == 0 {
                break;
            }
            let i = self.below(len);
            node = match node {
                Value::Object(map) => match map.values_mut().nth(i) {
                    Some(child) => child,
                    None => unreachable!("index below the map's length"),
                },
                Value::Array(items) => &mut items[i],
                _ => unreachable!("only containers have a length"),
            };
        }
        node
    }
}
