//! Sprig's cryptographic functions: `bcrypt`, `htpasswd`, `derivePassword`,
//! `encryptAES`/`decryptAES`, `genPrivateKey`, `genCA`, `genSelfSignedCert`, `genSignedCert`
//! (and their `WithKey` forms) and `buildCustomCert`, with Sprig 3.3's outputs and error
//! texts. Keys are written as Go writes them (`RSA PRIVATE KEY` in PKCS#1, `EC PRIVATE KEY`
//! in SEC 1 with the curve and public key, `DSA PRIVATE KEY`, ed25519 as PKCS#8
//! `PRIVATE KEY`); certificates follow Sprig's template (random 128-bit serial, CN only,
//! key usages, server and client auth, basic constraints), built with rcgen and signed with
//! SHA-256 (RSA, P-256), SHA-384 (P-384) or ed25519, as Go signs them. Certificates are
//! Sprig's `certificate` struct: fields `.Cert` and `.Key`.

use std::sync::{Arc, LazyLock};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngCore;

use super::gotime::GoTime;
use super::{Funcs, R, fail, n, s};
use crate::ParamType::{Int, List, String as Str};
use crate::{FuncError, Function, Member, Object, ParamType, Value};

/// Sprig's `certificate` as a parameter type.
const CERT: ParamType = ParamType::Struct("sprig.certificate");

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "bcrypt",
        Function::new(&[Str], |a| Ok(Value::from(bcrypt(s(a, 0))))),
    );
    m.add(
        "htpasswd",
        Function::new(&[Str, Str], |a| {
            let user = s(a, 0);
            Ok(Value::from(if user.contains(':') {
                format!("invalid username: {user}")
            } else {
                format!("{user}:{}", bcrypt(s(a, 1)))
            }))
        }),
    );
    m.add(
        "derivePassword",
        Function::new(&[ParamType::Uint32, Str, Str, Str, Str], |a| {
            let counter = n(a, 0) as u32;
            derive_password(counter, s(a, 1), s(a, 2), s(a, 3), s(a, 4)).map(Value::from)
        }),
    );
    m.add(
        "encryptAES",
        Function::new(&[Str, Str], |a| encrypt_aes(s(a, 0), s(a, 1))),
    );
    m.add(
        "decryptAES",
        Function::new(&[Str, Str], |a| decrypt_aes(s(a, 0), s(a, 1))),
    );
    m.add(
        "genPrivateKey",
        Function::new(&[Str], |a| Ok(Value::from(gen_private_key(s(a, 0))))),
    );
    m.add(
        "buildCustomCert",
        Function::new(&[Str, Str], |a| build_custom_cert(s(a, 0), s(a, 1))),
    );
    // The generating forms defer the key and the certificate (see `Certificate`); the
    // `WithKey` forms build at once.
    m.add(
        "genCA",
        Function::new(&[Str, Int], |a| {
            ca_cert(s(a, 0), n(a, 1), fresh_key).map(Certificate::deferred)
        }),
    );
    m.add(
        "genCAWithKey",
        Function::new(&[Str, Int, Str], |a| {
            let key = key_from_pem(s(a, 2))?;
            built(ca_cert(s(a, 0), n(a, 1), move || Ok(key))?)
        }),
    );
    m.add(
        "genSelfSignedCert",
        Function::new(&[Str, List, List, Int], |a| {
            self_signed(a, fresh_key).map(Certificate::deferred)
        }),
    );
    m.add(
        "genSelfSignedCertWithKey",
        Function::new(&[Str, List, List, Int, Str], |a| {
            let key = key_from_pem(s(a, 4))?;
            built(self_signed(a, move || Ok(key))?)
        }),
    );
    m.add(
        "genSignedCert",
        Function::new(&[Str, List, List, Int, CERT], |a| {
            signed(a, fresh_key).map(Certificate::deferred)
        }),
    );
    m.add(
        "genSignedCertWithKey",
        Function::new(&[Str, List, List, Int, CERT, Str], |a| {
            let key = key_from_pem(s(a, 5))?;
            built(signed(a, move || Ok(key))?)
        }),
    );
}

// ---------------------------------------------------------------------------------------
// bcrypt, derivePassword, AES

