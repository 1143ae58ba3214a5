//! Where encoders run: `--device cpu|cuda|cuda:N`, or by default the first CUDA GPU when this
//! build has the `cuda` feature and one is present, else the CPU.
//!
//! Asking for CUDA from a CPU-only build is refused when the argument is parsed
//! ([`DeviceChoice::from_str`]), never silently run on the CPU.

use std::str::FromStr;

use anyhow::{Context, Result};
use lexbench_baselines::Device;

/// Whether this build can run encoders on CUDA (the `cuda` feature).
pub const CUDA_BUILD: bool = cfg!(feature = "cuda");

/// A device asked for on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The CPU.
    Cpu,
    /// The CUDA GPU with this ordinal (`cuda` is `cuda:0`).
    Cuda(usize),
}

impl FromStr for DeviceChoice {
    type Err = String;

    /// `cpu`, `cuda` or `cuda:N`; CUDA only in a build with the `cuda` feature.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let choice = match s {
            "cpu" => DeviceChoice::Cpu,
            "cuda" => DeviceChoice::Cuda(0),
            _ => match s.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(n)) => DeviceChoice::Cuda(n),
                _ => return Err(format!("`{s}` is not a device: use cpu, cuda or cuda:N")),
            },
        };
        if matches!(choice, DeviceChoice::Cuda(_)) && !CUDA_BUILD {
            return Err(format!(
                "`{s}`: this lexbench was built without CUDA support; rebuild it with \
                 `--features cuda`, or use --device cpu"
            ));
        }
        Ok(choice)
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Cpu => f.write_str("cpu"),
            DeviceChoice::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// The device for `choice`; `None`: the default ([`lexbench_baselines::default_device`]: CUDA when
/// built with it and present, else the CPU). A CUDA device that cannot be opened is an error naming
/// it.
pub fn resolve(choice: Option<DeviceChoice>) -> Result<Device> {
    match choice {
        None => Ok(lexbench_baselines::default_device()?),
        Some(DeviceChoice::Cpu) => Ok(Device::Cpu),
        Some(DeviceChoice::Cuda(n)) => {
            Device::new_cuda(n).with_context(|| format!("--device cuda:{n}: cannot open CUDA device {n}"))
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties: every spelling parses to its device; CUDA is refused by a CPU-only build.
    use super::*;

    #[test]
    fn parses() {
        assert_eq!("cpu".parse(), Ok(DeviceChoice::Cpu));
        assert!(
            "gpu"
                .parse::<DeviceChoice>()
                .unwrap_err()
                .contains("not a device")
        );
        assert!("cuda:x".parse::<DeviceChoice>().is_err());
        if CUDA_BUILD {
            assert_eq!("cuda".parse(), Ok(DeviceChoice::Cuda(0)));
            assert_eq!("cuda:1".parse(), Ok(DeviceChoice::Cuda(1)));
        } else {
            let e = "cuda:1".parse::<DeviceChoice>().unwrap_err();
            assert!(e.contains("built without CUDA"), "{e}");
        }
        assert!(matches!(resolve(Some(DeviceChoice::Cpu)), Ok(Device::Cpu)));
    }
}
