//! go-yaml v2's `Unmarshal` into `interface{}`: the node tree its parser builds from the
//! events (anchors registered when a node starts, so a node can hold an alias to itself),
//! then decoding with YAML 1.1 typing, `<<` merge keys (earlier entries of a merged list
//! win, later keys of the map override), `!!binary`, explicitly tagged scalars
//! (`!!int foo` fails as in Go), and go-yaml's guards against alias bombs and
//! self-containing anchors.

use std::collections::{HashMap, HashSet};

use base64::Engine;

use super::Yaml;
use super::events::{Event, Parser};
use super::resolve::{Resolved, resolve};

const TAG_PREFIX: &str = "tag:yaml.org,2002:";
/// go-yaml's scanner stops at this nesting depth.
const MAX_DEPTH: usize = 10_000;

enum Node {
    Scalar {
        tag: String,
        value: String,
        implicit: bool,
    },
    Seq(Vec<usize>),
    Map(Vec<usize>),
    Alias {
        name: String,
        target: usize,
    },
}

/// Reads the first document of `input` as go-yaml v2 does (`None` when there is none).
/// The error is go-yaml's text (`yaml: line 2: …`).
pub(crate) fn decode(input: &str) -> Result<Option<Yaml>, String> {
    let mut b = Builder {
        parser: Parser::new(input.as_bytes()).map_err(|e| e.message)?,
        nodes: Vec::new(),
        anchors: HashMap::new(),
        peeked: None,
    };
    b.expect_stream_start()?;
    let root = match b.next()? {
        Event::StreamEnd => return Ok(None),
        Event::DocumentStart => {
            let root = b.node(0)?;
            match b.next()? {
                Event::DocumentEnd => root,
                other => {
                    return Err(format!(
                        "yaml: expected DOCUMENT-END event but got {other:?}"
                    ));
                }
            }
        }
        other => return Err(format!("yaml: unexpected event {other:?}")),
    };
    let mut d = Decoder {
        nodes: &b.nodes,
        active: HashSet::new(),
        decode_count: 0,
        alias_count: 0,
        alias_depth: 0,
    };
    d.value(root).map(Some)
}

struct Builder<'a> {
    parser: Parser<'a>,
    nodes: Vec<Node>,
    anchors: HashMap<String, usize>,
    peeked: Option<Event>,
}

impl Builder<'_> {
    fn next(&mut self) -> Result<Event, String> {
        match self.peeked.take() {
            Some(e) => Ok(e),
            None => self.parser.next_event().map_err(|e| e.message),
        }
    }

    fn expect_stream_start(&mut self) -> Result<(), String> {
        match self.next()? {
            Event::StreamStart => Ok(()),
            other => Err(format!(
                "yaml: expected STREAM-START event but got {other:?}"
            )),
        }
    }

    fn push(&mut self, n: Node, anchor: Option<String>) -> usize {
        self.nodes.push(n);
        let id = self.nodes.len() - 1;
        if let Some(a) = anchor {
            self.anchors.insert(a, id);
        }
        id
    }

    /// The node starting at the next event.
    fn node(&mut self, depth: usize) -> Result<usize, String> {
        if depth > MAX_DEPTH {
            return Err(format!("yaml: exceeded max depth of {MAX_DEPTH}"));
        }
        match self.next()? {
            Event::Scalar(s) => Ok(self.push(
                Node::Scalar {
                    tag: s.tag,
                    value: s.value,
                    implicit: s.implicit,
                },
                s.anchor,
            )),
            Event::Alias(name) => match self.anchors.get(&name) {
                Some(&target) => Ok(self.push(Node::Alias { name, target }, None)),
                None => Err(format!("yaml: unknown anchor '{name}' referenced")),
            },
            Event::SequenceStart(anchor) => {
                let id = self.push(Node::Seq(Vec::new()), anchor);
                let mut children = Vec::new();
                loop {
                    match self.next()? {
                        Event::SequenceEnd => break,
                        e => {
                            self.peeked = Some(e);
                            children.push(self.node(depth + 1)?);
                        }
                    }
                }
                self.nodes[id] = Node::Seq(children);
                Ok(id)
            }
            Event::MappingStart(anchor) => {
                let id = self.push(Node::Map(Vec::new()), anchor);
                let mut children = Vec::new();
                loop {
                    match self.next()? {
                        Event::MappingEnd => break,
                        e => {
                            self.peeked = Some(e);
                            children.push(self.node(depth + 1)?);
                            children.push(self.node(depth + 1)?);
                        }
                    }
                }
                self.nodes[id] = Node::Map(children);
                Ok(id)
            }
            other => Err(format!("yaml: unexpected event {other:?}")),
        }
    }
}

