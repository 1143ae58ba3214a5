//! The qrels reader (`Qrels::read`) on arbitrary file contents.
//!
//! Asserts, for qrels read successfully: at least one judgment, and `Qrels::write` then
//! `Qrels::read` gives the same judgments.
#![no_main]

use lexbench_core::trec::{Qrels, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = lexbench_core_fuzz::write("qrels.txt", data);
    if let Ok(q) = Qrels::read(&path, &ReadOptions::default()) {
        assert!(!q.is_empty(), "accepted qrels have judgments");
        let out = lexbench_core_fuzz::scratch("written.qrels");
        q.write(&out).expect("accepted qrels can be written");
        let back = Qrels::read(&out, &ReadOptions::default()).expect("written qrels read back");
        assert_eq!(back, q, "write → read round trip");
    }
});
