//! The machine a benchmark runs on, for the head of `lexbench-bench`'s report
//! ([`crate::harness`]): the CPU, the vector path the gemm kernels take, a measured clock, the FP32 FMA
//! peak they imply, and the load average.
//!
//! - [`CpuInfo`]: the model string, vendor, CPUID family and model, logical CPUs and physical cores,
//!   parsed from `/proc/cpuinfo` ([`parse_cpuinfo`]); [`SimdFeatures`]: what
//!   `is_x86_feature_detected!` sees (the same test gemm dispatches on).
//! - [`VectorPath`]: the instructions' width and FMA pipes per core, hence FP32 FLOP per cycle and
//!   core, = pipes × (datapath width / 32) × 2 (an FMA is 2 FLOP). AVX-512 comes in three widths
//!   ([`Avx512Width`]), told apart by a table of known microarchitectures ([`avx512_width`]); a CPU
//!   outside the table is reported as "unknown width, assumed full" (64 FLOP/cycle: the larger peak,
//!   so that a share of it is never overstated).
//! - [`gemm_path`]: the path `lexbench-gemm` (every f32 product of candle and of lexbench's kernels)
//!   takes: the widest the CPU has, capped at run time by `LEXBENCH_ISA=avx2|portable`.
//! - [`Clock`]: measured with a dependent chain of 64-bit integer multiplications ([`measure_clock`]),
//!   on one thread and on every bench thread at once.
//! - [`Machine::peak_flops`]: cores × FLOP per cycle and core × clock, the cores being the bench
//!   threads, at most the physical cores.
//! - [`FmaThroughput`]: the FP32 FMA throughput measured with independent vector FMAs
//!   ([`measure_fma`]) on one thread and on every bench thread at once, for AVX-512 and AVX2. It
//!   checks the computed peak: a core that lowers its clock under AVX-512, two "cores" that are
//!   SMT siblings of one, or a width table that is wrong all show as a measured figure below it.
//! - [`loadavg`]: `/proc/loadavg`'s three averages ([`parse_loadavg`]); [`cpu_times`]: `/proc/stat`'s
//!   CPU time, whose steal share over a run says how much of it the hypervisor gave away.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;

/// What `/proc/cpuinfo` says about the CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CpuInfo {
    /// `model name` (e.g. `AMD EPYC 9R14 96-Core Processor`); empty when absent.
    pub model_name: String,
    /// `vendor_id` (`GenuineIntel`, `AuthenticAMD`); empty when absent.
    pub vendor: String,
    /// CPUID family (`cpu family`).
    pub family: Option<u32>,
    /// CPUID model (`model`; extended model included, as Linux prints it).
    pub model: Option<u32>,
    /// `processor` entries: the logical CPUs the kernel shows.
    pub logical_cpus: usize,
    /// Distinct (`physical id`, `core id`) pairs, when the file has them.
    pub physical_cores: Option<usize>,
}

/// Parses `/proc/cpuinfo` (x86 layout: `key\t: value` lines, one block per logical CPU). Fields of
/// the first block describe the CPU; blocks are counted for the logical CPUs.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut cores = BTreeSet::new();
    let mut physical: Option<String> = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => info.logical_cpus += 1,
            "model name" if info.model_name.is_empty() => info.model_name = value.to_owned(),
            "vendor_id" if info.vendor.is_empty() => info.vendor = value.to_owned(),
            "cpu family" if info.family.is_none() => info.family = value.parse().ok(),
            "model" if info.model.is_none() => info.model = value.parse().ok(),
            "physical id" => physical = Some(value.to_owned()),
            "core id" => {
                cores.insert((physical.clone().unwrap_or_default(), value.to_owned()));
            }
            _ => {}
        }
    }
    info.physical_cores = (!cores.is_empty()).then_some(cores.len());
    info
}

/// The CPU of this machine: `/proc/cpuinfo`, or an empty record (logical CPUs from
/// `available_parallelism`) where the file is missing.
pub fn cpu_info() -> CpuInfo {
    let mut info = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| parse_cpuinfo(&t))
        .unwrap_or_default();
    if info.logical_cpus == 0 {
        info.logical_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    }
    info
}

/// The vector instructions this CPU runs (`is_x86_feature_detected!`, the test gemm dispatches on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SimdFeatures {
    /// AVX-512 Foundation.
    pub avx512f: bool,
    /// AVX2.
    pub avx2: bool,
    /// FMA3.
    pub fma: bool,
}

impl SimdFeatures {
    /// This CPU's features (all false off x86-64).
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            Self {
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Self::default()
        }
    }
}

/// How a core executes 512-bit FMAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Avx512Width {
    /// Two 512-bit FMA units per core (Xeon Scalable Gold 6/Platinum, Ice Lake-SP and later Xeons,
    /// AMD Zen 5 desktop and server): 64 FP32 FLOP per cycle.
    Full,
    /// One 512-bit FMA unit (Intel client cores with AVX-512, Xeon Bronze/Silver/Gold 5):
    /// 32 FLOP per cycle.
    OneUnit,
    /// 512-bit instructions split over two 256-bit FMA datapaths (AMD Zen 4, Zen 5 mobile):
    /// 32 FLOP per cycle.
    DoublePumped,
}

