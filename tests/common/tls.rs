//! Certificates for TLS tests, made here with rcgen: a test CA and a server certificate it
//! signs. A test file uses it with `#[path = "common/tls.rs"] mod tls;` (or through
//! `mod common;`).

#![allow(dead_code)]

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A new test CA and a server certificate for `names` signed by it, as PEM:
/// (CA, server certificate, server key).
pub fn ca_and_server(names: &[&str]) -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, "kwire broker test CA");
    let ca = params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(params, ca_key);
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = server.signed_by(&key, &issuer).unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}