/// Sprig's `bcrypt`: Go's `bcrypt.GenerateFromPassword` at the default cost (10), `$2a$`.
fn bcrypt(input: &str) -> String {
    if input.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    match bcrypt::hash_with_result(input, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_characters(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// Sprig's `derivePassword`: the Master Password algorithm (scrypt N=32768 r=8 p=2 over
/// the user's salt, then HMAC-SHA256 of the site and counter picks the template and its
/// characters).
fn derive_password(
    counter: u32,
    kind: &str,
    password: &str,
    user: &str,
    site: &str,
) -> Result<String, FuncError> {
    let Some(templates) = password_templates(kind) else {
        return Ok(format!("cannot find password template {kind}"));
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend((user.len() as u32).to_be_bytes());
    salt.extend(user.as_bytes());
    let params = scrypt::Params::new(15, 8, 2, 64)
        .map_err(|e| FuncError::new(format!("failed to derive password: {e}")))?;
    let mut key = [0u8; 64];
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key) {
        return Ok(format!("failed to derive password: {e}"));
    }
    let mut msg = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    msg.extend((site.len() as u32).to_be_bytes());
    msg.extend(site.as_bytes());
    msg.extend(counter.to_be_bytes());
    let hkey = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let seed = ring::hmac::sign(&hkey, &msg);
    let seed = seed.as_ref();
    let template = templates[usize::from(seed[0]) % templates.len()];
    Ok(template
        .bytes()
        .enumerate()
        .map(|(i, c)| {
            let chars = template_characters(c);
            char::from(chars[usize::from(seed[i + 1]) % chars.len()])
        })
        .collect())
}

/// The AES-256 key Sprig derives from a password: its bytes, cut or zero-padded to 32.
fn aes_key(password: &str) -> aes::Aes256 {
    use aes::cipher::KeyInit;
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    aes::Aes256::new(&key.into())
}

/// Sprig's `encryptAES`: AES-256-CBC with PKCS#7 padding, random IV first, base64.
fn encrypt_aes(password: &str, plaintext: &str) -> R {
    use aes::cipher::BlockEncrypt;
    if plaintext.is_empty() {
        return Ok(Value::from(""));
    }
    let cipher = aes_key(password);
    let mut content = plaintext.as_bytes().to_vec();
    let pad = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(pad as u8, pad));
    let mut out = vec![0u8; 16];
    rand::rng().fill_bytes(&mut out);
    let mut prev: [u8; 16] = out[..16].try_into().unwrap_or([0; 16]);
    for chunk in content.chunks(16) {
        let mut block = [0u8; 16];
        for (i, b) in chunk.iter().enumerate() {
            block[i] = b ^ prev[i];
        }
        let mut ga = block.into();
        cipher.encrypt_block(&mut ga);
        prev = ga.into();
        out.extend(prev);
    }
    Ok(Value::from(B64.encode(out)))
}

/// Sprig's `decryptAES`, with Go's panics for short or ragged input.
fn decrypt_aes(password: &str, crypt64: &str) -> R {
    use aes::cipher::BlockDecrypt;
    if crypt64.is_empty() {
        return Ok(Value::from(""));
    }
    let crypt = go_base64_decode(crypt64)?;
    let cipher = aes_key(password);
    if crypt.len() < 16 {
        return fail(format!(
            "runtime error: slice bounds out of range [:16] with capacity {}",
            crypt.len()
        ));
    }
    let (iv, body) = crypt.split_at(16);
    if body.len() % 16 != 0 {
        return fail("crypto/cipher: input not full blocks");
    }
    let mut prev: [u8; 16] = iv.try_into().unwrap_or([0; 16]);
    let mut plain = Vec::with_capacity(body.len());
    for chunk in body.chunks(16) {
        let mut ga = <[u8; 16]>::try_from(chunk).unwrap_or([0; 16]).into();
        cipher.decrypt_block(&mut ga);
        let block: [u8; 16] = ga.into();
        plain.extend(block.iter().zip(prev).map(|(b, p)| b ^ p));
        prev = chunk.try_into().unwrap_or([0; 16]);
    }
    let Some(&last) = plain.last() else {
        return fail("runtime error: index out of range [-1]");
    };
    let keep = plain.len() as i64 - i64::from(last);
    if keep < 0 {
        return fail(format!(
            "runtime error: slice bounds out of range [:{keep}]"
        ));
    }
    plain.truncate(keep as usize);
    Ok(Value::from(String::from_utf8_lossy(&plain).into_owned()))
}

/// Go's `base64.StdEncoding.DecodeString` with its error text.
fn go_base64_decode(text: &str) -> Result<Vec<u8>, FuncError> {
    B64.decode(text).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(i, _)
            | base64::DecodeError::InvalidLastSymbol(i, _) => i,
            _ => text.trim_end_matches('=').len().min(text.len()),
        };
        FuncError::new(format!("illegal base64 data at input byte {at}"))
    })
}