/// The AVX-512 width of `cpu` from a table of known microarchitectures, keyed by vendor, CPUID
/// family and model (and, for Skylake-SP/Cascade Lake, where SKUs differ, the model string), with
/// the entry that decided it; `None` when the CPU is not in the table. Sources: Intel's ARK ("# of
/// AVX-512 FMA Units"), the optimisation manuals, AMD's Zen 4/Zen 5 software optimisation guides;
/// model numbers as Linux's `intel-family.h` and `amd.c` name them.
pub fn avx512_width(cpu: &CpuInfo) -> (Option<Avx512Width>, String) {
    use Avx512Width::{DoublePumped, Full, OneUnit};
    let (Some(family), Some(model)) = (cpu.family, cpu.model) else {
        return (None, "no CPUID family/model in /proc/cpuinfo".into());
    };
    let name = cpu.model_name.as_str();
    let entry = |w: Avx512Width, what: &str| (Some(w), format!("{what} (family {family}, model {model:#x})"));
    match (cpu.vendor.as_str(), family) {
        ("GenuineIntel", 6) => match model {
            0x55 => {
                // Skylake-SP, Cascade Lake, Cooper Lake: the FMA units differ by SKU.
                if name.contains("Platinum")
                    || name.contains("Gold 6")
                    || name.contains("Gold 5122")
                    || name.contains("Gold 5222")
                {
                    entry(
                        Full,
                        "Skylake-SP/Cascade Lake Platinum or Gold 6xxx: 2 × 512-bit FMA",
                    )
                } else if name.contains("Silver") || name.contains("Bronze") || name.contains("Gold 5") {
                    entry(
                        OneUnit,
                        "Skylake-SP/Cascade Lake Bronze, Silver or Gold 5xxx: 1 × 512-bit FMA",
                    )
                } else {
                    (
                        None,
                        format!(
                            "Skylake-SP/X family {family}, model {model:#x}: the FMA units differ by SKU ({name:?})"
                        ),
                    )
                }
            }
            0x6A => entry(Full, "Ice Lake-SP: 2 × 512-bit FMA"),
            0x8F => entry(Full, "Sapphire Rapids: 2 × 512-bit FMA"),
            0xCF => entry(Full, "Emerald Rapids: 2 × 512-bit FMA"),
            0xAD | 0xAE => entry(Full, "Granite Rapids: 2 × 512-bit FMA"),
            0x57 | 0x85 => entry(Full, "Knights Landing/Mill: 2 × 512-bit FMA"),
            0x66 | 0x7D | 0x7E | 0x8C | 0x8D | 0xA7 | 0x97 | 0x9A => entry(
                OneUnit,
                "Intel client core (Cannon/Ice/Tiger/Rocket/Alder Lake): 1 × 512-bit FMA",
            ),
            _ => (
                None,
                format!("Intel family 6, model {model:#x}: not in the table"),
            ),
        },
        // Every family-19h CPU with AVX-512 is Zen 4 (Zen 3 has none).
        ("AuthenticAMD", 0x19) => entry(DoublePumped, "AMD Zen 4: 2 × 256-bit FMA datapaths"),
        ("AuthenticAMD", 0x1A) => match model {
            0x00..=0x1F => entry(Full, "AMD Zen 5 server (Turin): 2 × 512-bit FMA"),
            0x40..=0x4F => entry(Full, "AMD Zen 5 desktop (Granite Ridge): 2 × 512-bit FMA"),
            0x20..=0x2F | 0x60..=0x6F => entry(
                DoublePumped,
                "AMD Zen 5 mobile (Strix Point, Krackan): 2 × 256-bit FMA datapaths",
            ),
            _ => (
                None,
                format!("AMD family 0x1a, model {model:#x}: not in the table"),
            ),
        },
        (vendor, _) => (
            None,
            format!("{vendor} family {family:#x}, model {model:#x}: not in the table"),
        ),
    }
}

/// The instruction set a path uses: the engine's (`lexbench-gemm`'s), one for the products and the
/// kernels; in a report by its name (`avx512`, `avx2`, `portable`).
pub use lexbench_engine::Isa;

fn isa_name<S: serde::Serializer>(isa: &Isa, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(isa.name())
}

/// A vector path and the FP32 FMA throughput it gives one core.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorPath {
    /// The instruction set.
    #[serde(serialize_with = "isa_name")]
    pub isa: Isa,
    /// In words: `AVX-512 (full width: 2 FMA units per core)`, `AVX-512 (double-pumped: …)`, `AVX2`.
    pub description: String,
    /// FMA instructions a core issues per cycle at `datapath_bits` (0 for the scalar path).
    pub fma_pipes: u32,
    /// Width of each FMA pipe in bits.
    pub datapath_bits: u32,
    /// FP32 FLOP per cycle and core: `fma_pipes × datapath_bits / 32 × 2`.
    pub flops_per_cycle: f64,
    /// Whether the width is an assumption (the CPU is not in the table).
    pub assumed: bool,
    /// The table entry or rule that gave the width.
    pub rule: String,
}

impl VectorPath {
    fn new(
        isa: Isa,
        description: String,
        fma_pipes: u32,
        datapath_bits: u32,
        assumed: bool,
        rule: String,
    ) -> Self {
        Self {
            isa,
            description,
            fma_pipes,
            datapath_bits,
            flops_per_cycle: f64::from(fma_pipes) * f64::from(datapath_bits) / 32.0 * 2.0,
            assumed,
            rule,
        }
    }

    /// The AVX-512 path of `cpu` ([`avx512_width`]; unknown → assumed full, stated).
    pub fn avx512(cpu: &CpuInfo) -> Self {
        match avx512_width(cpu) {
            (Some(Avx512Width::Full), rule) => Self::new(
                Isa::Avx512,
                "AVX-512 (full width: 2 FMA units per core)".into(),
                2,
                512,
                false,
                rule,
            ),
            (Some(Avx512Width::OneUnit), rule) => Self::new(
                Isa::Avx512,
                "AVX-512 (one 512-bit FMA unit per core)".into(),
                1,
                512,
                false,
                rule,
            ),
            (Some(Avx512Width::DoublePumped), rule) => Self::new(
                Isa::Avx512,
                "AVX-512 (double-pumped: 512-bit instructions on two 256-bit FMA datapaths)".into(),
                2,
                256,
                false,
                rule,
            ),
            (None, why) => Self::new(
                Isa::Avx512,
                "AVX-512 (unknown width, assumed full: 2 FMA units per core)".into(),
                2,
                512,
                true,
                format!("{why}; assumed 2 × 512-bit FMA, the larger peak, so that no share is overstated"),
            ),
        }
    }

