//! The schema walker (`kwire::reflect::walk`) and the dynamic `Value` beside the typed
//! views and encoders, on the realistic frames of `benches/support` (tests/vectors/seed
//! and tests/vectors/bench).
//!
//! Operations, per frame (each on the body):
//!
//! - `view`: the typed view (`RequestBodyView::new` / `ResponseBodyView::new`), which checks
//!   every byte;
//! - `walk`: the walker with a visitor that does nothing (it checks every byte too);
//! - `walk_sum`: the walker with a visitor that reads every value (adds up the integers and
//!   the lengths of the strings and bytes);
//! - `value`: the walker building a `Value` (`StructValue::decode_body`);
//! - `value_encode`: encoding that `Value` (size, then write) into a reused buffer;
//! - `typed_encode`: the generated encoder on the reference decoder's value, likewise.
//!
//! `cargo bench --bench walker` prints the best-of-five time per operation. With
//! `-- --once FRAME OP N` it runs one operation N times and exits, for instruction counts:
//! `valgrind --tool=callgrind` of `--once FRAME OP N` minus `--once FRAME none N` is
//! N times the operation.

mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use kwire::reflect::walk::{Field, Scalar, Visitor};
use kwire::reflect::{self, Encoding, StructValue, walk};
use support::Prepared;

struct Nothing;
impl Visitor<'_> for Nothing {}

struct Sum(u64);
impl Visitor<'_> for Sum {
    #[inline]
    fn value(&mut self, _: &Field<'_>, value: Scalar<'_>) {
        self.0 = self.0.wrapping_add(match value {
            Scalar::Bool(b) => u64::from(b),
            Scalar::Int8(v) => v as u64,
            Scalar::Int16(v) => v as u64,
            Scalar::Int32(v) => v as u64,
            Scalar::Int64(v) => v as u64,
            Scalar::Uint16(v) => u64::from(v),
            Scalar::Uint32(v) => u64::from(v),
            Scalar::Float64(v) => v.to_bits(),
            Scalar::Uuid(u) => u64::from(u.0[0]),
            Scalar::String(s) => s.len() as u64,
            Scalar::Bytes(b) | Scalar::Records(b) => b.len() as u64,
            Scalar::Null => 1,
        });
    }
}

const OPS: &[&str] = &["view", "walk", "walk_sum", "value", "value_encode", "typed_encode"];

struct Bench {
    p: Prepared,
    schema: &'static reflect::MessageSchema,
    dynamic: StructValue,
    out: Vec<u8>,
}

impl Bench {
    fn new(p: Prepared) -> Bench {
        let schema =
            if p.is_request() { reflect::request_schema(p.key) } else { reflect::response_schema(p.key) };
        let dynamic = StructValue::decode_body(schema, p.version, p.body()).unwrap();
        let out = vec![0u8; p.frame.len() + 64];
        let mut b = Bench { p, schema, dynamic, out };
        // Every operation succeeds and gives the body back.
        let n = b.run("value_encode");
        assert_eq!(&b.out[..n], b.p.body(), "{}", b.p.name);
        b
    }

    #[inline(never)]
    fn run(&mut self, op: &str) -> usize {
        let (p, body) = (&self.p, self.p.body());
        match op {
            "none" => 0,
            "view" => {
                support::view(p.key, p.version, p.is_request(), black_box(body));
                0
            }
            "walk" => {
                walk::walk_body(self.schema, p.version, black_box(body), 0, &mut Nothing).unwrap();
                0
            }
            "walk_sum" => {
                let mut s = Sum(0);
                walk::walk_body(self.schema, p.version, black_box(body), 0, &mut s).unwrap();
                s.0 as usize
            }
            "value" => {
                black_box(StructValue::decode_body(self.schema, p.version, black_box(body)).unwrap());
                0
            }
            "value_encode" => {
                let e = Encoding::body(self.schema, p.version);
                black_box(&self.dynamic).encode(e, &mut self.out).unwrap()
            }
            "typed_encode" => support::encode(black_box(&p.value), p.version, &mut self.out),
            other => panic!("unknown operation {other}"),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--once") {
        let (frame, op, n) = (&args[i + 1], &args[i + 2], args[i + 3].parse::<usize>().unwrap());
        let mut b = Bench::new(Prepared::new(frame));
        for _ in 0..n {
            black_box(b.run(op));
        }
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    println!("{:<36} {:>8} {}", "frame", "bytes", OPS.iter().map(|o| format!("{o:>14}")).collect::<String>());
    for p in Prepared::all() {
        let mut b = Bench::new(p);
        let mut line = format!("{:<36} {:>8}", b.p.name, b.p.body().len());
        for op in OPS {
            // Best of five runs of about 50 ms each, in ns per operation.
            let mut iters = 1usize;
            loop {
                let t = Instant::now();
                for _ in 0..iters {
                    black_box(b.run(op));
                }
                if t.elapsed() > Duration::from_millis(10) {
                    break;
                }
                iters *= 2;
            }
            let iters = iters * 5;
            let best = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        black_box(b.run(op));
                    }
                    t.elapsed().as_nanos() as f64 / iters as f64
                })
                .fold(f64::INFINITY, f64::min);
            line.push_str(&format!("{best:>12.0}ns"));
        }
        println!("{line}");
    }
}