// ---------------------------------------------------------------------------------------
// DER and PEM, the small parts of them Sprig's key formats need

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// A DER element: tag, length, content.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A non-negative DER INTEGER from big-endian magnitude bytes.
fn uint(be: &[u8]) -> Vec<u8> {
    let trimmed: Vec<u8> = be.iter().copied().skip_while(|b| *b == 0).collect();
    let mut content = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.first().is_none_or(|b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend(trimmed);
    tlv(0x02, &content)
}

/// Reads one DER element: (tag, content, rest).
fn read_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 8 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The elements of a DER SEQUENCE's content.
fn elements(mut content: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (tag, c, rest) = read_tlv(content)?;
        out.push((tag, c));
        content = rest;
    }
    Some(out)
}

/// Go's `pem.EncodeToMemory`.
fn pem_encode(kind: &str, der: &[u8]) -> String {
    let b64 = B64.encode(der);
    let mut out = format!("-----BEGIN {kind}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {kind}-----\n"));
    out
}

/// Go's `pem.Decode`: the first well-formed block (its type and bytes).
fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let type_end = after.find("-----")?;
        let kind = &after[..type_end];
        let body_start = &after[type_end + 5..];
        let end_marker = format!("-----END {kind}-----");
        if kind.contains('\n')
            || !body_start.starts_with(['\n', '\r'])
            || !body_start.contains(&end_marker)
        {
            rest = &rest[start + 11..];
            continue;
        }
        let body_end = body_start.find(&end_marker).unwrap_or(0);
        let body: String = body_start[..body_end]
            .lines()
            .filter(|l| !l.contains(':'))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        match B64.decode(body) {
            Ok(bytes) => return Some((kind.to_string(), bytes)),
            Err(_) => rest = &rest[start + 11..],
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// keys

#[derive(Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

impl Curve {
    fn oid(self) -> &'static [u8] {
        match self {
            Curve::P256 => OID_P256,
            Curve::P384 => OID_P384,
        }
    }

    fn scalar_len(self) -> usize {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
        }
    }
}

/// A private key of a kind Sprig makes or reads.
enum Key {
    Rsa(Box<rsa::RsaPrivateKey>),
    /// An ECDSA key: the curve, the private scalar and the uncompressed public point.
    Ec {
        curve: Curve,
        private: Vec<u8>,
        public: Vec<u8>,
    },
    Ed25519([u8; 32]),
    /// A DSA key as Go keeps it: P, Q, G, Y, X (big-endian), unchecked.
    Dsa([Vec<u8>; 5]),
}

fn key_error(e: impl std::fmt::Display) -> FuncError {
    FuncError::new(format!("failed to generate private key: {e}"))
}

impl Key {
    /// A new RSA key, as the certificate functions make them (2048 bits).
    fn rsa(bits: usize) -> Result<Key, FuncError> {
        Key::new_rsa(bits).map_err(|e| FuncError::new(format!("error generating rsa key: {e}")))
    }

    fn new_rsa(bits: usize) -> Result<Key, rsa::Error> {
        super::rsakey::generate(bits).map(|k| Key::Rsa(Box::new(k)))
    }

