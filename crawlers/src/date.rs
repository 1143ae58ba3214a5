//! Dates and timestamps: the shared implementation in `lexbench_core::time` (HUDOC's two date forms,
//! day numbers for date-window bisection, RFC 3339 timestamps for the manifest).

pub use lexbench_core::time::{Date, now_rfc3339};
