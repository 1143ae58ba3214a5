//! The FP32 FMA throughput of one core: a burn of independent vector FMAs that the benchmark
//! harness (`lexbench-bench`) times to report what the vector units deliver at the clock they run
//! at, beside the peak it computes from a width table. Not used on any model path.
#![allow(unsafe_code)]

use crate::Isa;

/// Independent accumulators of [`fma_burn`]: at least the FMA latency (4 cycles on the cores of
/// the AVX-512 table) times the FMA pipes (2), so that the loop is bound by throughput, not latency;
/// 16 of 32 vector registers with AVX-512, 12 of 16 with AVX2.
pub const FMA_CHAINS_AVX512: usize = 16;
/// See [`FMA_CHAINS_AVX512`].
pub const FMA_CHAINS_AVX2: usize = 12;

/// Runs `rounds` rounds of independent vector FMAs (`acc ← acc · a + b` on [`FMA_CHAINS_AVX512`]
/// 512-bit or [`FMA_CHAINS_AVX2`] 256-bit accumulators) and returns the FP32 FLOPs done (a
/// multiply-add counts 2), or `None` when the CPU lacks the path. The measured FMA throughput of
/// the benchmark harness (`lexbench-bench`'s `machine`) times it: what the vector units deliver at the clock they run at, beside the
/// peak computed from a width table and an integer clock.
pub fn fma_burn(path: Isa, rounds: u64) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        fn wide(rounds: u64) -> f32 {
            use std::arch::x86_64::*;
            let a = _mm512_set1_ps(std::hint::black_box(0.999_9));
            let b = _mm512_set1_ps(std::hint::black_box(1e-4));
            let mut acc = [_mm512_set1_ps(1.0); FMA_CHAINS_AVX512];
            for _ in 0..rounds {
                for v in &mut acc {
                    *v = _mm512_fmadd_ps(*v, a, b);
                }
            }
            let mut sum = _mm512_setzero_ps();
            for v in acc {
                sum = _mm512_add_ps(sum, v);
            }
            _mm512_reduce_add_ps(sum)
        }
        #[target_feature(enable = "avx2,fma")]
        fn narrow(rounds: u64) -> f32 {
            use std::arch::x86_64::*;
            let a = _mm256_set1_ps(std::hint::black_box(0.999_9));
            let b = _mm256_set1_ps(std::hint::black_box(1e-4));
            let mut acc = [_mm256_set1_ps(1.0); FMA_CHAINS_AVX2];
            for _ in 0..rounds {
                for v in &mut acc {
                    *v = _mm256_fmadd_ps(*v, a, b);
                }
            }
            let mut sum = _mm256_setzero_ps();
            for v in acc {
                sum = _mm256_add_ps(sum, v);
            }
            let mut lanes = [0f32; 8];
            // SAFETY: `lanes` holds 8 f32, the 256 bits stored.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
            lanes.iter().sum()
        }
        let widest = Isa::detected();
        match path {
            Isa::Avx512 if widest >= Isa::Avx512 => {
                // SAFETY: the CPU has AVX-512F (detected above).
                std::hint::black_box(unsafe { wide(std::hint::black_box(rounds)) });
                return Some(rounds as f64 * (FMA_CHAINS_AVX512 * 16 * 2) as f64);
            }
            Isa::Avx2 if widest >= Isa::Avx2 => {
                // SAFETY: the CPU has AVX2 and FMA (detected above).
                std::hint::black_box(unsafe { narrow(std::hint::black_box(rounds)) });
                return Some(rounds as f64 * (FMA_CHAINS_AVX2 * 8 * 2) as f64);
            }
            _ => {}
        }
    }
    let _ = (path, rounds);
    None
}

#[cfg(test)]
mod tests {
    //! The FMA loop counts its FLOPs on the paths the CPU has and refuses the others.
    use super::*;

    #[test]
    fn the_fma_loop_counts_its_flops_on_the_paths_the_cpu_has() {
        for path in [Isa::Avx2, Isa::Avx512] {
            let flops = fma_burn(path, 1000);
            if path <= Isa::detected() {
                let lanes = if path == Isa::Avx512 {
                    16 * FMA_CHAINS_AVX512
                } else {
                    8 * FMA_CHAINS_AVX2
                };
                assert_eq!(flops, Some(1000.0 * 2.0 * lanes as f64), "{}", path.name());
            } else {
                assert_eq!(flops, None, "{}", path.name());
            }
        }
        assert_eq!(fma_burn(Isa::Portable, 10), None);
    }
}