struct Decoder<'n> {
    nodes: &'n [Node],
    /// Alias nodes being expanded (go-yaml's `d.aliases`).
    active: HashSet<usize>,
    decode_count: u64,
    alias_count: u64,
    alias_depth: u32,
}

/// go-yaml's `allowedAliasRatio`: how much of a document may come from aliases.
fn allowed_alias_ratio(decode_count: u64) -> f64 {
    const LOW: u64 = 400_000;
    const HIGH: u64 = 4_000_000;
    if decode_count <= LOW {
        0.99
    } else if decode_count >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decode_count - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

impl Decoder<'_> {
    fn count(&mut self) -> Result<(), String> {
        self.decode_count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err("yaml: document contains excessive aliasing".into());
        }
        Ok(())
    }

    fn value(&mut self, id: usize) -> Result<Yaml, String> {
        self.count()?;
        match &self.nodes[id] {
            Node::Alias { name, target } => {
                let target = *target;
                self.enter_alias(id, name)?;
                let v = self.value(target);
                self.leave_alias(id);
                v
            }
            Node::Scalar {
                tag,
                value,
                implicit,
            } => scalar(tag, value, *implicit),
            Node::Seq(children) => children
                .iter()
                .map(|c| self.value(*c))
                .collect::<Result<_, _>>()
                .map(Yaml::Seq),
            Node::Map(_) => {
                let mut entries = Vec::new();
                self.map_into(id, &mut entries)?;
                Ok(Yaml::Map(entries))
            }
        }
    }

    fn enter_alias(&mut self, id: usize, name: &str) -> Result<(), String> {
        if !self.active.insert(id) {
            return Err(format!("yaml: anchor '{name}' value contains itself"));
        }
        self.alias_depth += 1;
        Ok(())
    }

    fn leave_alias(&mut self, id: usize) {
        self.alias_depth -= 1;
        self.active.remove(&id);
    }

    /// Decodes the mapping (or alias of one) `id` into `out`, as go-yaml decodes into an
    /// existing map: later keys replace earlier ones.
    fn map_into(&mut self, id: usize, out: &mut Vec<(Yaml, Yaml)>) -> Result<(), String> {
        let children = match &self.nodes[id] {
            Node::Map(children) => children,
            Node::Alias { name, target } => {
                let target = *target;
                self.count()?;
                self.enter_alias(id, name)?;
                let r = self.map_into(target, out);
                self.leave_alias(id);
                return r;
            }
            _ => return Err(WANT_MAP.into()),
        };
        for pair in children.chunks(2) {
            let [k, v] = pair else { continue };
            if self.is_merge(*k) {
                self.merge(*v, out)?;
                continue;
            }
            let key = self.value(*k)?;
            if matches!(key, Yaml::Map(_) | Yaml::Seq(_)) {
                return Err(format!("yaml: invalid map key: {}", go_syntax(&key)));
            }
            let val = self.value(*v)?;
            match out.iter_mut().find(|(ek, _)| go_equal(ek, &key)) {
                Some(slot) => slot.1 = val,
                None => out.push((key, val)),
            }
        }
        Ok(())
    }

    fn is_merge(&self, id: usize) -> bool {
        matches!(&self.nodes[id], Node::Scalar { tag, value, implicit }
            if value == "<<" && (*implicit || tag == &format!("{TAG_PREFIX}merge")))
    }

    /// go-yaml's `merge`: a mapping, an alias of one, or a list of them (the earlier
    /// ones win, so the list is applied from its end).
    fn merge(&mut self, id: usize, out: &mut Vec<(Yaml, Yaml)>) -> Result<(), String> {
        match &self.nodes[id] {
            Node::Map(_) => {
                self.count()?;
                self.map_into(id, out)
            }
            Node::Alias { target, .. } => {
                if !matches!(self.nodes[*target], Node::Map(_)) {
                    return Err(WANT_MAP.into());
                }
                self.map_into(id, out)
            }
            Node::Seq(children) => {
                for c in children.iter().rev() {
                    let is_map = match &self.nodes[*c] {
                        Node::Alias { target, .. } => matches!(self.nodes[*target], Node::Map(_)),
                        Node::Map(_) => true,
                        _ => false,
                    };
                    if !is_map {
                        return Err(WANT_MAP.into());
                    }
                    self.count()?;
                    self.map_into(*c, out)?;
                }
                Ok(())
            }
            Node::Scalar { .. } => Err(WANT_MAP.into()),
        }
    }
}

