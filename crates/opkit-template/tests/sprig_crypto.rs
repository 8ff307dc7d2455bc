//! Sprig's random cryptography, checked by what it must satisfy rather than by text:
//! certificates parse and carry Sprig's fields and their issuer's valid signature, keys
//! parse as the right kind and size, bcrypt hashes verify. Keys, a CA, AES ciphertexts and
//! `derivePassword` results made by the real helm (`tests/sprig-crypto-helm.txt`) show that
//! opkit reads what Go writes and computes what Go computes.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use opkit_template::{Templates, Value};
use x509_parser::der_parser::asn1_rs::Tag;
use x509_parser::prelude::*;

/// Renders `text` with Sprig and `vars` as `.`.
fn render(text: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let mut t = Templates::new("t");
    t.add_funcs(opkit_template::sprig::functions());
    t.parse("t", text).map_err(|e| e.to_string())?;
    let data: BTreeMap<String, Value> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    t.execute("t", &Value::map(data)).map_err(|e| e.to_string())
}

/// The helm-made values, PEM texts decoded.
fn helm_made() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sprig-crypto-helm.txt"),
    )
    .expect("fixture present");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| {
            let v = match k {
                "ca_cert" | "ca_key" | "ec" | "ed" | "rsa" | "dsa" => {
                    String::from_utf8(B64.decode(v).expect("base64")).expect("PEM text")
                }
                _ => v.to_string(),
            };
            (k.to_string(), v)
        })
        .collect()
}

fn pem_der(text: &str, kind: &str) -> Vec<u8> {
    let begin = format!("-----BEGIN {kind}-----\n");
    let end = format!("-----END {kind}-----\n");
    assert!(text.starts_with(&begin), "a {kind} block: {text}");
    assert!(text.ends_with(&end), "a {kind} block ending: {text}");
    let body: String = text[begin.len()..text.len() - end.len()]
        .lines()
        .inspect(|l| assert!(l.len() <= 64, "Go wraps PEM at 64 columns"))
        .collect();
    B64.decode(body).expect("PEM body is base64")
}

/// Checks that `child` carries a valid signature by `issuer`'s key.
fn assert_signed_by(child: &X509Certificate<'_>, issuer: &X509Certificate<'_>) {
    use ring::signature as sig;
    let alg: &dyn sig::VerificationAlgorithm =
        match child.signature_algorithm.algorithm.to_id_string().as_str() {
            "1.2.840.113549.1.1.11" => &sig::RSA_PKCS1_2048_8192_SHA256,
            "1.2.840.10045.4.3.2" => &sig::ECDSA_P256_SHA256_ASN1,
            "1.3.101.112" => &sig::ED25519,
            other => panic!("unexpected signature algorithm {other}"),
        };
    let key = &issuer.tbs_certificate.subject_pki.subject_public_key.data;
    sig::UnparsedPublicKey::new(alg, key.as_ref())
        .verify(
            child.tbs_certificate.as_ref(),
            child.signature_value.data.as_ref(),
        )
        .expect("signature verifies with the issuer's key");
    assert_eq!(child.issuer(), issuer.subject());
}