    /// Sprig's `generatePrivateKey`: RSA 4096, DSA L2048N256, ECDSA P-256 or ed25519; the
    /// error is the text Sprig returns in the key's place.
    fn generate(kind: &str) -> Result<Key, String> {
        let rng = ring::rand::SystemRandom::new();
        match kind {
            "" | "rsa" => Key::new_rsa(4096).map_err(|e| key_error(e).0),
            "dsa" => {
                let mut rng = rsa::rand_core::OsRng;
                let components = dsa::Components::generate(&mut rng, dsa::KeySize::DSA_2048_256);
                let k = dsa::SigningKey::generate(&mut rng, components);
                let (v, c) = (k.verifying_key(), k.verifying_key().components());
                Ok(Key::Dsa([
                    c.p().to_bytes_be(),
                    c.q().to_bytes_be(),
                    c.g().to_bytes_be(),
                    v.y().to_bytes_be(),
                    k.x().to_bytes_be(),
                ]))
            }
            "ecdsa" => {
                let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
                    &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                    &rng,
                )
                .map_err(|e| key_error(e).0)?;
                Key::from_pkcs8(pkcs8.as_ref()).map_err(|e| e.0)
            }
            "ed25519" => {
                let mut seed = [0u8; 32];
                ring::rand::SecureRandom::fill(&rng, &mut seed).map_err(|e| key_error(e).0)?;
                Ok(Key::Ed25519(seed))
            }
            _ => Err(format!("Unknown type {kind}")),
        }
    }

    /// Go's `pemBlockForKey`.
    fn to_pem(&self) -> Result<String, FuncError> {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        Ok(match self {
            Key::Rsa(k) => {
                let der = k
                    .to_pkcs1_der()
                    .map_err(|e| FuncError::new(format!("error pem-encoding key: {e}")))?;
                pem_encode("RSA PRIVATE KEY", der.as_bytes())
            }
            Key::Ec { .. } => pem_encode("EC PRIVATE KEY", &self.sec1()),
            Key::Ed25519(_) => pem_encode("PRIVATE KEY", &self.pkcs8()?),
            Key::Dsa(ints) => {
                let mut parts = vec![uint(&[0])];
                parts.extend(ints.iter().map(|i| uint(i)));
                let der = seq(&parts);
                pem_encode("DSA PRIVATE KEY", &der)
            }
        })
    }

    /// Go's `x509.MarshalECPrivateKey` form.
    fn sec1(&self) -> Vec<u8> {
        let Key::Ec {
            curve,
            private,
            public,
        } = self
        else {
            return Vec::new();
        };
        let mut scalar = vec![0u8; curve.scalar_len().saturating_sub(private.len())];
        scalar.extend(private);
        let mut bits = vec![0u8];
        bits.extend(public);
        seq(&[
            uint(&[1]),
            tlv(0x04, &scalar),
            tlv(0xa0, &tlv(0x06, curve.oid())),
            tlv(0xa1, &tlv(0x03, &bits)),
        ])
    }

    /// The key as PKCS#8 (Go's `MarshalPKCS8PrivateKey` form), for signing with rcgen.
    fn pkcs8(&self) -> Result<Vec<u8>, FuncError> {
        use rsa::pkcs8::EncodePrivateKey;
        Ok(match self {
            Key::Rsa(k) => k
                .to_pkcs8_der()
                .map_err(|e| FuncError::new(format!("x509: {e}")))?
                .as_bytes()
                .to_vec(),
            Key::Ec { curve, .. } => seq(&[
                uint(&[0]),
                seq(&[tlv(0x06, OID_EC), tlv(0x06, curve.oid())]),
                tlv(0x04, &self.sec1()),
            ]),
            Key::Ed25519(seed) => seq(&[
                uint(&[0]),
                seq(&[tlv(0x06, OID_ED25519)]),
                tlv(0x04, &tlv(0x04, seed)),
            ]),
            Key::Dsa(_) => return fail("x509: unsupported public key type: *dsa.PublicKey"),
        })
    }

    /// Go's `x509.ParsePKCS8PrivateKey` for the algorithms Sprig meets.
    fn from_pkcs8(der: &[u8]) -> Result<Key, FuncError> {
        let bad = || FuncError::new("x509: failed to parse private key");
        let (_, content, _) = read_tlv(der).ok_or_else(bad)?;
        let parts = elements(content).ok_or_else(bad)?;
        let [(0x02, _), (0x30, alg), (0x04, private), ..] = parts[..] else {
            return Err(bad());
        };
        let alg = elements(alg).ok_or_else(bad)?;
        match alg.first() {
            Some((0x06, oid)) if *oid == OID_RSA => {
                use rsa::pkcs1::DecodeRsaPrivateKey;
                rsa::RsaPrivateKey::from_pkcs1_der(private)
                    .map(|k| Key::Rsa(Box::new(k)))
                    .map_err(|e| {
                        FuncError::new(format!("x509: failed to parse RSA private key: {e}"))
                    })
            }
            Some((0x06, oid)) if *oid == OID_EC => {
                let curve = alg.get(1).map(|(_, c)| *c);
                Key::from_sec1(private, curve)
            }
            Some((0x06, oid)) if *oid == OID_ED25519 => match read_tlv(private) {
                Some((0x04, seed, _)) if seed.len() == 32 => {
                    Ok(Key::Ed25519(seed.try_into().unwrap_or([0; 32])))
                }
                _ => fail("x509: invalid Ed25519 private key"),
            },
            _ => fail("x509: PKCS#8 wrapping contained private key with unknown algorithm"),
        }
    }

    /// Go's `x509.ParseECPrivateKey` (P-256 and P-384; `curve` from a PKCS#8 wrapper).
    fn from_sec1(der: &[u8], outer_curve: Option<&[u8]>) -> Result<Key, FuncError> {
        let bad =
            |what: &str| FuncError::new(format!("x509: failed to parse EC private key: {what}"));
        let (_, content, _) = read_tlv(der).ok_or_else(|| bad("malformed"))?;
        let parts = elements(content).ok_or_else(|| bad("malformed"))?;
        let mut private = None;
        let mut curve_oid = outer_curve;
        let mut public = None;
        for (tag, c) in parts {
            match tag {
                0x04 => private = Some(c.to_vec()),
                0xa0 => curve_oid = read_tlv(c).map(|(_, oid, _)| oid),
                0xa1 => {
                    public =
                        read_tlv(c).map(|(_, bits, _)| bits.get(1..).unwrap_or_default().to_vec())
                }
                _ => {}
            }
        }
        let curve = match curve_oid {
            Some(oid) if oid == OID_P256 => Curve::P256,
            Some(oid) if oid == OID_P384 => Curve::P384,
            _ => return Err(bad("unknown elliptic curve")),
        };
        let private = private.ok_or_else(|| bad("malformed"))?;
        let public = public.ok_or_else(|| bad("missing public key"))?;
        Ok(Key::Ec {
            curve,
            private,
            public,
        })
    }

    /// An rcgen key pair for the certificate's subject (`signing`: for its issuer), with
    /// Go's `CreateCertificate` errors for DSA keys.
    fn key_pair(&self, signing: bool) -> Result<rcgen::KeyPair, FuncError> {
        let created =
            |e: &dyn std::fmt::Display| FuncError::new(format!("error creating certificate: {e}"));
        if signing && matches!(self, Key::Dsa(_)) {
            return Err(created(
                &"x509: certificate private key does not implement crypto.Signer",
            ));
        }
        let der = self.pkcs8().map_err(|e| created(&e))?;
        rcgen::KeyPair::try_from(der.as_slice()).map_err(|e| created(&e))
    }
}

