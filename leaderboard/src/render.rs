//! Markdown and static HTML renderings of the boards, and [`render_site`], which writes them (with
//! the SVG plots) under `DATA/leaderboard/`.
//!
//! A verified row (the harness ran the model itself, `lexbench submit --model`) carries ✓ after its
//! name; other rows are self-reported run files. [`RenderOptions::verified_only`] renders verified
//! rows only (and the baseline, for comparison); the HTML page can also hide self-reported rows
//! with a checkbox.
//!
//! Names (systems, datasets, splits, measures) are text, never markup: the Markdown escapes them
//! ([`md`]: Markdown passes raw HTML through, so `<script>` in a system name would reach the page),
//! the HTML escapes them ([`esc`]) and isolates system names' direction (`<bdi>`), and the SVG
//! backend escapes its text.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::board::is_baseline;
use crate::board::{ALPHA, BASELINE, DatasetBoard, Sig, build};
use crate::dataset::current_hash;
use crate::entry::{entries_dir, leaderboard_dir, read_entries};
use crate::error::Result;
use crate::plot::plot_split;
use crate::reference::{Line, Reference, beside, references};

/// Scores are shown as percentages with two decimals.
fn pct(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), |v| format!("{:.2}", 100.0 * v))
}

fn mark(sig: Sig) -> &'static str {
    match sig {
        Sig::Better => " ▲",
        Sig::Worse => " ▼",
        _ => "",
    }
}

