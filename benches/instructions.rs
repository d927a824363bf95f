//! Instruction counts (gungraun, callgrind) of the kwire operations that `benches/codec.rs`
//! times, on the same frames. Each bench runs once under valgrind; setup (loading the frame,
//! decoding the value to encode, allocating the output buffer) is not counted, and neither
//! is dropping what the bench returns.
//!
//! Needs the runner: `cargo install gungraun-runner --version 0.20.0 --locked` (it must
//! equal the `gungraun` version in Cargo.toml), then `cargo bench --bench instructions`.

mod support;

use std::hint::black_box;

use gungraun::prelude::*;
use kwire::messages::ListOffsetsRequest;
use support::Prepared;

/// The frame, boxed: a bench takes it and hands it back (so that dropping it is not
/// counted), and moving a box is one register where moving a `Prepared` was a `memcpy` of
/// a few hundred bytes, which callgrind counted against every operation (76 of the 263
/// instructions once counted for the ApiVersions v4 request's view). `floor` measures what
/// is left of the harness.
fn prepare(name: &str) -> Box<Prepared> {
    Box::new(Prepared::new(name))
}

/// A library benchmark over every frame of `support::FRAMES`, one bench id per frame.
macro_rules! per_frame {
    (fn $name:ident($p:ident) -> $ret:ty $body:block) => {
        #[library_benchmark]
        #[bench::apiversions_v4_request(args = ("apiversions_v4_request"), setup = prepare)]
        #[bench::apiversions_v4_response(args = ("apiversions_v4_response"), setup = prepare)]
        #[bench::listgroups_v5_request(args = ("listgroups_v5_request"), setup = prepare)]
        #[bench::listgroups_v5_response(args = ("listgroups_v5_response"), setup = prepare)]
        #[bench::listoffsets_v10_request(args = ("listoffsets_v10_request"), setup = prepare)]
        #[bench::listoffsets_v10_response(args = ("listoffsets_v10_response"), setup = prepare)]
        #[bench::apiversions_v4_response_90keys(args = ("apiversions_v4_response_90keys"), setup = prepare)]
        #[bench::listgroups_v2_response_1000(args = ("listgroups_v2_response_1000"), setup = prepare)]
        #[bench::listgroups_v5_response_1000(args = ("listgroups_v5_response_1000"), setup = prepare)]
        #[bench::listoffsets_v5_request_10x100(args = ("listoffsets_v5_request_10x100"), setup = prepare)]
        #[bench::listoffsets_v10_request_10x100(args = ("listoffsets_v10_request_10x100"), setup = prepare)]
        #[bench::listoffsets_v10_response_10x100(args = ("listoffsets_v10_response_10x100"), setup = prepare)]
        fn $name($p: Box<Prepared>) -> $ret $body
    };
}

per_frame!(
    fn floor(p) -> Box<Prepared> {
        black_box(p.body());
        p
    }
);

per_frame!(
    fn view(p) -> Box<Prepared> {
        support::view(p.key, p.version, p.is_request(), black_box(p.body()));
        p
    }
);

per_frame!(
    fn view_walk(p) -> Box<Prepared> {
        black_box(support::view_walk(p.key, p.version, p.is_request(), black_box(p.body())));
        p
    }
);

per_frame!(
    fn decode_ref(p) -> Box<Prepared> {
        support::decode_reference(p.key, p.version, p.is_request(), black_box(p.body()));
        p
    }
);

per_frame!(
    fn encoded_len(p) -> Box<Prepared> {
        black_box(support::encoded_len(black_box(&p.value), p.version));
        p
    }
);

per_frame!(
    fn encode(p) -> Box<Prepared> {
        let mut p = p;
        black_box(support::encode(black_box(&p.value), p.version, black_box(&mut p.out[..])));
        p
    }
);

per_frame!(
    fn encode_frame(p) -> Box<Prepared> {
        let mut p = p;
        let client_id = p.client_id.as_deref();
        let out = black_box(&mut p.out[..]);
        black_box(support::encode_frame(black_box(&p.value), p.version, p.correlation_id, client_id, out));
        p
    }
);

library_benchmark_group!(
    name = frames,
    benchmarks = [floor, view, view_walk, decode_ref, encoded_len, encode, encode_frame]
);

// `encoded_len` of a ListOffsets v5 request of 10 topics × N partitions.
#[library_benchmark]
#[bench::p10x10(args = (10), setup = support::list_offsets_request)]
#[bench::p10x100(args = (100), setup = support::list_offsets_request)]
#[bench::p10x1000(args = (1000), setup = support::list_offsets_request)]
fn encoded_len_v5(value: ListOffsetsRequest<'static>) -> ListOffsetsRequest<'static> {
    black_box(black_box(&value).encoded_len(5).unwrap());
    value
}

library_benchmark_group!(name = scaling, benchmarks = [encoded_len_v5]);

main!(library_benchmark_groups = frames, scaling);
