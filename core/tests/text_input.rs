//! Hostile text input to the readers of user files (TREC runs and qrels, JSON Lines, pools, whole
//! text files).
//!
//! Properties checked:
//! - a leading UTF-8 byte-order mark is not part of the first record: the first topic of a run or
//!   qrels file is `t1`, not `\u{feff}t1`, so it is scored; JSON Lines and pools parse;
//! - bytes that are not UTF-8 are an error naming the file and the line (`FILE:LINE: not valid
//!   UTF-8 …`), in every reader;
//! - a TREC line longer than [`MAX_LINE_BYTES`] and a run tag longer than [`MAX_TAG_BYTES`] are
//!   errors naming the file and line; the over-long line is not read whole first;
//! - the size limits: a file over a whole-file reader's maximum ([`MAX_TEXT_BYTES`] for JSON and
//!   text, [`MAX_FILE_BYTES`] for runs and qrels, any cap given to [`read_bytes_at_most`]) is
//!   [`Error::TooLarge`] naming the file and the limit, found from its size (a hole of 1 GiB is not
//!   read) or, where no size is known, after reading one byte past the cap; a JSON Lines line over
//!   [`MAX_JSONL_LINE_BYTES`] is an error at its line, not held in memory.

#[path = "../src/testing/scratch.rs"]
mod scratch;

use std::path::PathBuf;

use lexbench_core::io::{MAX_JSONL_LINE_BYTES, read_json, read_jsonl};
use lexbench_core::text::{MAX_TEXT_BYTES, human_bytes, read_bytes_at_most, read_text};
use lexbench_core::trec::{MAX_FILE_BYTES, MAX_LINE_BYTES, MAX_TAG_BYTES};
use lexbench_core::{Error, LineError, Measure, PoolSizes, Qrels, ReadOptions, Run, TopicId, evaluate};

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = scratch::scratch_root().join(format!("lexbench-text-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

const BOM: &str = "\u{feff}";

#[test]
fn a_bom_is_not_part_of_the_first_topic() {
    let q = write("bom.qrels", format!("{BOM}t1 0 d1 1\nt2 0 d2 1\n").as_bytes());
    let r = write(
        "bom.run",
        format!("{BOM}t1 Q0 d1 1 2 t\nt1 Q0 d9 2 1 t\nt2 Q0 d2 1 2 t\n").as_bytes(),
    );
    let qrels = Qrels::read(&q, &ReadOptions::default()).unwrap();
    let run = Run::read(&r, &ReadOptions::default()).unwrap();
    let t1 = TopicId::new("t1").unwrap();
    assert!(qrels.topics.contains_key(&t1), "{:?}", qrels.topics.keys());
    assert!(run.topics.contains_key(&t1), "{:?}", run.topics.keys());
    // Both topics are found in the run, each with its relevant document first: AP = 1 on each, and
    // exactly two topics are counted (a BOM-prefixed `\u{feff}t1` would make a third, or score 0).
    let ev = evaluate(&run, &qrels, &[Measure::AP], None).unwrap();
    assert_eq!(ev.per_topic.len(), 2);
    assert_eq!(ev.mean, vec![1.0]);
    assert!(ev.missing_topics.is_empty() && ev.ignored_topics.is_empty());
    // A BOM with known topics declared: still the known topic.
    let opts = ReadOptions {
        known_topics: Some([t1, TopicId::new("t2").unwrap()].into()),
        ..ReadOptions::default()
    };
    Run::read(&r, &opts).unwrap();
}

#[test]
fn a_bom_is_stripped_from_json_lines_pools_and_text() {
    let p = write(
        "bom.jsonl",
        format!("{BOM}{{\"a\": 1}}\n{{\"a\": 2}}\n").as_bytes(),
    );
    let v: Vec<serde_json::Value> = lexbench_core::io::read_jsonl(&p).unwrap();
    assert_eq!(v.len(), 2);
    let p = write(
        "bom.pools.jsonl",
        format!("{BOM}{{\"topic\": \"t1\", \"docs\": [\"a\", \"b\"]}}\n").as_bytes(),
    );
    let pools = PoolSizes::read(&p).unwrap();
    assert_eq!(pools.0[&TopicId::new("t1").unwrap()], 2);
    let p = write("bom.txt", format!("{BOM}line one\nline two\n").as_bytes());
    assert_eq!(read_text(&p).unwrap(), "line one\nline two\n");
    // Only a leading BOM is a BOM: U+FEFF elsewhere is text.
    let p = write("inner.txt", format!("a{BOM}b").as_bytes());
    assert_eq!(read_text(&p).unwrap(), format!("a{BOM}b"));
}

#[test]
fn bytes_that_are_not_utf8_name_file_and_line() {
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        (
            "latin1.run",
            b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xe92 2 0.5 t\n".to_vec(),
            2,
        ),
        ("latin1.qrels", b"q1 0 d1 1\n\nq1 0 d\xe92 1\n".to_vec(), 3),
    ];
    for (name, bytes, line) in cases {
        let p = write(name, &bytes);
        let err = if name.ends_with(".run") {
            Run::read(&p, &ReadOptions::default()).unwrap_err()
        } else {
            Qrels::read(&p, &ReadOptions::default()).unwrap_err()
        };
        assert!(
            matches!(err.line_error(), Some((l, LineError::NotUtf8 { .. })) if l == line),
            "{name}: {err}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("{}:{line}: not valid UTF-8", p.display())),
            "{err}"
        );
    }
    let p = write("latin1.jsonl", b"{\"a\": 1}\n{\"a\": \"\xe9\"}\n");
    let err = lexbench_core::io::read_jsonl::<serde_json::Value>(&p).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:2: not valid UTF-8", p.display())),
        "{err}"
    );
    let p = write("latin1.txt", b"one\ntwo\nthr\xe9e\n");
    let err = read_text(&p).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:3: not valid UTF-8", p.display())),
        "{err}"
    );
}