    /// The AVX2 path of `cpu`: two 256-bit FMA pipes (Intel since Haswell, AMD since Zen 2), two
    /// 128-bit ones on AMD Zen/Zen+ (family 0x17, models below 0x30) and Intel E-core-only parts
    /// (Alder Lake-N 0xBE, Sierra Forest 0xAF); anything else is assumed to have two 256-bit pipes.
    pub fn avx2(cpu: &CpuInfo) -> Self {
        let narrow = match (cpu.vendor.as_str(), cpu.family, cpu.model) {
            ("AuthenticAMD", Some(0x17), Some(m)) if m < 0x30 => Some("AMD Zen/Zen+: 2 × 128-bit FMA"),
            ("GenuineIntel", Some(6), Some(0xBE | 0xAF)) => {
                Some("Intel E-cores (Gracemont/Crestmont): 2 × 128-bit FMA")
            }
            _ => None,
        };
        let known = matches!(
            (cpu.vendor.as_str(), cpu.family),
            ("GenuineIntel", Some(6)) | ("AuthenticAMD", Some(0x17..))
        );
        match narrow {
            Some(rule) => Self::new(
                Isa::Avx2,
                "AVX2 (two 128-bit FMA datapaths)".into(),
                2,
                128,
                false,
                rule.into(),
            ),
            None => Self::new(
                Isa::Avx2,
                "AVX2 (two 256-bit FMA pipes)".into(),
                2,
                256,
                !known,
                if known {
                    "Intel since Haswell, AMD since Zen 2: 2 × 256-bit FMA".into()
                } else {
                    "not a known x86 vendor/family; assumed 2 × 256-bit FMA".into()
                },
            ),
        }
    }

    /// No FMA vectors: no peak is computed (`flops_per_cycle` 0).
    pub fn scalar() -> Self {
        Self::new(
            Isa::Portable,
            "scalar (no AVX2/FMA)".into(),
            0,
            0,
            false,
            "no FMA vectors: no peak".into(),
        )
    }
}

/// The path `lexbench-gemm`'s products take on this CPU when `active` is its run-time choice
/// ([`Isa::active`]: the widest the CPU has, capped by `LEXBENCH_ISA`).
pub fn gemm_path(cpu: &CpuInfo, f: SimdFeatures, active: Isa) -> VectorPath {
    match active {
        Isa::Avx512 => VectorPath::avx512(cpu),
        Isa::Avx2 => {
            let mut p = VectorPath::avx2(cpu);
            if f.avx512f {
                p.description
                    .push_str(" — capped by LEXBENCH_ISA on an AVX-512 CPU");
            }
            p
        }
        Isa::Portable => VectorPath::scalar(),
    }
}

/// The best path the CPU offers (what PyTorch's and ONNX Runtime's kernels pick).
pub fn best_path(cpu: &CpuInfo, f: SimdFeatures) -> VectorPath {
    if f.avx512f {
        VectorPath::avx512(cpu)
    } else if f.fma && f.avx2 {
        VectorPath::avx2(cpu)
    } else {
        VectorPath::scalar()
    }
}

/// A measured clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clock {
    /// GHz with every bench thread running the loop at once (the clock the peak uses).
    pub all_core_ghz: f64,
    /// GHz with one thread running it.
    pub one_core_ghz: f64,
    /// `/proc/cpuinfo`'s `cpu MHz` of the first CPU (nominal in most VMs), for comparison.
    pub cpuinfo_mhz: Option<f64>,
    /// How the figures were obtained.
    pub method: String,
    /// False in a debug build, where the loop is not compiled to a bare chain and the figures are
    /// `cpuinfo_max_freq` or `cpu MHz` instead.
    pub measured: bool,
}

/// Cycles of one 64-bit `IMUL r64, r64`: its latency on every x86-64 core since Intel Nehalem and
/// AMD Zen (Agner Fog's instruction tables; uops.info).
pub const IMUL_LATENCY_CYCLES: f64 = 3.0;

/// `n` multiplications, each waiting for the previous one: `n × IMUL_LATENCY_CYCLES` cycles in an
/// optimised build (the loop counter runs beside the chain on other ports). The chain squares
/// (`x ← x·x`): a chain by a constant (`x ← x·k`) would be reassociated by LLVM into one multiply
/// by `k⁸` per eight steps (measured: 21 "GHz"), squares cannot be.
fn imul_chain(n: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15_u64);
    for _ in 0..n {
        x = x.wrapping_mul(x);
    }
    x
}

/// Hz from one timed chain of `n` multiplications.
fn chain_hz(n: u64) -> f64 {
    let t = Instant::now();
    black_box(imul_chain(black_box(n)));
    n as f64 * IMUL_LATENCY_CYCLES / t.elapsed().as_secs_f64().max(1e-9)
}

/// The median of `xs` (the mean of the two middle values for an even count; NaN when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Median Hz of `samples` chains of about 20 ms each, after a calibration that sizes them.
fn clock_hz(samples: usize) -> f64 {
    let mut n = 1u64 << 16;
    // Calibrate (and warm the core up): grow the chain until it takes 5 ms.
    loop {
        let t = Instant::now();
        black_box(imul_chain(black_box(n)));
        let s = t.elapsed().as_secs_f64();
        if s > 0.005 || n > 1 << 40 {
            n = (n as f64 * 0.020 / s.max(1e-9)) as u64;
            break;
        }
        n *= 2;
    }
    let hz: Vec<f64> = (0..samples.max(1)).map(|_| chain_hz(n.max(1))).collect();
    median(&hz)
}

