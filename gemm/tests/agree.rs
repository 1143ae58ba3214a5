//! The products against an f64 reference on awkward shapes and strides, and bit for bit against
//! themselves across thread counts and instruction sets.
// `PackedB`'s entry points are unsafe functions over raw pointers (as attention calls them).
#![allow(unsafe_code)]

use lexbench_gemm::{Isa, KC, Strided, StridedMut, Threads, matmul, scoped_threads};

/// SplitMix64 values in [-1, 1).
fn values(seed: u64, len: usize) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

/// A matrix stored in a larger buffer: element (i, j) at `off + i·rs + j·cs`.
struct View {
    buf: Vec<f32>,
    off: isize,
    rs: isize,
    cs: isize,
}

impl View {
    /// rows × cols with the layout named: "row" (contiguous rows), "col" (contiguous columns),
    /// "gap" (rows padded by 3 and every other column), "neg" (rows stored bottom-up).
    fn new(rows: usize, cols: usize, layout: &str, seed: u64) -> View {
        let (r, c) = (rows as isize, cols as isize);
        let (len, off, rs, cs) = match layout {
            "row" => (rows * cols, 0, c, 1),
            "col" => (rows * cols, 0, 1, r),
            "gap" => (rows * (2 * cols + 3), 0, 2 * c + 3, 2),
            "neg" => (rows * cols, (r - 1) * c, -c, 1),
            _ => unreachable!("{layout}"),
        };
        View {
            buf: values(seed, len.max(1)),
            off,
            rs,
            cs,
        }
    }

    fn at(&self, i: usize, j: usize) -> f32 {
        self.buf[(self.off + i as isize * self.rs + j as isize * self.cs) as usize]
    }

    fn strided(&self) -> Strided<'_> {
        Strided {
            data: &self.buf,
            offset: self.off as usize,
            rs: self.rs,
            cs: self.cs,
        }
    }
}

fn paths() -> Vec<Isa> {
    [Isa::Portable, Isa::Avx2, Isa::Avx512]
        .into_iter()
        .filter(|i| i.available())
        .collect()
}

/// Runs one product on `isa` with `threads` threads; returns C's buffer.
fn run(
    isa: Isa,
    threads: usize,
    m: usize,
    n: usize,
    k: usize,
    layouts: [&str; 3],
    accumulate: bool,
) -> (Vec<f32>, f64) {
    let a = View::new(m, k, layouts[0], 1);
    let b = View::new(k, n, layouts[1], 2);
    let mut c = View::new(m, n, layouts[2], 3);
    let before = View::new(m, n, layouts[2], 3);
    let pool = scoped_threads(threads);
    let t = Threads {
        count: threads,
        run: &pool,
    };
    let out = StridedMut {
        data: &mut c.buf,
        offset: c.off as usize,
        rs: c.rs,
        cs: c.cs,
    };
    matmul(
        isa,
        (m, n, k),
        a.strided(),
        b.strided(),
        out,
        (accumulate, None),
        &t,
    )
    .expect("a valid layout");
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let mut want = if accumulate { before.at(i, j) as f64 } else { 0.0 };
            for q in 0..k {
                want += a.at(i, q) as f64 * b.at(q, j) as f64;
            }
            worst = worst.max((c.at(i, j) as f64 - want).abs());
        }
    }
    (c.buf, worst)
}