/// Sprig's `genPrivateKey`: the PEM text, or a message in its place.
fn gen_private_key(kind: &str) -> String {
    match Key::generate(kind) {
        Ok(key) => key.to_pem().unwrap_or_else(|e| e.0),
        Err(msg) => msg,
    }
}

/// Sprig's `parsePrivateKeyPEM`.
fn parse_private_key_pem(text: &str) -> Result<Key, String> {
    let Some((kind, der)) = pem_decode(text) else {
        return Err("no PEM data in input".into());
    };
    if kind == "PRIVATE KEY" {
        return Key::from_pkcs8(&der).map_err(|e| format!("decoding PEM as PKCS#8: {e}"));
    }
    let Some(alg) = kind.strip_suffix(" PRIVATE KEY") else {
        return Err(format!("no private key data in PEM block of type {kind}"));
    };
    match alg {
        "RSA" => {
            use rsa::pkcs1::DecodeRsaPrivateKey;
            rsa::RsaPrivateKey::from_pkcs1_der(&der)
                .map(|k| Key::Rsa(Box::new(k)))
                .map_err(|e| format!("parsing RSA private key from PEM: x509: {e}"))
        }
        "EC" => {
            Key::from_sec1(&der, None).map_err(|e| format!("parsing EC private key from PEM: {e}"))
        }
        "DSA" => {
            let syntax = || "parsing DSA private key from PEM: asn1: syntax error: data truncated";
            let (_, content, _) = read_tlv(&der).ok_or_else(syntax)?;
            let parts = elements(content).ok_or_else(syntax)?;
            let ints: Vec<Vec<u8>> = parts
                .iter()
                .filter(|(t, _)| *t == 0x02)
                .map(|(_, c)| c.to_vec())
                .collect();
            match <[Vec<u8>; 6]>::try_from(ints) {
                Ok([_, p, q, g, y, x]) => Ok(Key::Dsa([p, q, g, y, x])),
                Err(ints) if ints.len() < 6 && ints.len() == parts.len() => Err(
                    "parsing DSA private key from PEM: asn1: syntax error: sequence truncated"
                        .into(),
                ),
                Err(_) => Err("parsing DSA private key from PEM: asn1: structure error".into()),
            }
        }
        _ => Err(format!("invalid private key type {kind}")),
    }
}

