//! Sprig's `getHostByName`: one of the addresses the system resolver gives for a name
//! (Go's `net.LookupHost`, here `getaddrinfo` through the standard library), picked at
//! random as Sprig does; a name that does not resolve fails with the panic Sprig's
//! `rand.Intn(0)` raises.

use std::net::ToSocketAddrs;

use rand::seq::IndexedRandom;

use super::{Funcs, fail, s};
use crate::ParamType::String as Str;
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "getHostByName",
        Function::new(&[Str], |a| {
            let mut addrs: Vec<String> = Vec::new();
            if let Ok(found) = (s(a, 0), 0).to_socket_addrs() {
                for addr in found {
                    let ip = addr.ip().to_string();
                    if !addrs.contains(&ip) {
                        addrs.push(ip);
                    }
                }
            }
            match addrs.choose(&mut rand::rng()) {
                Some(ip) => Ok(Value::from(ip.as_str())),
                None => fail("invalid argument to Intn"),
            }
        }),
    );
}