#[test]
fn over_long_lines_and_tags_name_file_and_line() {
    // A line far over the cap (here 16 MiB, in the issue 200 MB) is refused at its line.
    let mut text = b"q1 Q0 d1 1 1.0 t\n".to_vec();
    text.extend(b"q1 Q0 d2 2 0.5 ");
    text.extend(std::iter::repeat_n(b'x', 16 << 20));
    text.push(b'\n');
    let p = write("long.run", &text);
    let err = Run::read(&p, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(err.line_error(), Some((2, LineError::LineTooLong { max })) if *max == MAX_LINE_BYTES),
        "{}",
        &err.to_string()[..200.min(err.to_string().len())]
    );
    assert!(err.to_string().len() < 300, "the message does not quote the line");

    // The tag: at most MAX_TAG_BYTES, on every line, not only the first.
    let ok_tag = "t".repeat(MAX_TAG_BYTES);
    let long_tag = "t".repeat(MAX_TAG_BYTES + 1);
    let p = write(
        "tag.run",
        format!("q1 Q0 d1 1 1.0 {ok_tag}\nq1 Q0 d2 2 0.5 {long_tag}\n").as_bytes(),
    );
    let err = Run::read(&p, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(
            err.line_error(),
            Some((2, LineError::TooLong { column: "tag", .. }))
        ),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "{}:2: tag is {} bytes long",
            p.display(),
            MAX_TAG_BYTES + 1
        )),
        "{err}"
    );
    let p = write("tag-ok.run", format!("q1 Q0 d1 1 1.0 {ok_tag}\n").as_bytes());
    assert_eq!(Run::read(&p, &ReadOptions::default()).unwrap().tag, ok_tag);
}

/// A file of `len` bytes that is a hole (no disk space, nothing to read but zeros).
fn hole(name: &str, len: u64) -> PathBuf {
    let p = write(name, b"");
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len)
        .unwrap();
    p
}

fn too_large(err: Error, path: &std::path::Path, max: usize) {
    let msg = err.to_string();
    assert!(
        matches!(&err, Error::TooLarge { path: p, max_bytes } if p == path && *max_bytes == max),
        "{err:?}"
    );
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains(&human_bytes(max)),
        "{msg}"
    );
}

#[test]
fn files_over_a_readers_maximum_are_refused_by_size() {
    assert_eq!(human_bytes(64 << 20), "64 MiB");
    assert_eq!(human_bytes(1 << 30), "1 GiB");
    assert_eq!(human_bytes(16 * 1024), "16 KiB");
    assert_eq!(human_bytes(1000), "1000 bytes");
    assert_eq!(human_bytes((1 << 20) + 1), "1048577 bytes");

    // At the cap it is read; one byte over, refused; with no size known (a pipe), refused too.
    let p = write("cap.bin", &[7u8; 100]);
    assert_eq!(read_bytes_at_most(&p, 100).unwrap(), vec![7u8; 100]);
    too_large(read_bytes_at_most(&p, 99).unwrap_err(), &p, 99);
    #[cfg(unix)]
    {
        let fifo = scratch::scratch_root().join(format!("lexbench-text-input-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::File::options().write(true).open(&fifo).unwrap();
                // The reader stops after 51 bytes: a broken pipe later is expected.
                let _ = f.write_all(&[1u8; 4096]);
            })
        };
        too_large(read_bytes_at_most(&fifo, 50).unwrap_err(), &fifo, 50);
        writer.join().unwrap();
        let _ = std::fs::remove_file(&fifo);
    }

    // Runs and qrels: 1 GiB and one byte, refused without reading it (it is all zeros: read, it
    // would be a NUL-filled line error instead).
    let big = hole("huge.trec", MAX_FILE_BYTES as u64 + 1);
    too_large(
        Run::read(&big, &ReadOptions::default()).unwrap_err(),
        &big,
        MAX_FILE_BYTES,
    );
    too_large(
        Qrels::read(&big, &ReadOptions::default()).unwrap_err(),
        &big,
        MAX_FILE_BYTES,
    );
    // JSON and whole text files.
    let big = hole("huge.json", MAX_TEXT_BYTES as u64 + 1);
    too_large(read_text(&big).unwrap_err(), &big, MAX_TEXT_BYTES);
    too_large(
        read_json::<serde_json::Value>(&big).unwrap_err(),
        &big,
        MAX_TEXT_BYTES,
    );
    let _ = std::fs::remove_file(&big);
}

#[test]
fn a_json_lines_line_over_the_maximum_is_an_error_at_its_line() {
    let mut bytes = b"{\"a\": 1}\n\"".to_vec();
    bytes.resize(bytes.len() + MAX_JSONL_LINE_BYTES, b'x');
    bytes.extend_from_slice(b"\"\n{\"a\": 3}\n");
    let p = write("long-line.jsonl", &bytes);
    drop(bytes);
    let err = read_jsonl::<serde_json::Value>(&p).unwrap_err();
    assert!(
        matches!(err.line_error(), Some((2, LineError::LineTooLong { max })) if *max == MAX_JSONL_LINE_BYTES),
        "{err:?}"
    );
    let _ = std::fs::remove_file(&p);
}
