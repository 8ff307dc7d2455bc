//! Sprig's encodings and digests: `b64enc`/`b64dec`, `b32enc`/`b32dec` (RFC 4648 with
//! padding; a decoding error is returned as the string, as Sprig does, in Go's words),
//! `sha1sum`, `sha256sum`, `sha512sum` (hex), `adler32sum` (decimal), `uuidv4`, `randBytes`
//! (that many random bytes, base64-encoded).

use std::fmt::Write;

use base64::Engine;

use super::{Funcs, s};
use crate::ParamType::String as Str;
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "b64enc",
        str_fn(|x| base64::engine::general_purpose::STANDARD.encode(x)),
    );
    m.add(
        "b64dec",
        str_fn(|x| match b64_decode(x.as_bytes()) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(at) => format!("illegal base64 data at input byte {at}"),
        }),
    );
    m.add("b32enc", str_fn(|x| b32_encode(x.as_bytes())));
    m.add(
        "b32dec",
        str_fn(|x| {
            let stripped: Vec<u8> = x.bytes().filter(|b| *b != b'\r' && *b != b'\n').collect();
            match b32_decode(&stripped) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(at) => format!("illegal base32 data at input byte {at}"),
            }
        }),
    );
    m.add(
        "sha1sum",
        str_fn(|x| digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, x)),
    );
    m.add("sha256sum", str_fn(|x| digest(&ring::digest::SHA256, x)));
    m.add("sha512sum", str_fn(|x| digest(&ring::digest::SHA512, x)));
    m.add("adler32sum", str_fn(|x| adler32(x.as_bytes()).to_string()));
    m.add(
        "randBytes",
        Function::new(&[crate::ParamType::Int], |a| {
            let count = super::n(a, 0);
            if count < 0 {
                return super::fail("runtime error: makeslice: len out of range");
            }
            super::bound("randBytes", count as u64)?;
            let mut buf = vec![0u8; count as usize];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buf)
                .map_err(|_| crate::FuncError::new("crypto/rand: no randomness available"))?;
            Ok(Value::from(
                base64::engine::general_purpose::STANDARD.encode(buf),
            ))
        }),
    );
    m.add(
        "uuidv4",
        Function::new(&[], |_| Ok(Value::from(uuid::Uuid::new_v4().to_string()))),
    );
}

fn str_fn(f: impl Fn(&str) -> String + Send + Sync + 'static) -> Function {
    Function::new(&[Str], move |a| Ok(Value::from(f(s(a, 0)))))
}

fn digest(alg: &'static ring::digest::Algorithm, x: &str) -> String {
    let d = ring::digest::digest(alg, x.as_bytes());
    let mut out = String::with_capacity(d.as_ref().len() * 2);
    for b in d.as_ref() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Go's `hash/adler32` checksum.
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn lookup(alphabet: &[u8], c: u8) -> Option<u8> {
    alphabet.iter().position(|x| *x == c).map(|p| p as u8)
}

/// Go's `base64.StdEncoding.DecodeString`; the error is the offset Go reports.
fn b64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut trailing = None;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = lookup(B64, c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(si - 1);
            }
            if j == 2 {
                while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                    si += 1;
                }
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing = Some(si);
            }
            dlen = j;
            break;
        }
        let val = (u32::from(dbuf[0]) << 18)
            | (u32::from(dbuf[1]) << 12)
            | (u32::from(dbuf[2]) << 6)
            | u32::from(dbuf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(at) = trailing {
            return Err(at);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
    Ok(out)
}

/// Go's `base32.StdEncoding.EncodeToString`.
fn b32_encode(src: &[u8]) -> String {
    let mut out = String::with_capacity(src.len().div_ceil(5) * 8);
    for chunk in src.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < symbols {
                out.push(B32[((bits >> (35 - 5 * i)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's base32 `decode` over input without newlines; the error is Go's offset.
fn b32_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    let olen = src.len();
    let mut rest = src;
    let mut out = Vec::new();
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut dbuf = [0u8; 8];
        let mut dlen = 8;
        let mut j = 0;
        while j < 8 {
            if rest.is_empty() {
                return Err(olen - j);
            }
            let c = rest[0];
            rest = &rest[1..];
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 7 {
                    return Err(olen);
                }
                for k in 0..7 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(olen - rest.len() + k - 1);
                    }
                }
                dlen = j;
                end = true;
                if matches!(dlen, 1 | 3 | 6) {
                    return Err(olen - rest.len() - 1);
                }
                break;
            }
            match lookup(B32, c) {
                Some(v) => dbuf[j] = v,
                None => return Err(olen - rest.len() - 1),
            }
            j += 1;
        }
        let d = dbuf;
        let all = [
            (d[0] << 3) | (d[1] >> 2),
            (d[1] << 6) | (d[2] << 1) | (d[3] >> 4),
            (d[3] << 4) | (d[4] >> 1),
            (d[4] << 7) | (d[5] << 2) | (d[6] >> 3),
            (d[6] << 5) | d[7],
        ];
        let n = match dlen {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&all[..n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decoding_reports_go_offsets() {
        assert_eq!(b64_decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(b64_decode(b"aGVsbG8"), Err(4));
        assert_eq!(b64_decode(b"a!"), Err(1));
        assert_eq!(b64_decode(b"aGVsbG8=x"), Err(8));
    }

    #[test]
    fn base32_round_trips() {
        assert_eq!(b32_encode(b"hello"), "NBSWY3DP");
        assert_eq!(b32_encode(b"hi"), "NBUQ====");
        assert_eq!(b32_decode(b"NBUQ====").unwrap(), b"hi");
        assert_eq!(adler32(b"hello"), 103_547_413);
    }
}