/// The first `cpu MHz` of `/proc/cpuinfo`.
fn cpuinfo_mhz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split_once(':'))
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// cpufreq's `cpuinfo_max_freq` of CPU 0, in MHz (absent in most VMs).
fn max_freq_mhz() -> Option<f64> {
    let khz: f64 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(khz / 1000.0)
}

/// Measures the clock: a dependent chain of 64-bit integer squarings ([`IMUL_LATENCY_CYCLES`]
/// each), timed for about 20 ms, median of 7 runs; once on one thread, then on `threads` threads at
/// once (each thread's median, averaged). This is the clock of scalar integer code: a core running
/// AVX-512 may run slower (Intel's frequency licences, strongest on Skylake-SP). In a debug build
/// the loop is not a bare chain, so the figures are not measured: `cpuinfo_max_freq` (the highest
/// clock, so that a share of the peak is never overstated), else `/proc/cpuinfo`'s `cpu MHz` (often
/// the nominal clock, below the turbo one: shares may then be overstated, and the report says so).
pub fn measure_clock(threads: usize) -> Clock {
    let nominal = cpuinfo_mhz();
    if cfg!(debug_assertions) {
        let (mhz, from) = match (max_freq_mhz(), nominal) {
            (Some(m), _) => (m, "cpufreq cpuinfo_max_freq"),
            (None, Some(m)) => (
                m,
                "/proc/cpuinfo cpu MHz (often the nominal clock: shares may be overstated)",
            ),
            (None, None) => (f64::NAN, "nothing (no cpufreq, no cpu MHz)"),
        };
        return Clock {
            all_core_ghz: mhz / 1000.0,
            one_core_ghz: mhz / 1000.0,
            cpuinfo_mhz: nominal,
            method: format!(
                "not measured (debug build: the timing loop is unoptimised); {from}; run a release build for a measured clock"
            ),
            measured: false,
        };
    }
    const SAMPLES: usize = 7;
    let one = clock_hz(SAMPLES);
    let threads = threads.max(1);
    let barrier = std::sync::Barrier::new(threads);
    let all: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    clock_hz(SAMPLES)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let all_hz = all.iter().sum::<f64>() / all.len().max(1) as f64;
    Clock {
        all_core_ghz: all_hz / 1e9,
        one_core_ghz: one / 1e9,
        cpuinfo_mhz: nominal,
        method: format!(
            "dependent chain of 64-bit IMULs (x ← x·x, {IMUL_LATENCY_CYCLES} cycles each), ~20 ms per run, median of \
             {SAMPLES} runs; all-core: {threads} threads at once, mean of their medians"
        ),
        measured: true,
    }
}

/// A measured FP32 FMA throughput of one vector path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FmaThroughput {
    /// The instruction set.
    #[serde(serialize_with = "isa_name")]
    pub isa: Isa,
    /// GFLOP/s of one thread.
    pub one_thread_gflops: f64,
    /// GFLOP/s of `threads` threads at once (their sum).
    pub all_threads_gflops: f64,
    /// The threads of `all_threads_gflops`.
    pub threads: usize,
    /// How it was measured.
    pub method: String,
}

/// Median GFLOP/s of `samples` runs of [`fma_burn`](lexbench_engine::peak::fma_burn) of about
/// 20 ms each, after a calibration that sizes them (`None` when the CPU lacks the path).
fn fma_gflops(path: Isa, samples: usize) -> Option<f64> {
    use lexbench_engine::peak::fma_burn;
    let mut rounds = 1u64 << 12;
    // Calibrate (and wake the vector units up, which some cores power down when idle).
    loop {
        let t = Instant::now();
        fma_burn(path, rounds)?;
        let s = t.elapsed().as_secs_f64();
        if s > 0.005 || rounds > 1 << 40 {
            rounds = ((rounds as f64 * 0.020 / s.max(1e-9)) as u64).max(1);
            break;
        }
        rounds *= 2;
    }
    let mut rates = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        let t = Instant::now();
        let flops = fma_burn(path, rounds)?;
        rates.push(flops / t.elapsed().as_secs_f64().max(1e-9) / 1e9);
    }
    Some(median(&rates))
}

/// Measures the FP32 FMA throughput of `isa` (AVX-512 or AVX2; `None` for the scalar path, for a
/// path the CPU lacks, and in a debug build, where the loop is not compiled to bare FMAs): 16
/// (AVX-512) or 12 (AVX2) independent accumulators a thread, `acc ← acc · a + b`, about 20 ms per
/// run, median of 5 runs, once on one thread, then on `threads` threads at once (their medians
/// summed).
pub fn measure_fma(isa: Isa, threads: usize) -> Option<FmaThroughput> {
    use lexbench_engine::peak::{FMA_CHAINS_AVX2, FMA_CHAINS_AVX512};
    if cfg!(debug_assertions) {
        return None;
    }
    let (path, chains, bits) = match isa {
        Isa::Avx512 => (Isa::Avx512, FMA_CHAINS_AVX512, 512),
        Isa::Avx2 => (Isa::Avx2, FMA_CHAINS_AVX2, 256),
        Isa::Portable => return None,
    };
    const SAMPLES: usize = 5;
    let one = fma_gflops(path, SAMPLES)?;
    let threads = threads.max(1);
    let barrier = std::sync::Barrier::new(threads);
    let all: Vec<Option<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    fma_gflops(path, SAMPLES)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    let all = all.into_iter().sum::<Option<f64>>()?;
    Some(FmaThroughput {
        isa,
        one_thread_gflops: one,
        all_threads_gflops: all,
        threads,
        method: format!(
            "{chains} independent {bits}-bit FMA chains a thread, ~20 ms per run, median of {SAMPLES} runs; \
             {threads} threads at once, their medians summed"
        ),
    })
}

