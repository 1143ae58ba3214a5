//! GFLOP/s of the encoder's four linear products (MiniLM, 4,096 rows), ours on each path against
//! the gemm crate, alternating: `cargo run --release -p lexbench-bench --example rate [threads] [rounds]`.
//! A quick look while tuning; the measurement of record is `lexbench-bench --mode gemm`.
//! `TRAIN=1`: instead, each linear product of a MiniLM training step (56 sequences × 128 tokens) in
//! its three forms as the trainer runs them: `Y = X·Wᵀ`, `dX = dY·W` and `dW = dYᵀ·X`.
#![allow(unsafe_code)]

use lexbench_gemm::{Isa, Product, Threads, sgemm_on};
use std::time::Instant;

// The allocator of `lexbench` and the bench (huge pages for large blocks), so that the rates here are
// the ones those binaries see.
#[global_allocator]
static ALLOCATOR: lexbench_engine::heap::HugePages = lexbench_engine::heap::HugePages;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let threads = args.first().copied().unwrap_or(2);
    let rounds = args.get(1).copied().unwrap_or(5);
    let pool = lexbench_gemm::scoped_threads(threads);
    let th = Threads {
        count: threads,
        run: &pool,
    };
    let mut shapes = vec![
        ("qkv", 4096, 1152, 384),
        ("out", 4096, 384, 384),
        ("up", 4096, 1536, 384),
        ("down", 4096, 384, 1536),
    ];
    if let Ok(s) = std::env::var("SHAPES") {
        shapes = s
            .split(';')
            .map(|t| {
                let v: Vec<usize> = t.split(',').map(|x| x.parse().unwrap()).collect();
                ("env", v[0], v[1], v[2])
            })
            .collect();
    }
    let reps = 10;
    if let Ok(shape) = std::env::var("CALL_COST") {
        // Nanoseconds per call of one small product on one thread (the per-call overhead).
        let col_a = shape.ends_with(",c");
        let shape = shape.trim_end_matches(",c");
        let row_b = shape.ends_with(",r");
        let shape = shape.trim_end_matches(",r");
        let v: Vec<usize> = shape.split(',').map(|x| x.parse().expect("m,n,k")).collect();
        let (m, n, k) = (v[0], v[1], v[2]);
        let a = vec![0.5f32; m * k];
        let b = vec![0.25f32; k * n];
        let mut c = vec![0f32; m * n];
        let calls = 200_000;
        let t0 = Instant::now();
        for _ in 0..calls {
            let p = Product {
                m,
                n,
                k,
                a: a.as_ptr(),
                rsa: if col_a { 1 } else { k as isize },
                csa: if col_a { m as isize } else { 1 },
                b: b.as_ptr(),
                rsb: if row_b { n as isize } else { 1 },
                csb: if row_b { 1 } else { k as isize },
                c: c.as_mut_ptr(),
                rsc: n as isize,
                csc: 1,
                accumulate: false,
                bias: std::ptr::null(),
            };
            unsafe { sgemm_on(Isa::active(), p, &Threads::serial()) };
        }
        let ns = t0.elapsed().as_nanos() as f64 / calls as f64;
        println!(
            "{m}×{n}×{k}: {ns:.0} ns a call, {:.1} GFLOP/s",
            2.0 * (m * n * k) as f64 / ns
        );
        return;
    }
    if std::env::var_os("TRAIN").is_some() {
        train(&th, rounds);
        return;
    }
    attention(threads, rounds, &pool);
    for (name, m, n, k) in shapes {
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0).collect();
        let mut c = vec![0f32; m * n];
        let flops = 2.0 * (m * n * k) as f64 * reps as f64;
        let mut ours: Vec<(Isa, Vec<f64>)> = [Isa::Avx512, Isa::Avx2]
            .into_iter()
            .filter(|i| i.available())
            .map(|i| (i, vec![]))
            .collect();
        let mut theirs = vec![];
        for _ in 0..rounds {
            for (isa, rates) in ours.iter_mut() {
                let t0 = Instant::now();
                for _ in 0..reps {
                    let p = Product {
                        m,
                        n,
                        k,
                        a: x.as_ptr(),
                        rsa: k as isize,
                        csa: 1,
                        b: w.as_ptr(),
                        rsb: 1,
                        csb: k as isize,
                        c: c.as_mut_ptr(),
                        rsc: n as isize,
                        csc: 1,
                        accumulate: false,
                        bias: std::ptr::null(),
                    };
                    unsafe { sgemm_on(*isa, p, &th) };
                }
                rates.push(flops / t0.elapsed().as_secs_f64() / 1e9);
            }
            let t0 = Instant::now();
            for _ in 0..reps {
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        c.as_mut_ptr(),
                        1,
                        n as isize,
                        false,
                        x.as_ptr(),
                        1,
                        k as isize,
                        w.as_ptr(),
                        k as isize,
                        1,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        if threads > 1 {
                            gemm::Parallelism::Rayon(threads)
                        } else {
                            gemm::Parallelism::None
                        },
                    );
                }
            }
            theirs.push(flops / t0.elapsed().as_secs_f64() / 1e9);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let mut line = format!("{name:5} {m}×{n}×{k}:");
        for (isa, rates) in ours.iter_mut() {
            line += &format!(" ours/{} {:.1}", isa.name(), med(rates));
        }
        line += &format!(
            " gemm-crate (its AVX2 kernels) {:.1} GFLOP/s ({threads} threads, median of {rounds})",
            med(&mut theirs)
        );
        println!("{line}");
    }
}

