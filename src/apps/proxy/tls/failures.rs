//! Why a client's TLS handshake failed ([`Failure`]), and the counts by reason.

use std::fmt::Write as _;

use super::*;

/// Why a client's TLS handshake failed: the `reason` label of
/// `kwire_proxy_tls_handshake_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::apps::proxy) enum Failure {
    /// The first byte is not a TLS handshake record's (a plaintext client on a TLS port).
    Plaintext,
    /// A ClientHello that does not parse (garbage).
    BadHello,
    /// SNI routing: no server name, or one that is no broker's.
    UnknownName,
    /// rustls refused a certificate (a client's: expired, of another CA, missing), or the
    /// client sent an alert (commonly: it refused the proxy's certificate).
    Certificate,
    /// The client closed the connection before or during the handshake.
    Closed,
    /// Not finished within `--tls-handshake-timeout`.
    Timeout,
    /// Anything else: a read error, another TLS error, a broker's address not learned.
    Other,
}

impl Failure {
    /// Every reason, in the order rendered.
    pub const ALL: [Failure; 7] = [
        Failure::Plaintext,
        Failure::BadHello,
        Failure::UnknownName,
        Failure::Certificate,
        Failure::Closed,
        Failure::Timeout,
        Failure::Other,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Plaintext => "plaintext",
            Failure::BadHello => "bad_hello",
            Failure::UnknownName => "unknown_name",
            Failure::Certificate => "certificate",
            Failure::Closed => "closed",
            Failure::Timeout => "timeout",
            Failure::Other => "other",
        }
    }

    /// The reason of a failed TLS read (`fallback` unless the peer left or rustls says a
    /// certificate was refused or an alert came).
    pub(super) fn of(e: &std::io::Error, fallback: Failure) -> Failure {
        if e.kind() == ErrorKind::UnexpectedEof {
            return Failure::Closed;
        }
        match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
            Some(
                rustls::Error::InvalidCertificate(_)
                | rustls::Error::NoCertificatesPresented
                | rustls::Error::AlertReceived(_),
            ) => Failure::Certificate,
            _ => fallback,
        }
    }
}

/// Counts of failed client handshakes, one per [`Failure`].
#[derive(Default)]
pub(in crate::apps::proxy) struct Failures([AtomicU64; Failure::ALL.len()]);

impl Failures {
    /// Counts one failure.
    pub fn count(&self, why: Failure) {
        self.0[why as usize].fetch_add(1, Relaxed);
    }

    /// How many failures of `why` so far.
    pub fn get(&self, why: Failure) -> u64 {
        self.0[why as usize].load(Relaxed)
    }

    /// Appends `NS_tls_handshake_failures_total{reason}` (every reason, zeros too) in the
    /// Prometheus text format.
    pub fn render_into(&self, s: &mut String, ns: &str) {
        let _ = writeln!(
            s,
            "# HELP {ns}_tls_handshake_failures_total Client TLS handshakes that failed, by reason.\n\
             # TYPE {ns}_tls_handshake_failures_total counter"
        );
        for why in Failure::ALL {
            let _ = writeln!(
                s,
                "{ns}_tls_handshake_failures_total{{reason=\"{}\"}} {}",
                why.label(),
                self.get(why)
            );
        }
    }
}