/// The machine's CPU time so far, summed over its CPUs (`/proc/stat`'s `cpu` line), in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuTimes {
    /// Every field of the line (user, nice, system, idle, iowait, irq, softirq, steal; guest time is
    /// inside user and nice, so not added again).
    pub total: u64,
    /// Idle and iowait.
    pub idle: u64,
    /// Time the hypervisor gave this machine's virtual CPUs to something else while they had work.
    pub steal: u64,
}

impl CpuTimes {
    /// The shares of the time between `self` (earlier) and `later` that were stolen and idle, as
    /// fractions of all the CPUs' time (`None` when no time passed).
    pub fn shares_until(&self, later: &CpuTimes) -> Option<(f64, f64)> {
        let total = later.total.checked_sub(self.total)?;
        if total == 0 {
            return None;
        }
        let steal = later.steal.saturating_sub(self.steal) as f64 / total as f64;
        let idle = later.idle.saturating_sub(self.idle) as f64 / total as f64;
        Some((steal, idle))
    }
}

/// The `cpu` line of `/proc/stat`'s text.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .ok()?;
    if v.len() < 4 {
        return None;
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(CpuTimes {
        total: (0..8).map(at).sum(),
        idle: at(3) + at(4),
        steal: at(7),
    })
}

/// This machine's CPU times (`None` without `/proc/stat`).
pub fn cpu_times() -> Option<CpuTimes> {
    parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Clock ticks a second of `/proc`'s CPU times (Linux's `USER_HZ`, 100 on every architecture it
/// reports to user space with).
pub const TICKS_PER_S: f64 = 100.0;

/// The CPU time of one thread of this process so far: its `/proc/self/task/TID/stat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadTime {
    /// The thread's id (the main thread's is the process id).
    pub tid: u32,
    /// Its name (`comm`: `lexbench-bench`, the pool's `rayon-…`).
    pub name: String,
    /// User and system time, in clock ticks ([`TICKS_PER_S`]).
    pub ticks: u64,
}

/// A `/proc/…/task/TID/stat` line: the name (between the first `(` and the last `)`, which may hold
/// spaces and parentheses) and utime + stime (the 14th and 15th fields).
pub fn parse_task_stat(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is the state (field 3), so utime (field 14) is rest[11] and stime rest[12].
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// Every thread of this process with its CPU time so far (`None` without `/proc/self/task`).
pub fn thread_times() -> Option<Vec<ThreadTime>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        // A thread that ended between the listing and the read has nothing more to add.
        let Ok(text) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        if let Some((name, ticks)) = parse_task_stat(&text) {
            out.push(ThreadTime { tid, name, ticks });
        }
    }
    out.sort_by_key(|t| t.tid);
    Some(out)
}

/// Where the CPU time of some timed passes went, from [`thread_times`] before and after each: the
/// calling thread's (the main thread: what runs between the pool's work, alone) and the other
/// threads' (the pool's), against the passes' wall time on `threads` CPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThreadUse {
    /// Wall seconds of the passes.
    pub wall_s: f64,
    /// CPU seconds of the calling thread.
    pub calling_s: f64,
    /// CPU seconds of every other thread of the process.
    pub others_s: f64,
    /// Threads other than the calling one that ran.
    pub other_threads: usize,
    /// The CPUs the engine was given.
    pub threads: usize,
}

impl ThreadUse {
    /// Adds one pass: the times before and after it, and its wall seconds.
    pub fn add(&mut self, before: &[ThreadTime], after: &[ThreadTime], wall_s: f64) {
        let main = std::process::id();
        let mut others = 0;
        for a in after {
            let was = before.iter().find(|b| b.tid == a.tid).map_or(0, |b| b.ticks);
            let s = a.ticks.saturating_sub(was) as f64 / TICKS_PER_S;
            if a.tid == main {
                self.calling_s += s;
            } else if s > 0.0 {
                self.others_s += s;
                others += 1;
            }
        }
        self.other_threads = self.other_threads.max(others);
        self.wall_s += wall_s;
    }

    /// The share of the CPUs' time the passes left idle: `1 − CPU time / (wall × threads)` (can
    /// be below 0 when more threads than CPUs ran).
    pub fn idle_share(&self) -> f64 {
        if self.wall_s <= 0.0 || self.threads == 0 {
            return 0.0;
        }
        1.0 - (self.calling_s + self.others_s) / (self.wall_s * self.threads as f64)
    }
}

/// The three load averages of `/proc/loadavg`'s text (1, 5 and 15 minutes).
pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(str::parse::<f64>);
    Some([it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?])
}

/// This machine's load averages (`None` without `/proc/loadavg`).
pub fn loadavg() -> Option<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// The machine report at the head of a bench run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// The CPU.
    pub cpu: CpuInfo,
    /// Its vector features.
    pub features: SimdFeatures,
    /// Threads each engine runs with (candle's `get_num_threads`; PyTorch and ONNX Runtime are told
    /// the same).
    pub threads: usize,
    /// Cores the peak counts: the threads, at most the physical cores (SMT siblings share FMA units).
    pub cores_for_peak: usize,
    /// The path candle's matrix products take (`lexbench-gemm`).
    pub candle_path: VectorPath,
    /// The best path of the CPU (what PyTorch's and ONNX Runtime's kernels pick).
    pub best_path: VectorPath,
    /// The AVX2 path, reported beside an AVX-512 one for builds that force it.
    pub avx2_path: Option<VectorPath>,
    /// lexbench's own fused kernels (`lexbench_engine::kernels`: attention softmax, bias, layer norm).
    pub own_kernels: String,
    /// The measured clock.
    pub clock: Clock,
    /// The measured FMA throughput of each vector path the CPU has (none in a debug build).
    pub fma: Vec<FmaThroughput>,
}

