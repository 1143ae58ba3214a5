//! HUDOC judgments (DOCX, HTML) into numbered paragraphs. Not built yet.
