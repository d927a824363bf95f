//! A user's proxy for `benches/proxy.sh`'s paths `filter` and `library`: the library runtime
//! (`kwire::proxy`) with the docs' example filter (Produce to `audit.*` topics refused for
//! every principal but `admin`), or with no filter at all, and no log. Not a criterion bench:
//! a program the script runs and measures.
//!
//!   proxy_filter UPSTREAM [--no-filter]   # listens on 127.0.0.1, a free port, and says which first

use std::sync::Arc;

use kwire::filter::FilterChain;
use kwire::proxy::{ConnInfo, Proxy};

// The same filter the tests run (tests/proxy_lib.rs, tests/proxy.rs).
#[path = "../tests/common/audit.rs"]
mod audit;
use audit::AuditTopics;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(upstream), filter) = (args.next(), args.next()) else {
        eprintln!("usage: proxy_filter UPSTREAM [--no-filter]");
        std::process::exit(2);
    };
    let with_filter = match filter.as_deref() {
        None => true,
        Some("--no-filter") => false,
        Some(other) => {
            eprintln!("proxy_filter: unknown argument {other}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let builder = Proxy::builder("127.0.0.1:0".parse().unwrap(), [upstream.clone()]);
        let builder = if with_filter {
            builder.filters(|conn: &Arc<ConnInfo>| {
                let mut chain = FilterChain::new();
                chain.push(AuditTopics(conn.clone()));
                chain
            })
        } else {
            builder
        };
        let proxy = builder.start().await?;
        println!("kwire proxy: listening on {}, forwarding to {upstream}", proxy.local_addr());
        std::future::pending::<std::io::Result<()>>().await
    })
}