/// The verified mark after a system's name.
pub const VERIFIED_MARK: &str = "✓";

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// `s` as literal text inside a Markdown line (a table cell, a heading, a link's text). `<`, `>` and
/// `&` become HTML entities, so no tag or entity of the name reaches the page whatever the renderer;
/// the characters that open inline syntax (code spans, emphasis, links and images, strikethrough, math,
/// footnotes) and `|` are backslash-escaped, which CommonMark allows for any ASCII punctuation.
pub fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '|' | '~' | '$' | '^' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as one segment of a relative URL: bytes other than ASCII letters, digits, `-`, `_` and `.`
/// percent-encoded.
fn url_part(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What an open-corpus board is, said above its table.
const OPEN_CORPUS_NOTE: &str = "Each topic is a case-law guide heading; systems rank every paragraph of every \
     judgment in the corpus, and the relevant ones are all those the guides cite under the heading. The \
     seen setting's headings form the training split, not shown: a model trained on the per-judgment \
     setting is read here on unseen queries and unseen guides.";

/// The Markdown page (`index.md`).
pub fn markdown(boards: &[DatasetBoard], options: &RenderOptions) -> String {
    let mut s = String::from("# lexbench leaderboard\n\n");
    let _ = writeln!(
        s,
        "Scores in %. ▲/▼: significantly better/worse than `{BASELINE}` on the same split and dataset \
         version (paired randomization test, 10,000 samples, Holm-corrected over each split's tests, α = {ALPHA}). \
         †: evaluated on a dataset version other than the one built now. \
         {VERIFIED_MARK}: verified, the harness ran the model itself (`lexbench submit --model`; \
         `lexbench leaderboard --recheck ENTRY` runs it again); rows without it are self-reported run files.\n"
    );
    if options.verified_only {
        let _ = writeln!(
            s,
            "Verified entries only, beside the `{BASELINE}` baseline (`lexbench leaderboard` shows every entry).\n"
        );
    }
    if boards.is_empty() {
        s.push_str("No entries yet: `lexbench submit RUN --dataset D --split S --name NAME`.\n");
    }
    let xl = crate::crosslingual::section(boards);
    for b in boards {
        if let Some(x) = &xl
            && x.rows.first().is_some_and(|r| r.dataset == b.name)
        {
            crosslingual_markdown(&mut s, x);
        }
        if b.task == lexbench_core::Task::OpenCorpus {
            let _ = writeln!(s, "## Open corpus: {}\n", md(&b.name));
            s.push_str(OPEN_CORPUS_NOTE);
            s.push_str("\n\n");
        } else {
            let _ = writeln!(s, "## {}\n", md(&b.name));
        }
        if let Some(h) = &b.current_hash {
            let _ = writeln!(s, "Dataset version `{}`.\n", short(h));
        }
        let mut header = String::from("| system |");
        let mut rule = String::from("|---|");
        for split in &b.splits {
            for m in &b.measures {
                let _ = write!(header, " {} {} |", md(split), md(m));
                rule.push_str("---:|");
            }
        }
        let _ = writeln!(s, "{header}\n{rule}");
        for r in &b.rows {
            let verified = if r.verified {
                format!(" {VERIFIED_MARK}")
            } else {
                String::new()
            };
            let model = r
                .model
                .as_deref()
                .map(|m| format!(" · {}", md(m)))
                .unwrap_or_default();
            let _ = write!(s, "| {}{verified}{model} |", md(&r.shown_name()));
            for split in &b.splits {
                match r.cells.get(split) {
                    Some(c) => {
                        for (i, v) in c.scores.iter().enumerate() {
                            let dagger = if c.stale { " †" } else { "" };
                            let _ = write!(s, " {}{}{dagger} |", pct(*v), mark(c.sig[i]));
                        }
                    }
                    None => s.push_str(&" |".repeat(b.measures.len())),
                }
            }
            s.push('\n');
        }
        let plots: Vec<String> = b
            .splits
            .iter()
            .map(|sp| {
                format!(
                    "[{}](site/plots/{}.svg)",
                    md(sp),
                    url_part(&format!("{}-{sp}", b.name))
                )
            })
            .collect();
        let _ = writeln!(s, "\nPlots: {}\n", plots.join(" · "));
        for r in references().iter().filter(|r| r.applies_to(b)) {
            beside_markdown(&mut s, r, b);
        }
    }
    s
}

/// The cross-lingual section ([`crate::crosslingual`]) as Markdown: a row per query language, a
/// column group per system.
fn crosslingual_markdown(s: &mut String, x: &crate::crosslingual::XlSection) {
    let _ = writeln!(
        s,
        "## {}\n\n{}\n",
        crate::crosslingual::TITLE,
        md(crate::crosslingual::NOTE)
    );
    let mut header = String::from("| queries | language | test topics |");
    let mut rule = String::from("|---|---|---:|");
    for sys in &x.systems {
        for m in &x.measures {
            let _ = write!(header, " {} {} |", md(sys), md(m));
            rule.push_str("---:|");
        }
    }
    let _ = writeln!(s, "{header}\n{rule}");
    for r in &x.rows {
        let _ = write!(s, "| {} | {} | {} |", md(&r.code), r.name.unwrap_or(""), r.topics);
        for c in &r.cells {
            match c {
                Some(c) => {
                    for (v, sig) in c.scores.iter().zip(&c.sig) {
                        let dagger = if c.stale { " †" } else { "" };
                        let _ = write!(s, " {}{}{dagger} |", pct(*v), mark(*sig));
                    }
                }
                None => s.push_str(&" — |".repeat(x.measures.len())),
            }
        }
        s.push('\n');
    }
    s.push('\n');
}

/// The cross-lingual section as HTML, marks and p-values as on the boards.
fn crosslingual_html(s: &mut String, x: &crate::crosslingual::XlSection) {
    let _ = write!(
        s,
        "<h2 id=\"cross-lingual\">{}</h2>\n<p class=\"note\">{}</p>\n<table class=\"board xl\"><thead><tr>\
         <th rowspan=\"2\">Queries</th><th rowspan=\"2\">Language</th><th rowspan=\"2\">Test topics</th>",
        esc(crate::crosslingual::TITLE),
        esc(crate::crosslingual::NOTE)
    );
    for (sys, baseline) in x.systems.iter().zip(&x.baseline) {
        let class = if *baseline { " class=\"baseline\"" } else { "" };
        let _ = write!(
            s,
            "<th colspan=\"{}\"{class}><bdi>{}</bdi></th>",
            x.measures.len(),
            esc(sys)
        );
    }
    s.push_str("</tr><tr>");
    for _ in &x.systems {
        for m in &x.measures {
            let _ = write!(s, "<th>{}</th>", esc(m));
        }
    }
    s.push_str("</tr></thead><tbody>\n");
    for r in &x.rows {
        let _ = write!(
            s,
            "<tr><td class=\"sys\">{}</td><td>{}</td><td class=\"num\">{}</td>",
            esc(&r.code),
            r.name.unwrap_or(""),
            r.topics
        );
        for c in &r.cells {
            match c {
                Some(c) => {
                    for ((v, sig), p) in c.scores.iter().zip(&c.sig).zip(&c.p_holm) {
                        let (cls, sym) = match sig {
                            Sig::Better => ("better", "▲"),
                            Sig::Worse => ("worse", "▼"),
                            _ => ("", ""),
                        };
                        let mut title = format!("entry {}", c.entry);
                        if let Some(p) = p {
                            let _ = write!(title, " · p (Holm) = {p:.4}");
                        }
                        let stale = if c.stale {
                            "<span class=\"stale\" title=\"other dataset version\">†</span>"
                        } else {
                            ""
                        };
                        let _ = write!(
                            s,
                            "<td class=\"num\" title=\"{}\">{}<span class=\"{cls}\">{sym}</span>{stale}</td>",
                            esc(&title),
                            pct(*v)
                        );
                    }
                }
                None => {
                    for _ in &x.measures {
                        s.push_str("<td class=\"num\">—</td>");
                    }
                }
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
}

/// One of our cells beside the paper: the shown measures in %, their marks, then the hidden ones
/// (`R@k%nearest`) and the topics.
struct BesideCell {
    main: String,
    marks: Vec<Sig>,
    /// `R@k%nearest` of a pooled task (none for a corpus task).
    nearest: Option<String>,
    topics: usize,
    stale: bool,
}

fn beside_cell(r: &Reference, b: &DatasetBoard, row: &crate::board::Row, split: &str) -> Option<BesideCell> {
    let c = row.cells.get(split)?;
    let idx: Vec<Option<usize>> = r
        .measures
        .iter()
        .map(|m| b.measures.iter().position(|x| x == m))
        .collect();
    let main = idx
        .iter()
        .map(|i| pct1(i.and_then(|i| c.scores[i])))
        .collect::<Vec<_>>()
        .join(" / ");
    let marks = idx
        .iter()
        .map(|i| i.map_or(Sig::Untested, |i| c.sig[i]))
        .collect();
    let nearest = (r.task == "pooled").then(|| {
        r.measures
            .iter()
            .map(|m| pct1(c.hidden.get(&format!("{m}nearest")).copied()))
            .collect::<Vec<_>>()
            .join(" / ")
    });
    Some(BesideCell {
        main,
        marks,
        nearest,
        topics: c.topics,
        stale: c.stale,
    })
}

/// A fraction as a percentage with one decimal (the paper prints two-decimal fractions).
fn pct1(v: Option<f64>) -> String {
    v.map_or("—".to_owned(), |v| format!("{:.1}", 100.0 * v))
}

fn paper_values(values: &[f64], decimals: usize) -> String {
    values
        .iter()
        .map(|v| format!("{:.*}", decimals, 100.0 * v))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn marks_text(marks: &[Sig]) -> String {
    if marks
        .iter()
        .all(|m| matches!(m, Sig::Untested | Sig::Baseline | Sig::Same))
    {
        return String::new();
    }
    let m: String = marks
        .iter()
        .map(|m| match m {
            Sig::Better => '▲',
            Sig::Worse => '▼',
            _ => '·',
        })
        .collect();
    format!(" {m}")
}

const BESIDE_NOTE: &str = "The paper's figures (R@2% / R@5% / R@10%, in %, as printed to two decimals) \
     and, under each published row, our entries whose model card names it (`paper_row`; the BM25 baseline \
     stands beside BM25). Ours: R@k% with the cut-off ⌈k·n/100⌉ of a judgment's n paragraphs, then \
     R@k%nearest (cut-off rounded to the nearest; the paper does not say how it rounds) and the topics \
     evaluated. ▲/▼ per measure: significantly better/worse than BM25 on the same split. Our systems are \
     stand-ins where the paper's checkpoints are not used: their names and descriptions say which. A \
     published row with nothing under it was not run here.";

fn beside_markdown(s: &mut String, r: &Reference, b: &DatasetBoard) {
    let _ = writeln!(s, "### Beside the paper: {}\n", md(&r.paper));
    let _ = writeln!(s, "{}\n", r.note.as_deref().unwrap_or(BESIDE_NOTE));
    let mut header = String::from("| table | system | init / description |");
    let mut rule = String::from("|---|---|---|");
    for st in &r.settings {
        let _ = write!(header, " {} ({}) |", md(&st.paper), md(&st.split));
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
    for line in beside(r, b) {
        match line {
            Line::Paper(p) => {
                let _ = write!(s, "| {} | {} | {} |", md(&p.table), md(&p.system), md(&p.init));
                for v in &p.values {
                    let _ = write!(s, " {} |", paper_values(v, r.decimals));
                }
            }
            Line::Ours(i) => {
                let row = &b.rows[i];
                let verified = if row.verified {
                    format!(" {VERIFIED_MARK}")
                } else {
                    String::new()
                };
                let desc = beside_desc(row, md);
                let _ = write!(s, "| | ↳ ours: {}{verified} | {desc} |", md(&row.shown_name()));
                for st in &r.settings {
                    match beside_cell(r, b, row, &st.split) {
                        Some(c) => {
                            let dagger = if c.stale { " †" } else { "" };
                            let nearest = c
                                .nearest
                                .as_ref()
                                .map_or(String::new(), |n| format!("nearest {n} · "));
                            let _ = write!(
                                s,
                                " **{}**{}{dagger}<br>{nearest}{} topics |",
                                c.main,
                                marks_text(&c.marks),
                                c.topics
                            );
                        }
                        None => s.push_str(" not run |"),
                    }
                }
            }
        }
        s.push('\n');
    }
    s.push('\n');
}

fn beside_html(s: &mut String, r: &Reference, b: &DatasetBoard) {
    let _ = writeln!(s, "<h3>Beside the paper: {}</h3>", esc(&r.paper));
    let _ = writeln!(
        s,
        "<p class=\"note\">{}</p>",
        esc(r.note.as_deref().unwrap_or(BESIDE_NOTE)).replace("`paper_row`", "<code>paper_row</code>")
    );
    s.push_str("<table class=\"beside\"><thead><tr><th>table</th><th>system</th><th>init / description</th>");
    for st in &r.settings {
        let _ = write!(
            s,
            "<th>{}<br><small>{}</small></th>",
            esc(&st.paper),
            esc(&st.split)
        );
    }
    s.push_str("</tr></thead><tbody>\n");
    for line in beside(r, b) {
        match line {
            Line::Paper(p) => {
                let _ = write!(
                    s,
                    "<tr class=\"paper\"><td>{}</td><td>{}</td><td>{}</td>",
                    esc(&p.table),
                    esc(&p.system),
                    esc(&p.init)
                );
                for v in &p.values {
                    let _ = write!(s, "<td class=\"num\">{}</td>", paper_values(v, r.decimals));
                }
            }
            Line::Ours(i) => {
                let row = &b.rows[i];
                let verified = if row.verified {
                    format!("<span class=\"verified\" title=\"verified\">{VERIFIED_MARK}</span>")
                } else {
                    String::new()
                };
                let desc = beside_desc(row, esc);
                let _ = write!(
                    s,
                    "<tr class=\"ours\"><td></td><td class=\"sys\">↳ <bdi>{}</bdi>{verified}</td><td><small>{desc}</small></td>",
                    esc(&row.shown_name())
                );
                for st in &r.settings {
                    match beside_cell(r, b, row, &st.split) {
                        Some(c) => {
                            let marks: String = c
                                .marks
                                .iter()
                                .map(|m| match m {
                                    Sig::Better => "<span class=\"better\">▲</span>",
                                    Sig::Worse => "<span class=\"worse\">▼</span>",
                                    _ => "",
                                })
                                .collect();
                            let stale = if c.stale {
                                "<span class=\"stale\" title=\"other dataset version\">†</span>"
                            } else {
                                ""
                            };
                            let nearest = c
                                .nearest
                                .as_ref()
                                .map_or(String::new(), |n| format!("nearest {n} · "));
                            let _ = write!(
                                s,
                                "<td class=\"num\"><b>{}</b>{marks}{stale}<br><small>{nearest}{} topics</small></td>",
                                c.main, c.topics
                            );
                        }
                        None => s.push_str("<td class=\"num\">not run</td>"),
                    }
                }
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
}

/// `s` as HTML text or a double-quoted attribute value.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}\
h1{font-size:1.6em}h2{margin-top:2em}table{border-collapse:collapse;font-size:.92em}\
th,td{border:1px solid #ccc;padding:.35em .6em}th{background:#f3f5f8}th.sortable{cursor:pointer;user-select:none}\
th.sortable:hover{background:#e3e8f0}th.sorted-desc::after{content:' ↓'}th.sorted-asc::after{content:' ↑'}\
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr.baseline td{background:#fafaf2}\
.better{color:#0a7a2f;font-weight:600}.worse{color:#b3261e;font-weight:600}.stale{color:#8a5a00}\
.note{color:#555;font-size:.9em}.verified{color:#0a7a2f;font-weight:700;margin-left:.3em}.sys small{color:#666;display:block;max-width:22em}figure{display:inline-block;margin:1em 1em 0 0}\
figure img{border:1px solid #ddd;max-width:100%;width:860px}\
table.beside{margin-top:.5em}table.beside td:first-child{white-space:nowrap}table.beside tr.paper td{background:#f3f5f8;color:#333}table.beside tr.ours td{background:#fff}\
table.beside td small{color:#666}";

const SCRIPT: &str = r#"document.querySelectorAll('table.board').forEach(function(t){
  t.querySelectorAll('th.sortable').forEach(function(th){
    th.addEventListener('click',function(){
      var col=+th.dataset.col, desc=!th.classList.contains('sorted-desc');
      t.querySelectorAll('th.sortable').forEach(function(h){h.classList.remove('sorted-desc','sorted-asc');});
      th.classList.add(desc?'sorted-desc':'sorted-asc');
      var body=t.tBodies[0], rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col].dataset.v, y=b.cells[col].dataset.v;
        if(col===0){return desc?y.localeCompare(x):x.localeCompare(y);}
        x=x===''?-Infinity:+x; y=y===''?-Infinity:+y;
        return desc?y-x:x-y;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
// "Verified entries only": hides the self-reported rows (the baseline stays, for comparison).
var only=document.getElementById('verified-only');
if(only){only.addEventListener('change',function(){
  document.querySelectorAll('table.board tr.self-reported').forEach(function(r){r.hidden=only.checked;});
});}
// index.html#sort=N sorts every table by its column N on load (bookmarkable; used by the screenshot script).
var m=location.hash.match(/^#sort=(\d+)$/);
if(m){document.querySelectorAll('table.board th.sortable[data-col="'+m[1]+'"]').forEach(function(th){th.click();});}"#;

/// The static HTML page (`site/index.html`): one sortable table per dataset (click a header), split
/// column groups, significance and dataset-version marks with p-values and hashes in tooltips, and
/// the plots.
pub fn html(boards: &[DatasetBoard], options: &RenderOptions) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lexbench leaderboard</title>\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><style>{STYLE}</style></head><body>\n\
         <h1>lexbench leaderboard</h1>\n<p class=\"note\">Scores in %. Click a column header to sort. \
         <span class=\"better\">▲</span>/<span class=\"worse\">▼</span>: significantly better/worse than \
         <code>{BASELINE}</code> on the same split and dataset version (paired randomization test, 10,000 samples, \
         Holm-corrected over each split's tests, α = {ALPHA}; hover a cell for p). \
         <span class=\"stale\">†</span>: evaluated on a dataset version other than the one built now. \
         <span class=\"verified\">{VERIFIED_MARK}</span>: verified, the harness ran the model itself \
         (<code>lexbench submit --model</code>; <code>lexbench leaderboard --recheck ENTRY</code> runs it again); \
         rows without it are self-reported run files.</p>\n"
    );
    if options.verified_only {
        let _ = writeln!(
            s,
            "<p class=\"note\">Verified entries only, beside the <code>{BASELINE}</code> baseline \
             (<code>lexbench leaderboard</code> shows every entry).</p>"
        );
    } else {
        s.push_str(
            "<p class=\"note\"><label><input type=\"checkbox\" id=\"verified-only\"> verified entries only</label></p>\n",
        );
    }
    if boards.is_empty() {
        s.push_str("<p>No entries yet.</p>\n");
    }
    let xl = crate::crosslingual::section(boards);
    for b in boards {
        if let Some(x) = &xl
            && x.rows.first().is_some_and(|r| r.dataset == b.name)
        {
            crosslingual_html(&mut s, x);
        }
        if b.task == lexbench_core::Task::OpenCorpus {
            let _ = writeln!(s, "<h2>Open corpus: {}</h2>", esc(&b.name));
            let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(OPEN_CORPUS_NOTE));
        } else {
            let _ = writeln!(s, "<h2>{}</h2>", esc(&b.name));
        }
        if let Some(h) = &b.current_hash {
            let how = match b.task {
                lexbench_core::Task::Pooled => "within each topic's pool",
                lexbench_core::Task::Corpus => "over the whole corpus",
                lexbench_core::Task::OpenCorpus => "over the whole corpus (the open-corpus setting)",
            };
            let _ = writeln!(
                s,
                "<p class=\"note\">Dataset version <code title=\"{h}\">{}</code> · topics ranked {how}.</p>",
                short(h)
            );
        }
        let _ = write!(
            s,
            "<table class=\"board\"><thead><tr><th rowspan=\"2\" class=\"sortable\" data-col=\"0\">System</th>"
        );
        for split in &b.splits {
            let _ = write!(s, "<th colspan=\"{}\">{}</th>", b.measures.len(), esc(split));
        }
        s.push_str("</tr><tr>");
        let mut col = 1;
        for _ in &b.splits {
            for m in &b.measures {
                let _ = write!(s, "<th class=\"sortable\" data-col=\"{col}\">{}</th>", esc(m));
                col += 1;
            }
        }
        s.push_str("</tr></thead><tbody>\n");
        for r in &b.rows {
            let class = match (r.baseline, r.verified) {
                (true, _) => " class=\"baseline\"",
                (false, true) => " class=\"verified-row\"",
                (false, false) => " class=\"self-reported\"",
            };
            let mark = if r.verified {
                format!(
                    "<span class=\"verified\" title=\"verified: the harness ran the model itself\">{VERIFIED_MARK}</span>"
                )
            } else {
                String::new()
            };
            let desc = r
                .model
                .as_deref()
                .map(|m| format!("<small class=\"model\">{}</small>", esc(m)))
                .into_iter()
                .chain(
                    r.description
                        .as_deref()
                        .map(|d| format!("<small>{}</small>", esc(d))),
                )
                .collect::<String>();
            let _ = write!(
                s,
                "<tr{class}><td class=\"sys\" data-v=\"{0}\"><bdi>{0}</bdi>{mark}{desc}</td>",
                esc(&r.shown_name())
            );
            for split in &b.splits {
                match r.cells.get(split) {
                    Some(c) => {
                        for (i, v) in c.scores.iter().enumerate() {
                            let (cls, sym) = match c.sig[i] {
                                Sig::Better => ("better", "▲"),
                                Sig::Worse => ("worse", "▼"),
                                _ => ("", ""),
                            };
                            let mut title = format!("entry {} · dataset {}", c.entry, short(&c.hash));
                            if let Some(p) = c.p_holm[i] {
                                let _ = write!(title, " · p (Holm) = {p:.4}");
                            }
                            let stale = if c.stale {
                                "<span class=\"stale\" title=\"other dataset version\">†</span>"
                            } else {
                                ""
                            };
                            let _ = write!(
                                s,
                                "<td class=\"num\" data-v=\"{}\" title=\"{}\">{}<span class=\"{cls}\">{sym}</span>{stale}</td>",
                                v.map_or(String::new(), |v| format!("{v:.6}")),
                                esc(&title),
                                pct(*v)
                            );
                        }
                    }
                    None => {
                        for _ in &b.measures {
                            s.push_str("<td class=\"num\" data-v=\"\">—</td>");
                        }
                    }
                }
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table>\n");
        for r in references().iter().filter(|r| r.applies_to(b)) {
            beside_html(&mut s, r, b);
        }
        for split in &b.splits {
            let _ = writeln!(
                s,
                "<figure><img src=\"plots/{2}.svg\" alt=\"{0} {1}\"><figcaption>{0} · {1}</figcaption></figure>",
                esc(&b.name),
                esc(split),
                esc(&url_part(&format!("{}-{split}", b.name)))
            );
        }
    }
    let _ = write!(s, "<script>{SCRIPT}</script>\n</body></html>\n");
    s
}

/// What [`render_site`] wrote.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// `DATA/leaderboard/index.md`.
    pub markdown: PathBuf,
    /// `DATA/leaderboard/site/index.html`.
    pub html: PathBuf,
    /// `DATA/leaderboard/site/plots/*.svg`.
    pub plots: Vec<PathBuf>,
    /// The tables.
    pub boards: Vec<DatasetBoard>,
    /// Entries skipped (newer schema, or dataset/split names that are not names).
    pub skipped: Vec<String>,
    /// Entries left out because they failed their integrity check
    /// ([`crate::entry::check_integrity`]): `PATH: why`.
    pub tampered: Vec<String>,
}

/// How to render the leaderboard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Show verified entries only (and the baseline's, for comparison).
    pub verified_only: bool,
}

/// Reads every entry under `DATA/leaderboard/entries`, and writes `index.md`, `site/index.html` and
/// `site/plots/<dataset>-<split>.svg` atomically.
pub fn render_site(data: &Path) -> Result<Rendered> {
    render_site_with(data, &RenderOptions::default())
}

/// [`render_site`] with `options`. Entries that fail their integrity check are left out and listed
/// in [`Rendered::tampered`].
pub fn render_site_with(data: &Path, options: &RenderOptions) -> Result<Rendered> {
    let set = read_entries(&entries_dir(data))?;
    let (mut entries, mut skipped) = (set.entries, set.skipped);
    if options.verified_only {
        entries.retain(|e| e.provenance.is_verified() || is_baseline(e));
    }
    // Dataset and split names become file names (`site/plots/<dataset>-<split>.svg`): an entry whose
    // names are paths (written before names were checked) is left out, never followed.
    entries.retain(|e| {
        let names_ok = lexbench_core::check_name("dataset name", &e.dataset.name).is_ok()
            && lexbench_core::check_name("split name", &e.dataset.split).is_ok();
        if !names_ok {
            skipped.push(format!(
                "{}: dataset {:?} / split {:?} is not a name",
                e.id, e.dataset.name, e.dataset.split
            ));
        }
        names_ok
    });
    let boards = build(&entries, |name| current_hash(data, name));
    let dir = leaderboard_dir(data);
    let md_path = dir.join("index.md");
    let html_path = dir.join("site").join("index.html");
    let mut plots = Vec::new();
    for b in &boards {
        for split in &b.splits {
            let path = dir
                .join("site")
                .join("plots")
                .join(format!("{}-{split}.svg", b.name));
            plot_split(b, split, &path)?;
            plots.push(path);
        }
    }
    let md = markdown(&boards, options);
    lexbench_core::io::write_atomic(&md_path, |w| std::io::Write::write_all(w, md.as_bytes()))?;
    let page = html(&boards, options);
    lexbench_core::io::write_atomic(&html_path, |w| std::io::Write::write_all(w, page.as_bytes()))?;
    Ok(Rendered {
        markdown: md_path,
        html: html_path,
        plots,
        boards,
        skipped,
        tampered: set.tampered,
    })
}

/// The "init / description" cell of a row beside a paper's table: the model's checkpoint and
/// architecture when recorded, then the card's description; each escaped with `escape`.
fn beside_desc(row: &crate::board::Row, escape: impl Fn(&str) -> String) -> String {
    [row.model.as_deref(), row.description.as_deref()]
        .into_iter()
        .flatten()
        .map(escape)
        .collect::<Vec<_>>()
        .join("; ")
}
