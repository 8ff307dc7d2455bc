//! Protobuf wire format primitives: a bounds-checked reader and append-only writer helpers.
//!
//! Small and self-contained on purpose: the codec walks messages by the schema table, so it
//! needs only varints, length-delimited slices and fixed64, and every read must fail cleanly
//! (never panic) on truncated or hostile input.

use std::fmt;

/// Wire type of a varint (`int32`, `int64`, `bool`).
pub(crate) const VARINT: u8 = 0;
/// Wire type of a fixed 64-bit value (`double`).
pub(crate) const FIXED64: u8 = 1;
/// Wire type of a length-delimited value (`string`, `bytes`, messages, packed repeated).
pub(crate) const LEN: u8 = 2;
/// Wire type of a fixed 32-bit value (unused by Kubernetes, skipped if seen).
pub(crate) const FIXED32: u8 = 5;

/// What went wrong at the wire level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The data ended inside a value.
    Truncated,
    /// A varint longer than 10 bytes or overflowing 64 bits.
    BadVarint,
    /// A wire type that is not 0, 1, 2 or 5 (3 and 4 are deprecated groups).
    BadWireType(u8),
    /// Field number 0 or above the protobuf maximum.
    BadTag,
    /// A field whose wire type does not match its schema type.
    WrongWireType {
        /// The wire type the schema expects.
        expected: u8,
        /// The wire type found.
        found: u8,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => f.write_str("truncated data"),
            WireError::BadVarint => f.write_str("malformed varint"),
            WireError::BadWireType(t) => write!(f, "unsupported wire type {t}"),
            WireError::BadTag => f.write_str("invalid field number"),
            WireError::WrongWireType { expected, found } => {
                write!(f, "wrong wire type {found} (expected {expected})")
            }
        }
    }
}

/// A cursor over protobuf bytes.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads `data` from its start.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    /// True when everything was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Reads a base-128 varint.
    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for (i, &b) in self.data.iter().enumerate().take(10) {
            if i == 9 && b > 1 {
                return Err(WireError::BadVarint);
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.data = self.data.get(i + 1..).unwrap_or_default();
                return Ok(value);
            }
        }
        if self.data.len() >= 10 {
            Err(WireError::BadVarint)
        } else {
            Err(WireError::Truncated)
        }
    }

    /// Reads a field key: (field number, wire type).
    pub(crate) fn key(&mut self) -> Result<(u32, u8), WireError> {
        let k = self.varint()?;
        let wire_type = (k & 7) as u8;
        let tag = k >> 3;
        if tag == 0 || tag > (1 << 29) - 1 {
            return Err(WireError::BadTag);
        }
        match wire_type {
            VARINT | FIXED64 | LEN | FIXED32 => Ok((tag as u32, wire_type)),
            other => Err(WireError::BadWireType(other)),
        }
    }

    /// Reads a length-delimited value.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
        if len > self.data.len() {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.data.split_at(len);
        self.data = tail;
        Ok(head)
    }

    /// Reads a little-endian fixed64.
    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let (head, tail) = self
            .data
            .split_first_chunk::<8>()
            .ok_or(WireError::Truncated)?;
        self.data = tail;
        Ok(u64::from_le_bytes(*head))
    }

    /// Skips a value of the given wire type.
    pub(crate) fn skip(&mut self, wire_type: u8) -> Result<(), WireError> {
        match wire_type {
            VARINT => self.varint().map(|_| ()),
            FIXED64 => self.fixed64().map(|_| ()),
            LEN => self.bytes().map(|_| ()),
            FIXED32 => {
                let (_, tail) = self
                    .data
                    .split_first_chunk::<4>()
                    .ok_or(WireError::Truncated)?;
                self.data = tail;
                Ok(())
            }
            other => Err(WireError::BadWireType(other)),
        }
    }
}

/// Fails unless `found` is the `expected` wire type.
pub(crate) fn expect(found: u8, expected: u8) -> Result<(), WireError> {
    if found == expected {
        Ok(())
    } else {
        Err(WireError::WrongWireType { expected, found })
    }
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key.
pub(crate) fn put_key(out: &mut Vec<u8>, tag: u32, wire_type: u8) {
    put_varint(out, (u64::from(tag) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes_field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, tag: u32, v: u64) {
    put_key(out, tag, VARINT);
    put_varint(out, v);
}

/// Starts a length-delimited field whose length is not known yet; returns the position of
/// its content for [`end_len`]. One byte is reserved for the length (enough below 128 bytes).
pub(crate) fn begin_len(out: &mut Vec<u8>, tag: u32) -> usize {
    put_key(out, tag, LEN);
    out.push(0);
    out.len()
}

/// Finishes a field started with [`begin_len`], widening the length prefix if needed.
pub(crate) fn end_len(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len < 0x80 {
        out[start - 1] = len as u8;
        return;
    }
    let mut prefix = Vec::with_capacity(10);
    put_varint(&mut prefix, len as u64);
    out[start - 1] = prefix[0];
    out.splice(start..start, prefix[1..].iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX,
            (-1i64) as u64,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut r = Reader::new(&out);
            assert_eq!(r.varint(), Ok(v));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn bad_varints_are_errors() {
        assert_eq!(Reader::new(&[0x80]).varint(), Err(WireError::Truncated));
        assert_eq!(Reader::new(&[0xff; 11]).varint(), Err(WireError::BadVarint));
        let mut ten = [0xff; 10];
        ten[9] = 0x02;
        assert_eq!(Reader::new(&ten).varint(), Err(WireError::BadVarint));
    }

    #[test]
    fn lengths_beyond_the_data_are_truncation() {
        assert_eq!(Reader::new(&[5, 1, 2]).bytes(), Err(WireError::Truncated));
        let mut huge = Vec::new();
        put_varint(&mut huge, u64::MAX >> 1);
        assert_eq!(Reader::new(&huge).bytes(), Err(WireError::Truncated));
    }

    #[test]
    fn keys_reject_groups_and_zero_tags() {
        assert_eq!(Reader::new(&[0x0b]).key(), Err(WireError::BadWireType(3)));
        assert_eq!(Reader::new(&[0x02]).key(), Err(WireError::BadTag));
        assert_eq!(Reader::new(&[0x0a]).key(), Ok((1, LEN)));
    }

    #[test]
    fn long_length_prefixes_are_widened() {
        let mut out = Vec::new();
        let start = begin_len(&mut out, 2);
        out.extend(std::iter::repeat_n(7u8, 300));
        end_len(&mut out, start);
        let mut r = Reader::new(&out);
        assert_eq!(r.key(), Ok((2, LEN)));
        assert_eq!(r.bytes().map(<[u8]>::len), Ok(300));
        assert!(r.is_empty());
    }
}
