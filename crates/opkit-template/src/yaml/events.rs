//! The YAML reader's events, from libyaml (the `unsafe-libyaml-norway` translation, the
//! C library go-yaml v2 was ported from): the same scanner and parser, so the same
//! documents are accepted and rejected, with the same problem texts and line numbers
//! (`yaml: line 3: mapping values are not allowed in this context`). This module is the
//! only one that touches the library's raw API; it hands out owned events.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use unsafe_libyaml_norway as unsafe_libyaml;

/// One parser event with its data copied out.
#[derive(Debug)]
pub(crate) enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias(String),
    Scalar(Scalar),
    SequenceStart(Option<String>),
    SequenceEnd,
    MappingStart(Option<String>),
    MappingEnd,
}

/// A scalar event: go-yaml's `node` fields for it.
#[derive(Debug)]
pub(crate) struct Scalar {
    pub anchor: Option<String>,
    /// The full tag (`tag:yaml.org,2002:str` for `!!str`), empty when there is none.
    pub tag: String,
    pub value: String,
    /// libyaml's `plain_implicit`: a plain scalar without a tag (or with `!`).
    pub implicit: bool,
}

/// Where and why the reader stopped, as go-yaml reports it (`yaml: line N: PROBLEM`).
pub(crate) struct ParseError {
    pub message: String,
}

/// A libyaml parser over a borrowed input.
pub(crate) struct Parser<'a> {
    raw: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>>,
    done: bool,
    /// The input after any byte-order mark (libyaml's marks count from there).
    text: &'a [u8],
    _input: PhantomData<&'a [u8]>,
}

impl<'a> Parser<'a> {
    /// A parser reading `input` (go-yaml reads an empty input as a single line break).
    pub(crate) fn new(input: &'a [u8]) -> Result<Parser<'a>, ParseError> {
        let input: &'a [u8] = if input.is_empty() { b"\n" } else { input };
        let mut raw = Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit());
        // SAFETY: `raw` is a heap slot that outlives the parser (freed in Drop, after
        // `yaml_parser_delete`); the input is borrowed for 'a, as long as the parser lives.
        unsafe {
            if unsafe_libyaml::yaml_parser_initialize(raw.as_mut_ptr()).fail {
                return Err(ParseError {
                    message: "failed to initialize YAML parser".into(),
                });
            }
            unsafe_libyaml::yaml_parser_set_input_string(
                raw.as_mut_ptr(),
                input.as_ptr(),
                input.len() as _,
            );
        }
        Ok(Parser {
            raw,
            done: false,
            text: input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input),
            _input: PhantomData,
        })
    }

    /// The next event, or go-yaml's error text.
    pub(crate) fn next_event(&mut self) -> Result<Event, ParseError> {
        if self.done {
            return Ok(Event::StreamEnd);
        }
        let mut ev = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialized in `new`; the event is written by
        // `yaml_parser_parse` before it is read and deleted exactly once.
        unsafe {
            let parser = self.raw.as_mut_ptr();
            if unsafe_libyaml::yaml_parser_parse(parser, ev.as_mut_ptr()).fail {
                self.done = true;
                return Err(error_of(parser));
            }
            let event = &*ev.as_ptr();
            let slash = event.type_ == unsafe_libyaml::YAML_SCALAR_EVENT
                && event.data.scalar.style == unsafe_libyaml::YAML_DOUBLE_QUOTED_SCALAR_STYLE;
            let (start, end) = (
                event.start_mark.index as usize,
                event.end_mark.index as usize,
            );
            let out = convert(event);
            unsafe_libyaml::yaml_event_delete(ev.as_mut_ptr());
            if slash && let Some(e) = self.slash_escape(start, end) {
                self.done = true;
                return Err(e);
            }
            if matches!(out, Event::StreamEnd) {
                self.done = true;
            }
            Ok(out)
        }
    }
}