impl Machine {
    /// Reads the CPU, detects features and the gemm path, measures the clock on `threads` threads.
    pub fn detect(threads: usize) -> Self {
        let cpu = cpu_info();
        let features = SimdFeatures::detect();
        let candle_path = gemm_path(&cpu, features, Isa::active());
        let best = best_path(&cpu, features);
        let avx2_path = (features.avx512f && features.fma).then(|| VectorPath::avx2(&cpu));
        let cores_for_peak = threads
            .max(1)
            .min(cpu.physical_cores.unwrap_or(cpu.logical_cpus).max(1));
        let fma = [Isa::Avx512, Isa::Avx2]
            .into_iter()
            .filter_map(|isa| measure_fma(isa, threads))
            .collect();
        let active = Isa::active();
        Self {
            clock: measure_clock(threads),
            fma,
            own_kernels: format!(
                "{} (lexbench-engine's kernels: the path the products take{})",
                match active {
                    Isa::Avx512 => "AVX-512",
                    Isa::Avx2 => "AVX2+FMA",
                    Isa::Portable => "portable",
                },
                if active < Isa::detected() {
                    ", capped by LEXBENCH_ISA"
                } else {
                    ""
                }
            ),
            cpu,
            features,
            threads,
            cores_for_peak,
            candle_path,
            best_path: best,
            avx2_path,
        }
    }

    /// FP32 FMA peak of `path` in FLOP/s: cores × FLOP per cycle and core × all-core clock.
    pub fn peak_flops(&self, path: &VectorPath) -> f64 {
        self.cores_for_peak as f64 * path.flops_per_cycle * self.clock.all_core_ghz * 1e9
    }

    /// The report's lines.
    pub fn lines(&self) -> Vec<String> {
        let c = &self.cpu;
        let hex = |v: Option<u32>| v.map_or("?".to_owned(), |v| format!("{v:#x}"));
        let mut lines = vec![format!(
            "machine: {} ({}, family {}, model {}); {} logical CPUs, {} physical cores; {} threads, {} cores for the peak",
            if c.model_name.is_empty() {
                "unknown CPU"
            } else {
                &c.model_name
            },
            if c.vendor.is_empty() { "?" } else { &c.vendor },
            hex(c.family),
            hex(c.model),
            c.logical_cpus,
            c.physical_cores.map_or("?".to_owned(), |n| n.to_string()),
            self.threads,
            self.cores_for_peak
        )];
        let f = self.features;
        lines.push(format!(
            "features: avx512f {}, avx2 {}, fma {}; products: lexbench-gemm, {} path (LEXBENCH_ISA {})",
            f.avx512f,
            f.avx2,
            f.fma,
            Isa::active().name(),
            std::env::var("LEXBENCH_ISA").map_or_else(|_| "unset".to_owned(), |v| format!("{v:?}")),
        ));
        let path_line = |who: &str, p: &VectorPath| {
            format!(
                "{who}: {}; {} × {}-bit FMA = {} FP32 FLOP/cycle/core ({}{})",
                p.description,
                p.fma_pipes,
                p.datapath_bits,
                p.flops_per_cycle,
                if p.assumed { "assumed: " } else { "" },
                p.rule
            )
        };
        lines.push(path_line(
            "vector path, candle (lexbench-gemm)",
            &self.candle_path,
        ));
        if self.best_path != self.candle_path {
            lines.push(path_line("vector path, the CPU's best", &self.best_path));
        }
        lines.push(format!("lexbench's fused kernels: {}", self.own_kernels));
        let k = &self.clock;
        lines.push(format!(
            "clock: {:.3} GHz all-core, {:.3} GHz one core ({}){}",
            k.all_core_ghz,
            k.one_core_ghz,
            k.method,
            k.cpuinfo_mhz
                .map_or(String::new(), |m| format!("; /proc/cpuinfo says {m:.0} MHz"))
        ));
        let peak = |p: &VectorPath| {
            format!(
                "{} cores × {} FLOP/cycle × {:.3} GHz = {:.1} GFLOP/s",
                self.cores_for_peak,
                p.flops_per_cycle,
                k.all_core_ghz,
                self.peak_flops(p) / 1e9
            )
        };
        lines.push(format!(
            "FP32 FMA peak, candle's path: {}",
            peak(&self.candle_path)
        ));
        if self.best_path != self.candle_path {
            lines.push(format!(
                "FP32 FMA peak, the CPU's best path: {}",
                peak(&self.best_path)
            ));
        }
        if let Some(p) = self.avx2_path.as_ref().filter(|p| **p != self.candle_path) {
            lines.push(format!("FP32 FMA peak, AVX2 path: {}", peak(p)));
        }
        if self.fma.is_empty() {
            lines.push("FMA throughput: not measured (a debug build, or no vector FMA)".into());
        }
        for f in &self.fma {
            let computed = [
                Some(&self.candle_path),
                Some(&self.best_path),
                self.avx2_path.as_ref(),
            ]
            .into_iter()
            .flatten()
            .find(|p| p.isa == f.isa)
            .map(|p| self.peak_flops(p) / 1e9);
            lines.push(format!(
                "FMA throughput measured, {}: {:.1} GFLOP/s on 1 thread ({:.1} FLOP/cycle at the one-core clock), \
                 {:.1} GFLOP/s on {} threads at once{} ({})",
                match f.isa {
                    Isa::Avx512 => "AVX-512",
                    Isa::Avx2 => "AVX2",
                    Isa::Portable => "scalar",
                },
                f.one_thread_gflops,
                f.one_thread_gflops / k.one_core_ghz,
                f.all_threads_gflops,
                f.threads,
                computed.map_or(String::new(), |c| format!(
                    " = {:.0}% of the computed peak {c:.1}",
                    100.0 * f.all_threads_gflops / c
                )),
                f.method
            ));
        }
        lines
    }