/// A `WithKey` function's key argument.
fn key_from_pem(text: &str) -> Result<Key, FuncError> {
    parse_private_key_pem(text).map_err(|e| FuncError::new(format!("parsing private key: {e}")))
}

// ---------------------------------------------------------------------------------------
// certificates

/// The PEM texts of a certificate and of its private key.
struct Pem {
    cert: String,
    key: String,
}

/// What builds a certificate whose key is not generated yet.
type Build = Box<dyn FnOnce() -> Result<Pem, FuncError> + Send>;

/// Sprig's `certificate` struct: `.Cert` and `.Key`, PEM text.
///
/// A certificate with a fresh RSA key (`genCA`, `genSelfSignedCert`, `genSignedCert`) is
/// built when a template first looks at it, not when the function is called: generating
/// the key is most of a chart's render, and charts often call `genCA` for a value they
/// never print (Bitnami's charts do so whenever `tls.autoGenerated` is off). The output
/// is the same — a fresh random key either way — and the arguments, the validity period
/// (from the time of the call) and the serial number are fixed at the call, so every
/// argument error is still the call's error.
struct Certificate {
    pem: LazyLock<Result<Pem, FuncError>, Build>,
}

impl Object for Certificate {
    fn type_name(&self) -> String {
        "sprig.certificate".into()
    }

    fn member(&self, name: &str) -> Option<Member> {
        let field = |pick: fn(&Pem) -> &str| match self.pem() {
            Ok(pem) => Member::Field(Value::from(pick(pem))),
            // Only a failure inside a key library ends here; the template stops with it.
            Err(e) => {
                let e = e.clone();
                Member::Method(Function::new(&[], move |_| Err(e.clone())))
            }
        };
        match name {
            "Cert" => Some(field(|p| &p.cert)),
            "Key" => Some(field(|p| &p.key)),
            _ => None,
        }
    }

    fn format(&self) -> String {
        match self.pem() {
            Ok(pem) => format!("{{{} {}}}", pem.cert, pem.key),
            Err(e) => format!("{{{} }}", e.0),
        }
    }

    /// The struct's exported fields, as Go's `encoding/json` writes a struct.
    fn json(&self) -> Option<Result<Value, String>> {
        Some(match self.pem() {
            Ok(pem) => Ok(Value::map(
                [
                    ("Cert".to_string(), Value::from(pem.cert.as_str())),
                    ("Key".to_string(), Value::from(pem.key.as_str())),
                ]
                .into_iter()
                .collect(),
            )),
            Err(e) => Err(e.0.clone()),
        })
    }
}

impl Certificate {
    /// A certificate built when first looked at.
    fn deferred(build: impl FnOnce() -> Result<Pem, FuncError> + Send + 'static) -> Value {
        let build: Build = Box::new(build);
        Value::Object(Arc::new(Certificate {
            pem: LazyLock::new(build),
        }))
    }