impl Parser<'_> {
    /// libyaml accepts YAML 1.2's `\/` escape in a double-quoted scalar; go-yaml v2 (YAML
    /// 1.1) stops there with `found unknown escape character`. `start..end` is the
    /// scalar's source.
    fn slash_escape(&self, start: usize, end: usize) -> Option<ParseError> {
        let raw = self.text.get(start..end)?;
        let mut i = 0;
        while i + 1 < raw.len() {
            if raw[i] == b'\\' {
                if raw[i + 1] == b'/' {
                    let before = &self.text[..start + i];
                    let line = before.iter().filter(|&&c| c == b'\n').count()
                        + before
                            .windows(2)
                            .filter(|w| w[0] == b'\r' && w[1] != b'\n')
                            .count();
                    let message = if line == 0 {
                        "yaml: found unknown escape character".to_string()
                    } else {
                        format!("yaml: line {}: found unknown escape character", line + 1)
                    };
                    return Some(ParseError { message });
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        None
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialized in `new` (a failed initialization never builds a Parser).
        unsafe { unsafe_libyaml::yaml_parser_delete(self.raw.as_mut_ptr()) }
    }
}

/// go-yaml's `parser.fail`: `line N: ` (the problem's line, one more for scanner errors,
/// or the context's line) and the problem.
unsafe fn error_of(parser: *const unsafe_libyaml::yaml_parser_t) -> ParseError {
    // SAFETY: the caller passes an initialized parser that has just failed.
    let p = unsafe { &*parser };
    let mut line = 0u64;
    if p.problem_mark.line != 0 {
        line = p.problem_mark.line;
        if p.error == unsafe_libyaml::YAML_SCANNER_ERROR {
            line += 1;
        }
    } else if p.context_mark.line != 0 {
        line = p.context_mark.line;
    }
    // SAFETY: libyaml's problem texts are static NUL-terminated strings or null.
    let problem = unsafe { c_text(p.problem as *const u8) };
    let problem = problem.unwrap_or_else(|| "unknown problem parsing YAML content".into());
    let message = if line != 0 {
        format!("yaml: line {line}: {problem}")
    } else {
        format!("yaml: {problem}")
    };
    ParseError { message }
}

/// A NUL-terminated C string as text (None for null).
unsafe fn c_text(ptr: *const u8) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    let s = unsafe { std::ffi::CStr::from_ptr(ptr.cast()) };
    Some(String::from_utf8_lossy(s.to_bytes()).into_owned())
}

/// Copies an event's data out of libyaml's memory.
unsafe fn convert(ev: &unsafe_libyaml::yaml_event_t) -> Event {
    // SAFETY: each union field is read only for the event type that sets it; strings are
    // NUL-terminated (anchors, tags) or come with their length (scalar values).
    unsafe {
        match ev.type_ {
            unsafe_libyaml::YAML_STREAM_START_EVENT => Event::StreamStart,
            unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
            unsafe_libyaml::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
            unsafe_libyaml::YAML_ALIAS_EVENT => {
                Event::Alias(c_text(ev.data.alias.anchor).unwrap_or_default())
            }
            unsafe_libyaml::YAML_SCALAR_EVENT => {
                let s = &ev.data.scalar;
                let bytes = if s.value.is_null() {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(s.value, s.length as usize)
                };
                Event::Scalar(Scalar {
                    anchor: c_text(s.anchor),
                    tag: c_text(s.tag).unwrap_or_default(),
                    value: String::from_utf8(bytes.to_vec())
                        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
                    implicit: s.plain_implicit,
                })
            }
            unsafe_libyaml::YAML_SEQUENCE_START_EVENT => {
                Event::SequenceStart(c_text(ev.data.sequence_start.anchor))
            }
            unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
            unsafe_libyaml::YAML_MAPPING_START_EVENT => {
                Event::MappingStart(c_text(ev.data.mapping_start.anchor))
            }
            unsafe_libyaml::YAML_MAPPING_END_EVENT => Event::MappingEnd,
            _ => Event::StreamEnd,
        }
    }
}