/// One layer's attention products per (sequence, head) as `kernels::fused_attention` runs them: 384
/// (sequence, head) pairs, 128 tokens, head size 32, Q·Kᵀ then P·V, each product on one thread.
fn attention(threads: usize, rounds: usize, pool: &lexbench_gemm::RunTasks<'_>) {
    let (seqs, heads, s, d) = (32usize, 12usize, 128usize, 32usize);
    let row = 3 * heads * d;
    let qkv: Vec<f32> = (0..seqs * s * row)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0)
        .collect();
    let flops = (seqs * heads) as f64 * 2.0 * 2.0 * (s * s * d) as f64;
    let run = |ours: bool| {
        let t0 = Instant::now();
        let task = |t: usize| {
            let (bi, h) = (t / heads, t % heads);
            let base = bi * s * row;
            let q = qkv[base + h * d..].as_ptr();
            let k = qkv[base + heads * d + h * d..].as_ptr();
            let v = qkv[base + 2 * heads * d + h * d..].as_ptr();
            let mut scores = vec![0f32; s * s];
            let mut out = vec![0f32; s * d];
            unsafe {
                if ours {
                    let serial = Threads::serial();
                    let p = Product {
                        m: s,
                        n: s,
                        k: d,
                        a: q,
                        rsa: row as isize,
                        csa: 1,
                        b: k,
                        rsb: 1,
                        csb: row as isize,
                        c: scores.as_mut_ptr(),
                        rsc: s as isize,
                        csc: 1,
                        accumulate: false,
                        bias: std::ptr::null(),
                    };
                    sgemm_on(Isa::active(), p, &serial);
                    let p = Product {
                        m: s,
                        n: d,
                        k: s,
                        a: scores.as_ptr(),
                        rsa: s as isize,
                        csa: 1,
                        b: v,
                        rsb: row as isize,
                        csb: 1,
                        c: out.as_mut_ptr(),
                        rsc: d as isize,
                        csc: 1,
                        accumulate: false,
                        bias: std::ptr::null(),
                    };
                    sgemm_on(Isa::active(), p, &serial);
                } else {
                    gemm::gemm(
                        s,
                        s,
                        d,
                        scores.as_mut_ptr(),
                        1,
                        s as isize,
                        false,
                        q,
                        1,
                        row as isize,
                        k,
                        row as isize,
                        1,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                    gemm::gemm(
                        s,
                        d,
                        s,
                        out.as_mut_ptr(),
                        1,
                        d as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        s as isize,
                        v,
                        1,
                        row as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                }
            }
            std::hint::black_box(&out);
        };
        for _ in 0..40 {
            if threads > 1 {
                pool(seqs * heads, &task)
            } else {
                (0..seqs * heads).for_each(task)
            }
        }
        40.0 * flops / t0.elapsed().as_secs_f64() / 1e9
    };
    let (mut a, mut b) = (vec![], vec![]);
    for _ in 0..rounds {
        a.push(run(true));
        b.push(run(false));
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    println!(
        "attention 384 × (128×128×32 + 128×32×128): ours/{} {:.1} gemm-crate (its AVX2 kernels) {:.1} GFLOP/s ({threads} threads, median of {rounds})",
        Isa::active().name(),
        a[rounds / 2],
        b[rounds / 2]
    );
}

/// `TRAIN=1`: the three products of each linear layer of a training step, as
/// `lexbench_engine::kernels::LinearTrain` calls them (X: tokens × in, W: out × in, dY: tokens × out, all
/// row-major): the forward reads W through transposed strides, dX reads W as it is, dW reads dY
/// through transposed strides (its rows are not contiguous, so A is packed) over the tokens' depth.
fn train(th: &Threads<'_>, rounds: usize) {
    let tokens = 56 * 128;
    for (name, out, inp) in [("qkv-each", 384, 384), ("up", 1536, 384), ("down", 384, 1536)] {
        let x: Vec<f32> = (0..tokens * inp)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0)
            .collect();
        let w: Vec<f32> = (0..out * inp)
            .map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0)
            .collect();
        let dy: Vec<f32> = (0..tokens * out)
            .map(|i| ((i * 3 % 17) as f32 - 8.0) / 9.0)
            .collect();
        let mut y = vec![0f32; tokens * out];
        let mut dx = vec![0f32; tokens * inp];
        let mut dw = vec![0f32; out * inp];
        let forms: [(&str, Product); 3] = [
            (
                "Y=X·Wᵀ",
                Product {
                    m: tokens,
                    n: out,
                    k: inp,
                    a: x.as_ptr(),
                    rsa: inp as isize,
                    csa: 1,
                    b: w.as_ptr(),
                    rsb: 1,
                    csb: inp as isize,
                    c: y.as_mut_ptr(),
                    rsc: out as isize,
                    csc: 1,
                    accumulate: false,
                    bias: std::ptr::null(),
                },
            ),
            (
                "dX=dY·W",
                Product {
                    m: tokens,
                    n: inp,
                    k: out,
                    a: dy.as_ptr(),
                    rsa: out as isize,
                    csa: 1,
                    b: w.as_ptr(),
                    rsb: inp as isize,
                    csb: 1,
                    c: dx.as_mut_ptr(),
                    rsc: inp as isize,
                    csc: 1,
                    accumulate: false,
                    bias: std::ptr::null(),
                },
            ),
            (
                "dW=dYᵀ·X",
                Product {
                    m: out,
                    n: inp,
                    k: tokens,
                    a: dy.as_ptr(),
                    rsa: 1,
                    csa: out as isize,
                    b: x.as_ptr(),
                    rsb: inp as isize,
                    csb: 1,
                    c: dw.as_mut_ptr(),
                    rsc: inp as isize,
                    csc: 1,
                    accumulate: false,
                    bias: std::ptr::null(),
                },
            ),
        ];
        let mut line = format!("{name:8} {tokens} tokens, {inp} → {out}:");
        let only = std::env::var("FORMS").unwrap_or_default();
        for (form, p) in forms {
            if !only.is_empty() && !only.split(',').any(|f| form.starts_with(f)) {
                continue;
            }
            let flops = 2.0 * (p.m * p.n * p.k) as f64;
            let mut rates = vec![];
            for _ in 0..rounds {
                let t0 = Instant::now();
                for _ in 0..5 {
                    unsafe { sgemm_on(Isa::active(), p, th) };
                }
                rates.push(5.0 * flops / t0.elapsed().as_secs_f64() / 1e9);
            }
            rates.sort_by(f64::total_cmp);
            line += &format!(" {form} {:.1}", rates[rounds / 2]);
        }
        println!(
            "{line} GFLOP/s (ours/{}, {} threads, median of {rounds})",
            Isa::active().name(),
            th.count
        );
    }
}
