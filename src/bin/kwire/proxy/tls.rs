//! The TLS flags of `kwire proxy` (docs/proxy.md, "TLS and SNI"), turned into
//! `kwire::proxy`'s TLS set-up.

use std::path::PathBuf;
use std::time::Duration;

use kwire::proxy::{ProxyBuilder, ServerTls, SniRouting, UpstreamTls};

/// The TLS flags of `kwire proxy` (see docs/proxy.md, "TLS and SNI").
#[derive(clap::Args, Debug, Default)]
pub struct TlsArgs {
    /// Terminate TLS: clients connect to every listener of the proxy with TLS, and are shown
    /// this certificate chain (PEM, the server's certificate first). Its names (SAN) must
    /// cover what clients connect to: the --advertise host, or the SNI names.
    #[arg(long, value_name = "FILE", requires = "tls_key", help_heading = "TLS")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    tls_key: Option<PathBuf>,
    /// Require clients to present a certificate signed by a CA of FILE (PEM): mutual TLS.
    #[arg(long, value_name = "FILE", requires = "tls_cert", help_heading = "TLS")]
    tls_client_ca: Option<PathBuf>,
    /// Close a client connection whose TLS handshake has not finished in this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, help_heading = "TLS")]
    tls_handshake_timeout: u64,
    /// Connect to the brokers with TLS (their SSL listener), checking each broker's
    /// certificate against --upstream-ca and the host name it is reached by.
    #[arg(long, help_heading = "TLS")]
    upstream_tls: bool,
    /// The CA certificates (PEM) that brokers' certificates must be signed by.
    #[arg(long, value_name = "FILE", requires = "upstream_tls", help_heading = "TLS")]
    upstream_ca: Option<PathBuf>,
    /// A client certificate chain (PEM) shown to brokers that ask for one (mutual TLS).
    #[arg(long, value_name = "FILE", requires_all = ["upstream_tls", "upstream_key"], help_heading = "TLS")]
    upstream_cert: Option<PathBuf>,
    /// The private key of --upstream-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "upstream_cert", help_heading = "TLS")]
    upstream_key: Option<PathBuf>,
    /// DANGEROUS, for tests only: accept any certificate from brokers, of any CA and for any
    /// name (logged at start-up). Anyone between the proxy and the brokers can then read and
    /// change the traffic.
    #[arg(long, requires = "upstream_tls", conflicts_with = "upstream_ca", help_heading = "TLS")]
    upstream_insecure_skip_verify: bool,
    /// SNI routing: serve every broker on the --listen port, telling them apart by the TLS
    /// server name clients ask for. Broker N is named by PATTERN with {id} replaced by N
    /// (e.g. 'broker-{id}.kafka.example'), and broker addresses in responses are rewritten
    /// to NAME:PORT (PORT the --listen port). Needs --tls-cert and --sni-bootstrap.
    #[arg(long, value_name = "PATTERN", requires_all = ["tls_cert", "sni_bootstrap"], help_heading = "TLS")]
    sni_pattern: Option<String>,
    /// With --sni-pattern: the name clients bootstrap with; its connections go to --upstream.
    #[arg(long, value_name = "NAME", requires = "sni_pattern", help_heading = "TLS")]
    sni_bootstrap: Option<String>,
}

impl TlsArgs {
    /// What to warn of at start-up (stderr and the log).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.upstream_insecure_skip_verify {
            w.push(
                "WARNING: --upstream-insecure-skip-verify: brokers' certificates are not verified (any CA, any \
                 name); anyone between the proxy and the brokers can read and change the traffic"
                    .to_string(),
            );
        }
        w
    }

    /// The builder with the TLS the flags ask for (files read and checked now).
    pub fn apply<H: kwire::proxy::Hooks>(&self, mut b: ProxyBuilder<H>) -> Result<ProxyBuilder<H>, String> {
        b = b.handshake_timeout(Duration::from_secs(self.tls_handshake_timeout.max(1)));
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            let tls = ServerTls::from_pem_files(cert, key, self.tls_client_ca.as_deref())
                .map_err(|e| format!("--tls-cert/--tls-key/--tls-client-ca: {e}"))?;
            b = b.server_tls(tls);
        }
        if self.upstream_tls {
            let client = match (&self.upstream_cert, &self.upstream_key) {
                (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
                _ => None,
            };
            let tls = if self.upstream_insecure_skip_verify {
                UpstreamTls::insecure_skip_verify(client)
            } else {
                let Some(ca) = &self.upstream_ca else {
                    return Err(
                        "--upstream-tls needs --upstream-ca FILE (the CA certificates that brokers' \
                                certificates are signed by)"
                            .into(),
                    );
                };
                UpstreamTls::from_pem_files(ca, client)
            };
            b = b
                .upstream_tls(tls.map_err(|e| format!("--upstream-ca/--upstream-cert/--upstream-key: {e}"))?);
        }
        if let (Some(pattern), Some(bootstrap)) = (&self.sni_pattern, &self.sni_bootstrap) {
            b = b.sni(SniRouting { pattern: pattern.clone(), bootstrap: bootstrap.clone() });
        }
        Ok(b)
    }
}