/// Odd shapes: one row, one column, primes, depths around the block (KC = 256) and the kernels'
/// tile edges; every layout of A, B and C; with and without accumulation.
#[test]
fn odd_shapes_agree_with_the_f64_reference_on_every_path() {
    let shapes = [
        (1, 1, 1),
        (1, 384, 384),
        (7, 1, 13),
        (13, 37, 1),
        (12, 32, KC),
        (13, 33, KC + 1),
        (31, 67, 2 * KC + 7),
        (97, 101, 89),
        (150, 530, 300),
    ];
    let layouts = [
        ["row", "row", "row"],
        ["row", "col", "row"],
        ["col", "row", "row"],
        ["col", "col", "col"],
        ["gap", "gap", "gap"],
        ["neg", "row", "gap"],
    ];
    let mut worst_all = 0f64;
    for &(m, n, k) in &shapes {
        for layout in layouts {
            for accumulate in [false, true] {
                let mut first: Option<Vec<f32>> = None;
                for isa in paths() {
                    for threads in [1, 2, 3] {
                        let (c, worst) = run(isa, threads, m, n, k, layout, accumulate);
                        // Values in [-1, 1): each term under 1, so k·2⁻²³ bounds a sum's rounding.
                        let bound = (k as f64 + 2.0) * f32::EPSILON as f64;
                        assert!(
                            worst <= bound,
                            "{m}×{n}×{k} {layout:?} acc {accumulate} on {isa:?}, {threads} threads: max |Δ| {worst:e} > {bound:e}"
                        );
                        worst_all = worst_all.max(worst);
                        match &first {
                            None => first = Some(c),
                            Some(f) => assert!(
                                f.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()),
                                "{m}×{n}×{k} {layout:?} acc {accumulate}: {isa:?} with {threads} threads differs in the bits"
                            ),
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "max |Δ| against the f64 reference over every case: {worst_all:e}; paths {:?}",
        paths()
    );
    assert!(worst_all > 0.0, "some rounding is expected against f64");
}

/// The same product, run again and again with a fixed thread count, gives the same bits (and the
/// same bits as one thread).
#[test]
fn a_fixed_thread_count_gives_the_same_bits_every_run() {
    let isa = Isa::active();
    let (one, _) = run(isa, 1, 300, 1152, 384, ["row", "col", "row"], false);
    for _ in 0..5 {
        let (c, _) = run(isa, 2, 300, 1152, 384, ["row", "col", "row"], false);
        assert!(one.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

#[test]
fn a_zero_depth_product_is_zero_or_leaves_c() {
    for acc in [false, true] {
        let (c, worst) = run(Isa::active(), 2, 5, 7, 0, ["row", "row", "row"], acc);
        assert_eq!(worst, 0.0);
        assert_eq!(c.iter().all(|&x| x == 0.0), !acc);
    }
}

#[test]
fn a_view_outside_its_slice_or_an_overlapping_c_is_refused() {
    let a = vec![1.0; 6];
    let b = vec![1.0; 6];
    let mut c = vec![0.0; 4];
    let t = Threads::serial();
    let ok = matmul(
        Isa::Portable,
        (2, 2, 3),
        Strided {
            data: &a,
            offset: 0,
            rs: 3,
            cs: 1,
        },
        Strided {
            data: &b,
            offset: 0,
            rs: 2,
            cs: 1,
        },
        StridedMut {
            data: &mut c,
            offset: 0,
            rs: 2,
            cs: 1,
        },
        (false, None),
        &t,
    );
    assert_eq!(ok, Ok(()));
    assert_eq!(c, [3.0; 4]);
    let e = matmul(
        Isa::Portable,
        (2, 2, 4),
        Strided {
            data: &a,
            offset: 0,
            rs: 4,
            cs: 1,
        },
        Strided {
            data: &b,
            offset: 0,
            rs: 2,
            cs: 1,
        },
        StridedMut {
            data: &mut c,
            offset: 0,
            rs: 2,
            cs: 1,
        },
        (false, None),
        &t,
    )
    .unwrap_err();
    assert!(
        e.0.starts_with("A (2 × 4, offset 0, strides 4, 1) reaches outside its 6 values"),
        "{e}"
    );
    let e = matmul(
        Isa::Portable,
        (2, 2, 3),
        Strided {
            data: &a,
            offset: 0,
            rs: 3,
            cs: 1,
        },
        Strided {
            data: &b,
            offset: 0,
            rs: 2,
            cs: 1,
        },
        StridedMut {
            data: &mut c,
            offset: 0,
            rs: 1,
            cs: 1,
        },
        (false, None),
        &t,
    )
    .unwrap_err();
    assert!(e.0.contains("share an address"), "{e}");
}

/// `C = bias + A·B` gives the bits of C filled with the bias rows and accumulated into, on every
/// path, for row-major C (the bias in the first block's store) and column-major C (filled first).
#[test]
fn a_bias_is_the_bias_rows_accumulated_into() {
    for (m, n, k) in [(13, 67, KC + 9), (30, 32, 5), (1, 5, 0)] {
        for c_layout in ["row", "col"] {
            let a = View::new(m, k, "row", 4);
            let b = View::new(k, n, "col", 5);
            let bias = values(6, n);
            for isa in paths() {
                let mut with = View::new(m, n, c_layout, 7);
                let mut filled = View::new(m, n, c_layout, 7);
                for i in 0..m {
                    for (j, &v) in bias.iter().enumerate() {
                        let at = (filled.off + i as isize * filled.rs + j as isize * filled.cs) as usize;
                        filled.buf[at] = v;
                    }
                }
                let t = Threads::serial();
                let out = StridedMut {
                    data: &mut with.buf,
                    offset: with.off as usize,
                    rs: with.rs,
                    cs: with.cs,
                };
                matmul(
                    isa,
                    (m, n, k),
                    a.strided(),
                    b.strided(),
                    out,
                    (false, Some(&bias)),
                    &t,
                )
                .expect("valid");
                let out = StridedMut {
                    data: &mut filled.buf,
                    offset: filled.off as usize,
                    rs: filled.rs,
                    cs: filled.cs,
                };
                matmul(isa, (m, n, k), a.strided(), b.strided(), out, (true, None), &t).expect("valid");
                assert!(
                    with.buf
                        .iter()
                        .zip(&filled.buf)
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{m}×{n}×{k}, C {c_layout}, {isa:?}"
                );
            }
        }
    }
    let t = Threads::serial();
    let a = View::new(2, 3, "row", 1);
    let b = View::new(3, 4, "row", 2);
    let mut c = vec![0.0; 8];
    let e = matmul(
        Isa::Portable,
        (2, 4, 3),
        a.strided(),
        b.strided(),
        StridedMut {
            data: &mut c,
            offset: 0,
            rs: 4,
            cs: 1,
        },
        (false, Some(&[1.0; 3])),
        &t,
    )
    .unwrap_err();
    assert_eq!(e.0, "the bias has 3 values for 4 columns");
}

/// A `B` packed once and used by several products (attention's `Kᵀ` and `V`, block of query rows
/// by block) gives, row block by row block, the bits of one whole product: on every path, for
/// layouts of A and B, depths around the block and edges of the micro-kernels' tiles, with and
/// without accumulation; and packing again replaces what was packed.
#[test]
fn a_packed_b_gives_the_whole_products_bits_block_by_block() {
    use lexbench_gemm::PackedB;
    for isa in paths() {
        let mut packed = PackedB::new(isa);
        for (m, n, k, layouts) in [
            (128, 128, 32, ["row", "col"]),
            (128, 32, 128, ["row", "row"]),
            (37, 45, 2 * KC + 5, ["gap", "neg"]),
            (25, 1, 7, ["col", "gap"]),
            (1, 33, 1, ["row", "row"]),
        ] {
            for accumulate in [false, true] {
                let (whole, _) = run(isa, 1, m, n, k, [layouts[0], layouts[1], "row"], accumulate);
                let a = View::new(m, k, layouts[0], 1);
                let b = View::new(k, n, layouts[1], 2);
                let mut c = View::new(m, n, "row", 3);
                // SAFETY: B's, A's and C's elements are inside their buffers (View's layouts).
                unsafe {
                    packed.pack((k, n), b.buf.as_ptr().offset(b.off), b.rs, b.cs);
                    for r0 in (0..m).step_by(24) {
                        let rows = 24.min(m - r0);
                        let a0 = a.buf.as_ptr().offset(a.off + r0 as isize * a.rs);
                        let c0 = c.buf.as_mut_ptr().add(r0 * n);
                        packed.product(rows, (a0, a.rs, a.cs), (c0, n as isize), accumulate);
                    }
                }
                let same = c.buf.iter().zip(&whole).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(
                    same,
                    "{isa:?} {m} × {n} × {k} {layouts:?} accumulate {accumulate}"
                );
            }
        }
    }
}

/// `sgemm_then` gives the product with `then` applied to every element exactly once, wherever the
/// tiles cut the rows: the same bits as the product followed by a pass over `C`, on every thread
/// count, for row-major and other layouts of `C`.
#[test]
fn then_runs_once_on_every_element_as_a_pass_after_the_product_would() {
    use lexbench_gemm::{Product, sgemm_then};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let f = |i: usize, j: usize, v: f32| (v * 1.5 + (i * 7 + j) as f32).sin();
    for (m, n, k, c_layout) in [
        (300, 1152, 384, "row"),
        (37, 45, 2 * KC + 5, "row"),
        (13, 600, 7, "col"),
        (5, 3, 0, "row"),
    ] {
        for threads in [1, 2, 3] {
            let (mut want, _) = run(Isa::active(), threads, m, n, k, ["row", "col", c_layout], false);
            let c = View::new(m, n, c_layout, 3);
            for i in 0..m {
                for j in 0..n {
                    let at = (c.off + i as isize * c.rs + j as isize * c.cs) as usize;
                    want[at] = f(i, j, want[at]);
                }
            }
            let a = View::new(m, k, "row", 1);
            let b = View::new(k, n, "col", 2);
            let mut got = View::new(m, n, c_layout, 3);
            let seen = AtomicUsize::new(0);
            let then = |i: usize, j0: usize, piece: &mut [f32]| {
                seen.fetch_add(piece.len(), Ordering::Relaxed);
                for (jj, v) in piece.iter_mut().enumerate() {
                    *v = f(i, j0 + jj, *v);
                }
            };
            let pool = scoped_threads(threads);
            let t = Threads {
                count: threads,
                run: &pool,
            };
            let p = Product {
                m,
                n,
                k,
                a: a.buf.as_ptr(),
                rsa: a.rs,
                csa: a.cs,
                b: b.buf.as_ptr(),
                rsb: b.rs,
                csb: b.cs,
                c: got.buf.as_mut_ptr(),
                rsc: got.rs,
                csc: got.cs,
                accumulate: false,
                bias: std::ptr::null(),
            };
            // SAFETY: the views' elements are inside their buffers; C is its own buffer.
            unsafe { sgemm_then(p, &t, &then) };
            assert_eq!(
                seen.load(Ordering::Relaxed),
                m * n,
                "{m} × {n} × {k} {c_layout}, {threads} threads"
            );
            let same = got.buf.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{m} × {n} × {k} {c_layout}, {threads} threads: other bits");
        }
    }
}