    /// The measured FMA throughput of `isa` on every bench thread, in FLOP/s (`None`: not measured).
    pub fn measured_flops(&self, isa: Isa) -> Option<f64> {
        self.fma
            .iter()
            .find(|f| f.isa == isa)
            .map(|f| f.all_threads_gflops * 1e9)
    }
}

#[cfg(test)]
mod tests {
    //! Properties: /proc/cpuinfo and /proc/loadavg parse (fields of the first block, logical CPUs,
    //! physical cores over sockets); the AVX-512 table gives the documented widths and the
    //! fallback is stated as an assumption; FLOP per cycle follow pipes × width/32 × 2 (64, 32,
    //! 32, 32, 16); the products' path is lexbench-gemm's run-time choice, a cap named; the peak
    //! multiplies cores, FLOP/cycle and clock; the median.
    use super::*;

    const XEON: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n\
        model name\t: Intel(R) Xeon(R) Processor\nphysical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu avx512f\n\n\
        processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n\
        model name\t: Intel(R) Xeon(R) Processor\nphysical id\t: 0\ncore id\t\t: 1\n\n";

    fn cpu(vendor: &str, family: u32, model: u32, name: &str) -> CpuInfo {
        CpuInfo {
            model_name: name.into(),
            vendor: vendor.into(),
            family: Some(family),
            model: Some(model),
            logical_cpus: 2,
            physical_cores: Some(2),
        }
    }

    #[test]
    fn cpuinfo_parses_the_first_block_and_counts_cpus_and_cores() {
        let c = parse_cpuinfo(XEON);
        assert_eq!(c, cpu("GenuineIntel", 6, 207, "Intel(R) Xeon(R) Processor"));
        // Two SMT siblings per core over two sockets: 8 logical, 4 physical.
        let mut smt = String::new();
        for (p, (sock, core)) in [(0, 0), (0, 0), (0, 1), (0, 1), (1, 0), (1, 0), (1, 1), (1, 1)]
            .iter()
            .enumerate()
        {
            smt.push_str(&format!(
                "processor : {p}\nphysical id : {sock}\ncore id : {core}\n\n"
            ));
        }
        let c = parse_cpuinfo(&smt);
        assert_eq!((c.logical_cpus, c.physical_cores), (8, Some(4)));
        assert_eq!(parse_cpuinfo("").physical_cores, None);
    }

    #[test]
    fn loadavg_parses_three_averages() {
        assert_eq!(
            parse_loadavg("2.52 3.90 4.63 3/104 13739\n"),
            Some([2.52, 3.90, 4.63])
        );
        assert_eq!(parse_loadavg("2.52"), None);
    }

    #[test]
    fn the_table_gives_documented_avx512_widths() {
        let w = |c: &CpuInfo| avx512_width(c).0;
        let intel = |m, name| cpu("GenuineIntel", 6, m, name);
        assert_eq!(
            w(&intel(0xCF, "Intel(R) Xeon(R) Processor")),
            Some(Avx512Width::Full)
        );
        assert_eq!(
            w(&intel(0x8F, "Intel(R) Xeon(R) Platinum 8480+")),
            Some(Avx512Width::Full)
        );
        assert_eq!(
            w(&intel(0x55, "Intel(R) Xeon(R) Gold 6148 CPU")),
            Some(Avx512Width::Full)
        );
        assert_eq!(
            w(&intel(0x55, "Intel(R) Xeon(R) Silver 4114 CPU")),
            Some(Avx512Width::OneUnit)
        );
        assert_eq!(
            w(&intel(0x55, "Intel(R) Xeon(R) Gold 5120 CPU")),
            Some(Avx512Width::OneUnit)
        );
        assert_eq!(
            w(&intel(0x55, "Intel(R) Xeon(R) Gold 5122 CPU")),
            Some(Avx512Width::Full)
        );
        assert_eq!(w(&intel(0x55, "Intel(R) Xeon(R) W-2123")), None);
        assert_eq!(
            w(&intel(0x8C, "11th Gen Intel(R) Core(TM) i7-1165G7")),
            Some(Avx512Width::OneUnit)
        );
        let amd = |f, m| cpu("AuthenticAMD", f, m, "AMD EPYC");
        assert_eq!(w(&amd(0x19, 0x11)), Some(Avx512Width::DoublePumped));
        assert_eq!(w(&amd(0x1A, 0x02)), Some(Avx512Width::Full));
        assert_eq!(w(&amd(0x1A, 0x24)), Some(Avx512Width::DoublePumped));
        assert_eq!(w(&amd(0x1A, 0x70)), None);
        assert_eq!(w(&CpuInfo::default()), None);
    }

    #[test]
    fn flops_per_cycle_are_pipes_times_lanes_times_two() {
        let p = VectorPath::avx512(&cpu("GenuineIntel", 6, 0xCF, "Xeon"));
        assert_eq!((p.flops_per_cycle, p.assumed), (64.0, false));
        assert!(p.description.contains("full width: 2 FMA units"));
        let p = VectorPath::avx512(&cpu("AuthenticAMD", 0x19, 0x11, "EPYC"));
        assert_eq!(p.flops_per_cycle, 32.0);
        assert!(p.description.contains("double-pumped"));
        assert_eq!(
            VectorPath::avx512(&cpu("GenuineIntel", 6, 0x7E, "i7")).flops_per_cycle,
            32.0
        );
        // Unknown: assumed full, and said so.
        let p = VectorPath::avx512(&cpu("GenuineIntel", 6, 0x01, "?"));
        assert_eq!((p.flops_per_cycle, p.assumed), (64.0, true));
        assert!(p.description.contains("unknown width, assumed full"));
        assert_eq!(
            VectorPath::avx2(&cpu("GenuineIntel", 6, 0xCF, "Xeon")).flops_per_cycle,
            32.0
        );
        assert_eq!(
            VectorPath::avx2(&cpu("AuthenticAMD", 0x17, 0x01, "EPYC 7601")).flops_per_cycle,
            16.0
        );
        assert!(VectorPath::avx2(&CpuInfo::default()).assumed);
        assert_eq!(VectorPath::scalar().flops_per_cycle, 0.0);
    }