fn cn(c: &X509Certificate<'_>) -> String {
    c.subject()
        .iter_common_name()
        .next()
        .and_then(|n| n.as_str().ok())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn generated_ca_signs_generated_certificates_with_sprigs_fields() {
    let out = render(
        r#"{{ $ca := genCA "my-ca" 365 }}{{ $c := genSignedCert "svc" (list "10.0.0.1" "::1") (list "svc.ns" "svc.ns.svc") 30 $ca }}{{ $ca.Cert }}|{{ $ca.Key }}|{{ $c.Cert }}|{{ $c.Key }}|{{ typeOf $c }}|{{ kindOf $c }}"#,
        &[],
    )
    .expect("renders");
    let parts: Vec<&str> = out.split('|').collect();
    let (ca_pem, ca_key, cert_pem, key_pem) = (parts[0], parts[1], parts[2], parts[3]);
    assert_eq!(parts[4..], ["sprig.certificate", "struct"]);
    let ca_der = pem_der(ca_pem, "CERTIFICATE");
    let (_, ca) = parse_x509_certificate(&ca_der).expect("CA parses");
    assert_eq!(cn(&ca), "my-ca");
    let cn_tag = |c: &X509Certificate<'_>| {
        c.subject()
            .iter_common_name()
            .next()
            .map(|n| n.attr_value().tag())
            .expect("a CN")
    };
    assert_eq!(
        cn_tag(&ca),
        Tag::PrintableString,
        "Go's choice for a printable CN"
    );
    assert!(ca.is_ca());
    let ku = ca.key_usage().expect("valid").expect("key usage present");
    assert!(ku.critical && ku.value.key_cert_sign() && ku.value.digital_signature());
    assert_signed_by(&ca, &ca);
    let days =
        (ca.validity().not_after.timestamp() - ca.validity().not_before.timestamp()) / 86_400;
    assert_eq!(days, 365);
    {
        use rsa::pkcs1::DecodeRsaPrivateKey;
        use rsa::traits::PublicKeyParts;
        let key = rsa::RsaPrivateKey::from_pkcs1_der(&pem_der(ca_key, "RSA PRIVATE KEY"))
            .expect("PKCS#1 RSA key");
        assert_eq!(key.size() * 8, 2048);
    }

    let der = pem_der(cert_pem, "CERTIFICATE");
    let (_, cert) = parse_x509_certificate(&der).expect("certificate parses");
    assert_eq!(cn(&cert), "svc");
    let wild_der = pem_der(
        &render(r#"{{ (genSelfSignedCert "*.é" nil nil 1).Cert }}"#, &[]).expect("renders"),
        "CERTIFICATE",
    );
    let (_, wild) = parse_x509_certificate(&wild_der).expect("parses");
    assert_eq!(cn_tag(&wild), Tag::Utf8String, "Go's choice for other CNs");
    assert!(!cert.is_ca());
    assert_signed_by(&cert, &ca);
    let bc = cert
        .basic_constraints()
        .expect("valid")
        .expect("basic constraints present, as Go writes CA:FALSE");
    assert!(bc.critical && !bc.value.ca);
    let ski = |c: &X509Certificate<'_>| {
        c.extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
                _ => None,
            })
    };
    assert_eq!(
        ski(&cert),
        None,
        "Go writes no subject key identifier on a leaf"
    );
    let ca_ski = ski(&ca).expect("the CA has a subject key identifier");
    let key_bits = &ca.tbs_certificate.subject_pki.subject_public_key.data;
    let sha = ring::digest::digest(&ring::digest::SHA256, key_bits);
    assert_eq!(
        ca_ski,
        sha.as_ref()[..20],
        "Go's truncated SHA-256 key identifier"
    );
    let aki = cert
        .extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                a.key_identifier.as_ref().map(|k| k.0.to_vec())
            }
            _ => None,
        });
    assert_eq!(aki, Some(ca_ski), "the leaf names its issuer's key");
    let san = cert
        .subject_alternative_name()
        .expect("valid")
        .expect("SANs present");
    let names: Vec<String> = san
        .value
        .general_names
        .iter()
        .map(|n| match n {
            GeneralName::DNSName(d) => d.to_string(),
            GeneralName::IPAddress(ip) => format!("ip{}", ip.len()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(names, ["svc.ns", "svc.ns.svc", "ip4", "ip16"]);
    let eku = cert
        .extended_key_usage()
        .expect("valid")
        .expect("EKU present");
    assert!(eku.value.server_auth && eku.value.client_auth);
    assert!(cert.serial.bits() <= 128);
    pem_der(key_pem, "RSA PRIVATE KEY");
}

#[test]
fn a_generated_certificate_is_one_certificate_however_often_it_is_read() {
    // Keys are generated when the certificate is first read; every later read, printing
    // and JSON must see that same certificate and key.
    let out = render(
        r#"{{ $ca := genCA "ca" 1 }}{{ $ca.Cert }}|{{ $ca.Key }}|{{ $ca.Cert }}|{{ $ca.Key }}|{{ (toJson $ca | fromJson).Cert }}|{{ $ca }}"#,
        &[],
    )
    .expect("renders");
    let parts: Vec<&str> = out.split('|').collect();
    assert_eq!(parts[0], parts[2]);
    assert_eq!(parts[1], parts[3]);
    assert_eq!(parts[0], parts[4]);
    assert_eq!(parts[5], format!("{{{} {}}}", parts[0], parts[1]));
    pem_der(parts[0], "CERTIFICATE");
}

#[test]
fn certificate_argument_errors_stop_the_call_even_when_its_result_is_never_read() {
    let err = render(
        r#"{{ $ca := genCA "ca" 1 }}{{ $c := genSignedCert "svc" (list "not-an-ip") nil 1 $ca }}done"#,
        &[],
    )
    .expect_err("a bad IP address is the call's error");
    assert!(err.contains("error parsing ip: not-an-ip"), "{err}");
    let err = render(
        r#"{{ $c := genSelfSignedCert "svc" nil (list 1) 1 }}done"#,
        &[],
    )
    .expect_err("a DNS name that is no string is the call's error");
    assert!(
        err.contains("error processing alternate dns name: 1 is not a string"),
        "{err}"
    );
    assert_eq!(
        render(r#"{{ $ca := genCA "unused" 1 }}done"#, &[]).as_deref(),
        Ok("done")
    );
}

#[test]
fn helm_made_keys_sign_certificates_and_come_back_as_go_wrote_them() {
    let h = helm_made();
    let ca_der = pem_der(&h["ca_cert"], "CERTIFICATE");
    let (_, ca) = parse_x509_certificate(&ca_der).expect("helm's CA parses");
    for key in ["ec", "ed", "rsa"] {
        let out = render(
            r#"{{ $ca := buildCustomCert (b64enc .cert) (b64enc .cakey) }}{{ $c := genSignedCertWithKey "k" nil nil 1 $ca .key }}{{ $c.Cert }}|{{ $c.Key }}"#,
            &[("cert", &h["ca_cert"]), ("cakey", &h["ca_key"]), ("key", &h[key])],
        )
        .unwrap_or_else(|e| panic!("{key}: {e}"));
        let (cert_pem, key_pem) = out.split_once('|').expect("two parts");
        assert_eq!(
            key_pem, h[key],
            "{key}: the key is written back as Go wrote it"
        );
        let der = pem_der(cert_pem, "CERTIFICATE");
        let (_, cert) = parse_x509_certificate(&der).expect("certificate parses");
        assert_signed_by(&cert, &ca);
        let self_signed = render(
            r#"{{ (genSelfSignedCertWithKey "self" nil (list "a.b") 2 .key).Cert }}"#,
            &[("key", &h[key])],
        )
        .unwrap_or_else(|e| panic!("{key}: {e}"));
        let der = pem_der(&self_signed, "CERTIFICATE");
        let (_, cert) = parse_x509_certificate(&der).expect("self-signed parses");
        assert_signed_by(&cert, &cert);
        let ca2 = render(
            r#"{{ $c := genCAWithKey "ca2" 1 .key }}{{ eq $c.Key .key }}"#,
            &[("key", &h[key])],
        )
        .unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(ca2, "true");
    }
    let dsa = render(
        r#"{{ genSelfSignedCertWithKey "self" nil nil 2 .key }}"#,
        &[("key", &h["dsa"])],
    )
    .expect_err("DSA keys cannot sign");
    assert!(
        dsa.contains("error calling genSelfSignedCertWithKey: "),
        "{dsa}"
    );
}

#[test]
fn generated_private_keys_parse_as_their_kind() {
    let out = render(
        r#"{{ genPrivateKey "ecdsa" }}|{{ genPrivateKey "ed25519" }}|{{ genPrivateKey "foo" }}"#,
        &[],
    )
    .expect("renders");
    let parts: Vec<&str> = out.split('|').collect();
    let ec = pem_der(parts[0], "EC PRIVATE KEY");
    assert_eq!(ec.len(), 121, "SEC 1 P-256 key with curve and public point");
    let ed = pem_der(parts[1], "PRIVATE KEY");
    assert_eq!(ed.len(), 48, "PKCS#8 v1 ed25519 key without the public key");
    ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&ed).expect("ring reads it");
    assert_eq!(parts[2], "Unknown type foo");
    // Keys opkit writes are keys opkit reads.
    let again = render(
        r#"{{ $k := genPrivateKey "ecdsa" }}{{ eq (genCAWithKey "x" 1 $k).Key $k }}"#,
        &[],
    )
    .expect("renders");
    assert_eq!(again, "true");
}

#[test]
fn rsa_and_dsa_keys_have_sprigs_sizes() {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::traits::PublicKeyParts;
    let out = render(
        r#"{{ genPrivateKey "rsa" }}|{{ genPrivateKey "dsa" }}"#,
        &[],
    )
    .expect("renders");
    let (rsa_pem, dsa_pem) = out.split_once('|').expect("two keys");
    let key = rsa::RsaPrivateKey::from_pkcs1_der(&pem_der(rsa_pem, "RSA PRIVATE KEY"))
        .expect("PKCS#1 RSA key");
    assert_eq!(key.size() * 8, 4096);
    let dsa = pem_der(dsa_pem, "DSA PRIVATE KEY");
    // SEQUENCE { 0, P (2048 bits), Q (256 bits), G, Y, X }
    assert!(dsa.len() > 800, "{}", dsa.len());
    let reread = render(
        r#"{{ $c := genCAWithKey "x" 1 .key }}"#,
        &[("key", dsa_pem)],
    )
    .expect_err("DSA cannot sign, but parses");
    assert!(
        reread.contains("does not implement crypto.Signer"),
        "{reread}"
    );
}

#[test]
fn bcrypt_and_htpasswd_hashes_verify() {
    let out = render(
        r#"{{ bcrypt "s3cret" }}|{{ htpasswd "admin" "pa:ss" }}|{{ htpasswd "a:b" "x" }}|{{ bcrypt (repeat 73 "x") }}"#,
        &[],
    )
    .expect("renders");
    let parts: Vec<&str> = out.split('|').collect();
    assert!(
        parts[0].starts_with("$2a$10$") && parts[0].len() == 60,
        "{}",
        parts[0]
    );
    assert!(bcrypt::verify("s3cret", parts[0]).expect("a bcrypt hash"));
    let (user, hash) = parts[1].split_once(':').expect("user:hash");
    assert_eq!(user, "admin");
    assert!(bcrypt::verify("pa:ss", hash).expect("a bcrypt hash"));
    assert_eq!(parts[2], "invalid username: a:b");
    assert_eq!(
        parts[3],
        "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
    );
}

#[test]
fn aes_round_trips_and_decrypts_what_helm_encrypted() {
    let h = helm_made();
    for (cipher, password, plain) in [
        (
            "aes",
            "s3cret-passw0rd",
            "hello from helm, a text longer than one block",
        ),
        ("aes2", "", "x"),
        (
            "aes3",
            "a-very-long-password-that-is-longer-than-thirty-two-bytes",
            "sixteen byte msg",
        ),
    ] {
        let got = render(
            r#"{{ decryptAES .password .cipher }}"#,
            &[("password", password), ("cipher", &h[cipher])],
        )
        .expect("decrypts");
        assert_eq!(got, plain, "{cipher}");
    }
    let out = render(
        r#"{{ $c := encryptAES "k" "round trip" }}{{ decryptAES "k" $c }}|{{ len $c }}|{{ encryptAES "k" "" }}|{{ decryptAES "k" "" }}"#,
        &[],
    )
    .expect("renders");
    assert_eq!(out, "round trip|44||");
}

#[test]
fn derive_password_matches_helm() {
    let h = helm_made();
    let got = render(
        r#"{{ derivePassword 1 "long" "password" "user" "example.com" }}|{{ derivePassword 2 "maximum" "p@ss" "ünïcode" "site.org" }}|{{ derivePassword 0 "pin" "" "" "" }}|{{ derivePassword 7 "basic" "x" "y" "z" }}|{{ derivePassword 3 "medium" "pw" "me" "a.b" }} {{ derivePassword 3 "short" "pw" "me" "a.b" }}|{{ derivePassword 1 "nope" "a" "b" "c" }}"#,
        &[],
    )
    .expect("renders");
    let want = format!(
        "{}|{}|{}|{}|{}|cannot find password template nope",
        h["dp1"], h["dp2"], h["dp3"], h["dp4"], h["dp5"]
    );
    assert_eq!(got, want);
}