    /// A certificate already built.
    fn ready(pem: Pem) -> Value {
        Certificate::deferred(move || Ok(pem))
    }

    /// The PEM texts, built on first use.
    fn pem(&self) -> Result<&Pem, &FuncError> {
        self.pem.as_ref()
    }

    /// The certificate inside a value the engine checked to be one.
    fn of(v: &Value) -> Option<&Certificate> {
        super::host::<Certificate>(v)
    }
}

/// Sprig's `getBaseCertTemplate`.
fn base_params(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
) -> Result<rcgen::CertificateParams, FuncError> {
    use rcgen::{DnType, ExtendedKeyUsagePurpose as Eku, KeyUsagePurpose as Ku, SanType};
    let mut params = rcgen::CertificateParams::default();
    let mut names = Vec::new();
    if let Value::List(list) = dns {
        for d in list.iter() {
            let Value::String(name) = d else {
                return fail(format!(
                    "error processing alternate dns name: {} is not a string",
                    crate::gofmt::sprint_value(d)
                ));
            };
            names.push(SanType::DnsName(name.to_string().try_into().map_err(
                |e| FuncError::new(format!("error creating certificate: {e}")),
            )?));
        }
    }
    let mut addrs = Vec::new();
    if let Value::List(list) = ips {
        for ip in list.iter() {
            let Value::String(text) = ip else {
                return fail(format!(
                    "error parsing ip: {} is not a string",
                    crate::gofmt::sprint_value(ip)
                ));
            };
            let addr: std::net::IpAddr = text
                .parse()
                .map_err(|_| FuncError::new(format!("error parsing ip: {text}")))?;
            addrs.push(SanType::IpAddress(addr));
        }
    }
    // Go writes DNS names before IP addresses, whatever the argument order.
    params.subject_alt_names = names.into_iter().chain(addrs).collect();
    let mut serial = [0u8; 16];
    rand::rng().fill_bytes(&mut serial);
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    params.distinguished_name = rcgen::DistinguishedName::new();
    // Go's asn1 writes a PrintableString when every character allows it, else UTF8String.
    let cn_value = match rcgen::string::PrintableString::try_from(cn) {
        Ok(p) => rcgen::DnValue::PrintableString(p),
        Err(_) => rcgen::DnValue::Utf8String(cn.to_string()),
    };
    params.distinguished_name.push(DnType::CommonName, cn_value);
    let now = GoTime::now();
    let start = time::OffsetDateTime::from_unix_timestamp(now.unix)
        .map_err(|e| FuncError::new(format!("error creating certificate: {e}")))?;
    // Go multiplies durations in int64 nanoseconds, wrapping on overflow.
    let valid_ns = 86_400_000_000_000i64.wrapping_mul(days);
    params.not_before = start;
    params.not_after = start + time::Duration::nanoseconds(valid_ns);
    params.key_usages = vec![Ku::KeyEncipherment, Ku::DigitalSignature];
    params.extended_key_usages = vec![Eku::ServerAuth, Eku::ClientAuth];
    // Go writes `CA:FALSE` and, on a leaf, no subject key identifier (rcgen's
    // `ExplicitNoCa` would add one).
    params.is_ca = rcgen::IsCa::NoCa;
    let mut not_ca = rcgen::CustomExtension::from_oid_content(&[2, 5, 29, 19], vec![0x30, 0x00]);
    not_ca.set_criticality(true);
    params.custom_extensions = vec![not_ca];
    Ok(params)
}

/// Go's subject key identifier: SHA-256 of the public key bits, cut to 160 bits.
fn subject_key_id(pair: &rcgen::KeyPair) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, pair.public_key_raw()).as_ref()[..20].to_vec()
}

/// Sprig's `getCertAndKey` for a self-signed certificate.
fn self_signed_pem(params: &rcgen::CertificateParams, key: &Key) -> Result<Pem, FuncError> {
    let pair = key.key_pair(true)?;
    let cert = params
        .self_signed(&pair)
        .map_err(|e| FuncError::new(format!("error creating certificate: {e}")))?;
    Ok(Pem {
        cert: pem_encode("CERTIFICATE", cert.der()),
        key: key.to_pem()?,
    })
}

/// A certificate built now: its errors are the call's.
fn built(build: Build) -> R {
    build().map(Certificate::ready)
}

