//! Case-law guides (PDF, text) into headings, queries and pinpoint citations. Not built yet.
