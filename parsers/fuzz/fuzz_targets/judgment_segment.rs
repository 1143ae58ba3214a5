//! The segmenter on structured input: each line is a block; its first byte picks a style (paragraph,
//! quotation, heading, table of contents, list, none) and whether it holds a SEQ field, the rest is
//! its text. Reaches the numbering chain, regions, opinions and warnings far faster than raw XML.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lexbench_parsers::judgment::{Block, Meta, segment};

const STYLES: [Option<&str>; 6] = [
    Some("ECHRPara"),
    Some("ECHRParaQuote"),
    Some("ECHRHeading2"),
    Some("TOC3"),
    Some("JuList"),
    None,
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let blocks: Vec<Block> = text
        .split('\n')
        .map(|line| {
            let b = line.bytes().next().unwrap_or(0);
            Block {
                text: line.chars().skip(1).collect(),
                style: STYLES[usize::from(b) % STYLES.len()].map(str::to_string),
                class: Some(format!("c{}", b % 3)),
                seq: b & 0x40 != 0,
                in_table: b & 0x80 != 0,
            }
        })
        .collect();
    let meta = Meta { source: "fuzz", item: None, format: "DOCX" };
    if let Ok(j) = segment::segment(&blocks, meta, Vec::new()) {
        // Invariants: main numbers strictly increase; opinions number from 1.
        assert!(j.paragraphs.windows(2).all(|w| w[0].num < w[1].num));
        for o in &j.opinions {
            assert!(o.paragraphs.first().is_none_or(|p| p.num == 1));
        }
    }
});
