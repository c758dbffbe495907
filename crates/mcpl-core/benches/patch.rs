//! State patches within a `StateBudget`: the cost of applying a patch grows with its length
//! and with what it copies, not with the size of the document times the number of operations.
//!
//! - `appends/N`: N `add /items/-` operations on a state of 100,000 items;
//! - `moves_sideways/N`: N `move` operations between two members of a large state;
//! - `refused/depth_bomb`, `refused/doubling`, `refused/root_copies`: the hostile patches of
//!   `mcpl-host`'s security review (30,000 nesting levels, 64 doublings, 100,000 root copies),
//!   each refused by the default budget.
//!
//! Run with `cargo bench -p mcpl-core --bench patch`; see `docs/performance.md`.

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcpl_core::mcpl::state::{PatchOperation, StateBudget, patched_within};
use serde_json::{Value, json};

fn large_state() -> Value {
    json!({"items": (0..100_000).collect::<Vec<u32>>(), "x": {"v": "x".repeat(1000)}})
}

fn appends(n: usize) -> Vec<PatchOperation> {
    (0..n).map(|i| PatchOperation::Add { path: "/items/-".into(), value: json!(i) }).collect()
}

fn moves(n: usize) -> Vec<PatchOperation> {
    (0..n)
        .map(|i| {
            let (from, to) = if i % 2 == 0 { ("/x", "/y") } else { ("/y", "/x") };
            PatchOperation::Move { from: from.into(), path: to.into() }
        })
        .collect()
}

fn depth_bomb() -> Vec<PatchOperation> {
    let mut ops = vec![PatchOperation::Add { path: "/a".into(), value: json!(1) }];
    for _ in 0..30_000 {
        ops.push(PatchOperation::Add { path: "/b".into(), value: json!({}) });
        ops.push(PatchOperation::Move { from: "/a".into(), path: "/b/a".into() });
        ops.push(PatchOperation::Move { from: "/b".into(), path: "/a".into() });
    }
    ops
}

fn root_copies(n: usize) -> Vec<PatchOperation> {
    (0..n).map(|i| PatchOperation::Copy { from: String::new(), path: format!("/c{i}") }).collect()
}

fn bench(c: &mut Criterion) {
    let budget = StateBudget::default();
    let state = large_state();
    let mut group = c.benchmark_group("appends");
    for n in [1_000, 10_000, 100_000] {
        let patch = appends(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &patch, |b, patch| {
            b.iter_batched(
                || state.clone(),
                |s| black_box(patched_within(s, patch, &budget)).is_ok(),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    let mut group = c.benchmark_group("moves_sideways");
    for n in [1_000, 10_000, 100_000] {
        let patch = moves(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &patch, |b, patch| {
            b.iter_batched(
                || state.clone(),
                |s| black_box(patched_within(s, patch, &budget)).is_ok(),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    let mut group = c.benchmark_group("refused");
    for (name, patch, start) in [
        ("depth_bomb", depth_bomb(), json!({})),
        ("doubling", root_copies(64), json!({"seed": "x".repeat(64)})),
        ("root_copies", root_copies(100_000), json!({"seed": "x".repeat(64)})),
    ] {
        assert!(patched_within(start.clone(), &patch, &budget).is_err(), "{name}");
        group.bench_function(name, |b| {
            b.iter_batched(
                || start.clone(),
                |s| black_box(patched_within(s, &patch, &budget)).is_err(),
                criterion::BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