    #[test]
    fn the_products_path_is_the_run_time_choice_and_a_cap_is_named() {
        let c = cpu("GenuineIntel", 6, 0xCF, "Xeon");
        let all = SimdFeatures {
            avx512f: true,
            avx2: true,
            fma: true,
        };
        use Isa as G;
        assert_eq!(gemm_path(&c, all, G::Avx512).isa, Isa::Avx512);
        let capped = gemm_path(&c, all, G::Avx2);
        assert_eq!((capped.isa, capped.flops_per_cycle), (Isa::Avx2, 32.0));
        assert!(capped.description.contains("capped"));
        let avx2 = SimdFeatures {
            avx512f: false,
            ..all
        };
        let plain = gemm_path(&c, avx2, G::Avx2);
        assert_eq!(plain.isa, Isa::Avx2);
        assert!(!plain.description.contains("capped"));
        assert_eq!(
            gemm_path(&c, SimdFeatures::default(), G::Portable).isa,
            Isa::Portable
        );
    }

    #[test]
    fn the_peak_is_cores_times_flops_per_cycle_times_clock() {
        let c = cpu("GenuineIntel", 6, 0xCF, "Xeon");
        let m = Machine {
            features: SimdFeatures::default(),
            threads: 4,
            cores_for_peak: 2,
            candle_path: VectorPath::avx512(&c),
            best_path: VectorPath::avx512(&c),
            avx2_path: Some(VectorPath::avx2(&c)),
            own_kernels: String::new(),
            clock: Clock {
                all_core_ghz: 2.5,
                one_core_ghz: 3.0,
                cpuinfo_mhz: None,
                method: String::new(),
                measured: true,
            },
            fma: vec![FmaThroughput {
                isa: Isa::Avx512,
                one_thread_gflops: 150.0,
                all_threads_gflops: 240.0,
                threads: 4,
                method: "m".into(),
            }],
            cpu: c,
        };
        assert_eq!(m.peak_flops(&m.candle_path), 2.0 * 64.0 * 2.5e9);
        assert_eq!(m.peak_flops(m.avx2_path.as_ref().unwrap()), 2.0 * 32.0 * 2.5e9);
        let lines = m.lines();
        assert!(lines.iter().any(|l| l.contains("320.0 GFLOP/s")), "{lines:?}");
        // The measured throughput beside the computed peak: 240 of 320, 150 GFLOP/s at 3 GHz.
        assert!(
            lines.iter().any(
                |l| l.contains("AVX-512: 150.0 GFLOP/s on 1 thread (50.0 FLOP/cycle")
                    && l.contains("240.0 GFLOP/s on 4 threads at once = 75% of the computed peak 320.0")
            ),
            "{lines:?}"
        );
        assert_eq!(m.measured_flops(Isa::Avx512), Some(240e9));
        assert_eq!(m.measured_flops(Isa::Avx2), None);
    }

    #[test]
    fn the_fma_throughput_is_measured_only_where_it_means_something() {
        // Debug builds run the loop unoptimised: no figure. Release builds measure the paths the
        // CPU has, and never the scalar one.
        assert_eq!(measure_fma(Isa::Portable, 1), None);
        let avx2 = measure_fma(Isa::Avx2, 2);
        if cfg!(debug_assertions) {
            assert_eq!(avx2, None);
        } else if Isa::detected() >= Isa::Avx2 {
            let f = avx2.expect("an AVX2 CPU measures its AVX2 throughput");
            assert!(f.one_thread_gflops > 0.0 && f.all_threads_gflops > 0.0, "{f:?}");
        }
    }

    #[test]
    fn a_threads_stat_line_gives_its_name_and_cpu_ticks() {
        let line = "4242 (rayon (1) x) S 1 4242 4242 0 -1 4194368 100 0 0 0 731 42 0 0 20 0 3 0 5 0 0";
        assert_eq!(parse_task_stat(line), Some(("rayon (1) x".to_owned(), 773)));
        assert_eq!(parse_task_stat("4242 (x) S 1"), None);
        let me = thread_times().expect("/proc/self/task");
        assert!(me.iter().any(|t| t.tid == std::process::id()), "{me:?}");
        let mut u = ThreadUse {
            threads: 2,
            ..ThreadUse::default()
        };
        let t = |tid, ticks| ThreadTime {
            tid,
            name: String::new(),
            ticks,
        };
        let main = std::process::id();
        u.add(&[t(main, 10), t(7, 0)], &[t(main, 60), t(7, 250), t(8, 100)], 2.0);
        assert_eq!((u.calling_s, u.others_s, u.other_threads), (0.5, 3.5, 2));
        assert!((u.idle_share() - 0.0).abs() < 1e-12);
    }

    #[test]
    fn proc_stat_gives_steal_and_idle_shares() {
        let before =
            parse_proc_stat("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 50 0 25 400 5 0 2 18 0 0\nintr 1\n")
                .unwrap();
        assert_eq!(
            before,
            CpuTimes {
                total: 1000,
                idle: 810,
                steal: 35
            }
        );
        let after = parse_proc_stat("cpu  250 0 60 830 10 0 5 135 0 0\n").unwrap();
        // 290 ticks passed: 100 stolen, 30 idle.
        let (steal, idle) = before.shares_until(&after).unwrap();
        assert!((steal - 100.0 / 290.0).abs() < 1e-12 && (idle - 30.0 / 290.0).abs() < 1e-12);
        assert_eq!(before.shares_until(&before), None);
        assert_eq!(parse_proc_stat("cpu0 1 2 3 4\n"), None);
        assert_eq!(parse_proc_stat("cpu 1 x 3 4\n"), None);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