/// A fresh RSA-2048 key, as Sprig's generating functions make it.
fn fresh_key() -> Result<Key, FuncError> {
    Key::rsa(2048)
}

/// Sprig's `generateCertificateAuthorityWithKeyInternal`: the certificate's parameters
/// now, the certificate once `key` gives its key.
fn ca_cert(
    cn: &str,
    days: i64,
    key: impl FnOnce() -> Result<Key, FuncError> + Send + 'static,
) -> Result<Build, FuncError> {
    let mut params = base_params(cn, &Value::Nil, &Value::Nil, days)?;
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyEncipherment,
        rcgen::KeyUsagePurpose::DigitalSignature,
        rcgen::KeyUsagePurpose::KeyCertSign,
    ];
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.custom_extensions.clear();
    Ok(Box::new(move || {
        let key = key()?;
        params.key_identifier_method =
            rcgen::KeyIdMethod::PreSpecified(subject_key_id(&key.key_pair(true)?));
        self_signed_pem(&params, &key)
    }))
}

/// Sprig's `generateSelfSignedCertificateWithKeyInternal` (`cn, ips, dns, days, …`).
fn self_signed(
    a: &[Value],
    key: impl FnOnce() -> Result<Key, FuncError> + Send + 'static,
) -> Result<Build, FuncError> {
    let params = base_params(s(a, 0), &a[1], &a[2], n(a, 3))?;
    Ok(Box::new(move || self_signed_pem(&params, &key()?)))
}

/// Sprig's `generateSignedCertificateWithKeyInternal` (`cn, ips, dns, days, ca, …`): the
/// issuer is read and checked now (building the CA if it was deferred).
fn signed(
    a: &[Value],
    key: impl FnOnce() -> Result<Key, FuncError> + Send + 'static,
) -> Result<Build, FuncError> {
    let ca =
        Certificate::of(&a[4]).ok_or_else(|| FuncError::new("unable to decode certificate"))?;
    let ca = ca.pem().map_err(Clone::clone)?;
    let Some((_, ca_der)) = pem_decode(&ca.cert) else {
        return fail("unable to decode certificate");
    };
    if let Err(e) = x509_parser::parse_x509_certificate(&ca_der) {
        return fail(format!(
            "error parsing certificate: decodedSignerCert.Bytes: x509: {e}"
        ));
    }
    let signer = parse_private_key_pem(&ca.key)
        .map_err(|e| FuncError::new(format!("error parsing private key: {e}")))?;
    let mut params = base_params(s(a, 0), &a[1], &a[2], n(a, 3))?;
    params.use_authority_key_identifier_extension = true;
    let signer_pair = signer.key_pair(true)?;
    let issuer = rcgen::Issuer::from_ca_cert_der(&ca_der.as_slice().into(), signer_pair)
        .map_err(|e| FuncError::new(format!("error creating certificate: {e}")))?;
    Ok(Box::new(move || {
        let key = key()?;
        let pair = key.key_pair(false)?;
        let cert = params
            .signed_by(&pair, &issuer)
            .map_err(|e| FuncError::new(format!("error creating certificate: {e}")))?;
        Ok(Pem {
            cert: pem_encode("CERTIFICATE", cert.der()),
            key: key.to_pem()?,
        })
    }))
}

/// Sprig's `buildCustomCertificate`: a certificate struct from base64 PEM texts, checked.
fn build_custom_cert(b64cert: &str, b64key: &str) -> R {
    let cert = B64
        .decode(b64cert)
        .map_err(|_| FuncError::new("unable to decode base64 certificate"))?;
    let key = B64
        .decode(b64key)
        .map_err(|_| FuncError::new("unable to decode base64 private key"))?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let Some((_, der)) = pem_decode(&cert) else {
        return fail("unable to decode certificate");
    };
    if let Err(e) = x509_parser::parse_x509_certificate(&der) {
        return fail(format!(
            "error parsing certificate: decodedCert.Bytes: x509: {e}"
        ));
    }
    parse_private_key_pem(&key)
        .map_err(|e| FuncError::new(format!("error parsing private key: {e}")))?;
    Ok(Certificate::ready(Pem { cert, key }))
}
