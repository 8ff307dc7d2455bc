//! RSA key generation for the certificate functions (`genCA`, `genSignedCert`,
//! `genSelfSignedCert`, `genPrivateKey`). The `rsa` crate's generator took ~250 ms for a
//! 2048-bit key (Go's takes ~65 ms), most of a Bitnami chart's render. Here the prime search
//! sieves consecutive odd candidates by the small primes (remainders computed once per
//! starting point), runs Miller–Rabin with `num-bigint`'s Montgomery exponentiation only on
//! survivors, and hands the primes to `rsa` to build and check the key. The two primes are
//! searched on two threads.

use std::sync::OnceLock;

use num_bigint::BigUint;
use num_traits::One;
use rsa::rand_core::{OsRng, RngCore};

/// The public exponent Go (and every other generator) uses.
const E: u32 = 65537;
/// Miller–Rabin rounds with random bases; a random 1024-bit composite passes one with
/// probability far below 2^-40, so this bounds the error below 2^-100.
const ROUNDS: usize = 8;
/// Odd candidates tried from one random starting point before drawing another.
const SPAN: u64 = 1 << 16;

/// A new RSA private key of `bits` bits (at least 64) with `e = 65537` and two primes.
pub(crate) fn generate(bits: usize) -> Result<rsa::RsaPrivateKey, rsa::Error> {
    if bits < 64 {
        return Err(rsa::Error::InvalidModulus);
    }
    loop {
        // The two searches are independent: the second runs beside the first.
        let (p, q) = std::thread::scope(|scope| {
            let q = scope.spawn(|| random_prime(bits - bits / 2));
            let p = random_prime(bits / 2);
            // A panic in the search is a bug; it is the caller's panic either way.
            (p, q.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        });
        if p == q {
            continue;
        }
        let n = &p * &q;
        if n.bits() != bits as u64 {
            continue;
        }
        let one = BigUint::one();
        let phi = (&p - &one) * (&q - &one);
        // None when e shares a factor with p-1 or q-1: draw again.
        let Some(d) = BigUint::from(E).modinv(&phi) else {
            continue;
        };
        let conv = |x: &BigUint| rsa::BigUint::from_bytes_be(&x.to_bytes_be());
        return rsa::RsaPrivateKey::from_components(
            conv(&n),
            rsa::BigUint::from(E),
            conv(&d),
            vec![conv(&p), conv(&q)],
        );
    }
}

/// The odd primes below 2000, for sieving.
fn small_primes() -> &'static [u32] {
    static PRIMES: OnceLock<Vec<u32>> = OnceLock::new();
    PRIMES.get_or_init(|| {
        (3..2000u32)
            .step_by(2)
            .filter(|&n| {
                (3..)
                    .step_by(2)
                    .take_while(|d| d * d <= n)
                    .all(|d| n % d != 0)
            })
            .collect()
    })
}

/// A random prime of exactly `bits` bits whose two top bits are set (so that the product
/// of two such primes has all its bits).
fn random_prime(bits: usize) -> BigUint {
    let primes = small_primes();
    let bytes = bits.div_ceil(8);
    let excess = bytes * 8 - bits;
    loop {
        let mut buf = vec![0u8; bytes];
        OsRng.fill_bytes(&mut buf);
        buf[0] &= 0xff >> excess;
        buf[0] |= 0xc0 >> excess;
        if excess == 7 {
            buf[1] |= 0x80;
        }
        buf[bytes - 1] |= 1;
        let base = BigUint::from_bytes_be(&buf);
        let rems: Vec<u64> = primes
            .iter()
            .map(|&sp| (&base % sp).iter_u64_digits().next().unwrap_or(0))
            .collect();
        for delta in (0..SPAN).step_by(2) {
            let divisible = primes
                .iter()
                .zip(&rems)
                .any(|(&sp, &r)| (r + delta) % u64::from(sp) == 0);
            if divisible {
                continue;
            }
            let candidate = &base + delta;
            if candidate.bits() != bits as u64 {
                break;
            }
            if probably_prime(&candidate) {
                return candidate;
            }
        }
    }
}

/// Miller–Rabin: base 2 first (nearly every composite fails it), then random bases.
fn probably_prime(n: &BigUint) -> bool {
    let one = BigUint::one();
    let two = BigUint::from(2u32);
    if *n < BigUint::from(4u32) {
        return *n == two || *n == BigUint::from(3u32);
    }
    let n_minus_1 = n - &one;
    let s = n_minus_1.trailing_zeros().unwrap_or(0);
    let d = &n_minus_1 >> s;
    let witness = |a: &BigUint| {
        let mut x = a.modpow(&d, n);
        if x == one || x == n_minus_1 {
            return false;
        }
        for _ in 1..s {
            x = x.modpow(&two, n);
            if x == n_minus_1 {
                return false;
            }
            if x == one {
                return true;
            }
        }
        true
    };
    if witness(&two) {
        return false;
    }
    let bytes = n.bits().div_ceil(8) as usize;
    let mut buf = vec![0u8; bytes];
    for _ in 1..ROUNDS {
        // A base in [2, n-2].
        OsRng.fill_bytes(&mut buf);
        let a = BigUint::from_bytes_be(&buf) % (n - 3u32) + 2u32;
        if witness(&a) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::traits::PublicKeyParts;

    #[test]
    fn miller_rabin_tells_primes_from_composites_and_carmichael_numbers() {
        let mersenne_127 = (BigUint::one() << 127u32) - 1u32;
        assert!(probably_prime(&mersenne_127));
        assert!(!probably_prime(&(&mersenne_127 * 3u32)));
        for p in [2u32, 3, 5, 7, 1999, 65537] {
            assert!(probably_prime(&BigUint::from(p)), "{p}");
        }
        // Carmichael numbers fool Fermat's test, not Miller–Rabin.
        for c in [1u32, 4, 9, 561, 1105, 1729, 2465, 41041, 825265] {
            assert!(!probably_prime(&BigUint::from(c)), "{c}");
        }
    }

    #[test]
    fn random_primes_have_exactly_the_bits_asked_for_and_the_top_two_set() {
        for bits in [64, 65, 71, 512] {
            let p = random_prime(bits);
            assert_eq!(p.bits(), bits as u64);
            assert!(p.bit(bits as u64 - 2), "second bit of a {bits}-bit prime");
            assert!(probably_prime(&p));
        }
    }

    #[test]
    fn a_generated_key_has_the_size_asked_for_and_encrypts_and_decrypts() {
        let key = generate(1024).unwrap();
        assert_eq!(key.n().bits(), 1024);
        assert_eq!(key.e(), &rsa::BigUint::from(E));
        key.validate().unwrap();
        let public = rsa::RsaPublicKey::from(&key);
        let msg = b"opkit";
        let sealed = public
            .encrypt(&mut OsRng, rsa::Pkcs1v15Encrypt, msg)
            .unwrap();
        assert_eq!(key.decrypt(rsa::Pkcs1v15Encrypt, &sealed).unwrap(), msg);
        assert!(generate(32).is_err());
    }
}