const WANT_MAP: &str = "yaml: map merge requires map or sequence of maps as the value";

/// go-yaml's decoding of one scalar into `interface{}`.
fn scalar(tag: &str, value: &str, implicit: bool) -> Result<Yaml, String> {
    if tag.is_empty() && !implicit {
        return Ok(Yaml::Str(value.to_string()));
    }
    let short = tag.strip_prefix(TAG_PREFIX);
    let as_str = || Ok(Yaml::Str(value.to_string()));
    match short {
        _ if tag.is_empty() => {}
        Some("str") => return as_str(),
        Some("binary") => {
            let clean: String = value
                .chars()
                .filter(|c| !matches!(c, '\r' | '\n'))
                .collect();
            return match base64::engine::general_purpose::STANDARD.decode(clean) {
                Ok(bytes) => Ok(Yaml::Str(String::from_utf8_lossy(&bytes).into_owned())),
                Err(_) => Err("yaml: !!binary value contains invalid base64 data".into()),
            };
        }
        Some("null" | "bool" | "int" | "float" | "timestamp") => {}
        _ => return as_str(),
    }
    let r = resolve(value);
    let rtag = match r {
        Resolved::Null => "null",
        Resolved::Bool(_) => "bool",
        Resolved::Int(_) | Resolved::Uint(_) => "int",
        Resolved::Float(_) => "float",
        Resolved::Timestamp => "timestamp",
        Resolved::Merge => "merge",
        Resolved::Str => "str",
    };
    if let Some(want) = short
        && want != rtag
        && !(want == "float" && rtag == "int")
    {
        return Err(format!(
            "yaml: cannot decode !!{rtag} `{value}` as a !!{want}"
        ));
    }
    let float_wanted = short == Some("float");
    Ok(match r {
        Resolved::Null => Yaml::Null,
        Resolved::Bool(b) => Yaml::Bool(b),
        Resolved::Int(i) if float_wanted => Yaml::Float(i as f64),
        Resolved::Int(i) => Yaml::Int(i),
        Resolved::Uint(u) => Yaml::Uint(u),
        Resolved::Float(f) => Yaml::Float(f),
        Resolved::Timestamp | Resolved::Merge | Resolved::Str => Yaml::Str(value.to_string()),
    })
}

/// Go's `==` on two `interface{}` map keys.
fn go_equal(a: &Yaml, b: &Yaml) -> bool {
    match (a, b) {
        (Yaml::Null, Yaml::Null) => true,
        (Yaml::Bool(x), Yaml::Bool(y)) => x == y,
        (Yaml::Int(x), Yaml::Int(y)) => x == y,
        (Yaml::Uint(x), Yaml::Uint(y)) => x == y,
        (Yaml::Float(x), Yaml::Float(y)) => x == y,
        (Yaml::Str(x), Yaml::Str(y)) => x == y,
        _ => false,
    }
}

/// Go's `%#v` of a decoded value, for error texts.
pub(crate) fn go_syntax(v: &Yaml) -> String {
    match v {
        Yaml::Null => "<nil>".into(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Uint(u) => format!("0x{u:x}"),
        Yaml::Float(f) => crate::gofmt::sprint_value(&crate::Value::Float(*f)),
        Yaml::Str(s) => crate::gofmt::go_quote(s),
        Yaml::Seq(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_syntax).collect::<Vec<_>>().join(", ")
        ),
        Yaml::Map(entries) => format!(
            "map[interface {{}}]interface {{}}{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}:{}", go_syntax(k), go_syntax(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
