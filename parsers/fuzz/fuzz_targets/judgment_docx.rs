//! The DOCX entry point on arbitrary bytes: a zip holding `word/document.xml` = the input (so the
//! fuzzer explores the XML reader and the segmenter, not the zip format), and the raw input itself.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored);
    if w.start_file("word/document.xml", opts).is_ok() && w.write_all(data).is_ok() {
        if let Ok(c) = w.finish() {
            let _ = lexbench_parsers::judgment::parse_docx(&c.into_inner(), "fuzz.docx", None);
        }
    }
    let _ = lexbench_parsers::judgment::parse_docx(data, "fuzz.docx", None);
});
