//! Matching a URI against a resource template, as `resources/read` does for every template
//! until one matches.
//!
//! Templates and URIs (the URI is what a client controls):
//!
//! - `reserved_then_simple`: `file:///{+path}/{name}` against `file:///` and `a/` repeated,
//!   ending in `x` (a match: `path` is everything up to the last `/`);
//! - `reserved_then_simple_miss`: the same template against the same URI ending in `/` (no
//!   match: `name` cannot be empty);
//! - `four_reserved_miss`: `x://{+a}{+b}{+c}{+d}z` against `x://` and `y` repeated (no match);
//! - `query`: `search://{q}{?lang,page,size}` against a long `q` and a query.
//!
//! Each at URI lengths from 1 KB to 160 KB. Run with
//! `cargo bench -p mcpl-server --bench uri_template`; see `docs/performance.md`.

// `criterion_group!` defines an undocumented `pub fn`; a bench may fail loudly.
#![allow(missing_docs, clippy::panic)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_server::uri_template::UriTemplate;

/// URI lengths, in bytes (about).
const LENGTHS: [usize; 4] = [1_000, 10_000, 40_000, 160_000];

/// A case: its name, the template, the URI at a length, and whether it matches.
type Case = (&'static str, &'static str, fn(usize) -> String, bool);

fn cases() -> Vec<Case> {
    vec![
        (
            "reserved_then_simple",
            "file:///{+path}/{name}",
            |n| format!("file:///{}x", "a/".repeat(n / 2)),
            true,
        ),
        (
            "reserved_then_simple_miss",
            "file:///{+path}/{name}",
            |n| format!("file:///{}", "a/".repeat(n / 2)),
            false,
        ),
        (
            "four_reserved_miss",
            "x://{+a}{+b}{+c}{+d}z",
            |n| format!("x://{}", "y".repeat(n)),
            false,
        ),
        (
            "query",
            "search://{q}{?lang,page,size}",
            |n| format!("search://{}?lang=en&page=2&size=10", "q%20".repeat(n / 4)),
            true,
        ),
    ]
}

fn bench(c: &mut Criterion) {
    for (name, template, uri, matches) in cases() {
        let template = UriTemplate::parse(template).unwrap_or_else(|e| panic!("{e}"));
        let mut group = c.benchmark_group(format!("uri_template_{name}"));
        group.sample_size(10);
        for length in LENGTHS {
            let uri = uri(length);
            assert_eq!(template.matches(&uri).is_some(), matches, "{name} at {length}");
            group.throughput(Throughput::Bytes(uri.len() as u64));
            group.bench_with_input(BenchmarkId::from_parameter(length), &uri, |b, uri| {
                b.iter(|| template.matches(black_box(uri)));
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
